/**
 * Policy at the proxy: what the middleware pipeline costs a real workload. Three
 * workloads started with the built CLI (`skep run --from-config`, detached runners, one stdio
 * echo child each — bench/fixtures/echo-server.mjs), measured side by side in one run:
 *
 *   none        no middleware
 *   authz       Cedar authorization (cedarv1) with 10 policies
 *   full        authorization + audit to a file + one validating webhook on loopback
 *               (a separate receiver process answering `allowed: true`)
 *   authz-fresh authorization with 10 policies, one of which reads the call's argument, and
 *               a different argument on every call: no decision is answered from the
 *               authorizer's cache (decisions are remembered per exact input of the
 *               attributes policies read), so this is the cost of a first-seen decision
 *
 * Each worker opens its own MCP session, then makes sequential `tools/call` requests. The
 * targets are measured in interleaved rounds (none, authz, full, none, ...) so that machine
 * noise lands on all of them alike; the median of the rounds is reported. Targets from the
 * issue: authorization adds ≤ 0.05 ms to p50 at concurrency 1 and keeps ≥ 90 % of the
 * throughput at concurrency 32; the full set keeps ≥ 75 %.
 *
 * Prints one JSON object on stdout; progress goes to stderr.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { authzConfig, POLICIES, startWebhookReceiver } from './lib/middleware.js';
import { measureWorkloads, openBenchHome, SETTINGS, versus } from './lib/workloads.js';

const log = (msg: string): void => {
  process.stderr.write(`[policy.bench] ${msg}\n`);
};

async function main(): Promise<void> {
  const bench = await openBenchHome('policy', log);
  const receiver = await startWebhookReceiver();
  try {
    const authz = authzConfig();
    const auditFile = join(bench.home, 'audit.log');
    const freshPolicies = [
      ...POLICIES.slice(0, 9),
      'forbid(principal, action == Action::"call_tool", resource) when { resource has arg_message && resource.arg_message == "forbidden" };',
    ];
    const configs: Record<string, Record<string, unknown>> = {
      none: {},
      authz,
      full: {
        ...authz,
        audit_config: { logFile: auditFile },
        ...receiver.config,
      },
      'authz-fresh': authzConfig(freshPolicies),
    };
    const { summary } = await measureWorkloads(bench.env, bench.home, configs, {
      log,
      started: bench.started,
      fresh: (label) => label === 'authz-fresh',
    });
    const authzVs = versus(summary, 'authz');
    const fullVs = versus(summary, 'full');
    const freshVs = versus(summary, 'authz-fresh');
    const auditLines = readFileSync(auditFile, 'utf8')
      .split('\n')
      .filter((l) => l !== '').length;
    process.stdout.write(
      `${JSON.stringify(
        {
          setup: {
            rounds: SETTINGS.rounds,
            calls_c1: SETTINGS.callsC1,
            calls_c32: SETTINGS.callsC32,
            policies: POLICIES.length,
            note: 'skep run --from-config: detached runners (dist/runner.mjs), stdio echo child; medians of interleaved rounds',
          },
          results: summary,
          authz_vs_none: { ...authzVs, target_added_c1_p50_ms: 0.05, target_c32_throughput_kept: 0.9 },
          full_vs_none: { ...fullVs, target_c32_throughput_kept: 0.75 },
          authz_fresh_vs_none: {
            ...freshVs,
            note: 'every decision first-seen (no cache hit): what a policy that reads changing arguments costs',
          },
          targets_met: {
            authz_c1_p50: authzVs.added_c1_p50_ms <= 0.05,
            authz_c32_throughput: authzVs.c32_throughput_kept >= 0.9,
            full_c32_throughput: fullVs.c32_throughput_kept >= 0.75,
          },
          audit_lines_written: auditLines,
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    await bench.close();
    receiver.child.kill();
  }
}

await main();
