/**
 * Policy at the proxy (issue 17): what the middleware pipeline costs a real workload. Three
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
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { freePort } from '../test/helpers/net.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const ECHO = join(here, 'fixtures/echo-server.mjs');
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const CALLS_C1 = Number(process.env['BENCH_CALLS_C1'] ?? 2000);
const CALLS_C32 = Number(process.env['BENCH_CALLS'] ?? 8000);
const WARMUP = Number(process.env['BENCH_WARMUP'] ?? 1000);

const log = (msg: string): void => {
  process.stderr.write(`[policy.bench] ${msg}\n`);
};

const POLICIES = [
  'permit(principal, action == Action::"call_tool", resource == Tool::"echo");',
  ...[1, 2, 3, 4, 5].map(
    (i) => `permit(principal, action == Action::"call_tool", resource == Tool::"tool_${i}");`,
  ),
  'forbid(principal, action == Action::"call_tool", resource) when { resource has arg_secret };',
  'permit(principal in THVGroup::"admins", action, resource);',
  'forbid(principal == Client::"mallory", action, resource);',
  'permit(principal, action == Action::"get_prompt", resource);',
];

const INIT_BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
});

/** A tiny validating-webhook receiver in its own process (the bench process is the client). */
const RECEIVER = `
const http = require('node:http');
http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const uid = JSON.parse(Buffer.concat(chunks).toString()).uid;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ version: 'v0.1.0', uid, allowed: true }));
  });
}).listen(Number(process.argv[1]), '127.0.0.1', () => console.log('ready'));
`;

interface Workload {
  name: string;
  port: number;
}

function cli(
  env: NodeJS.ProcessEnv,
  args: string[],
): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [join(root, 'dist/skep.mjs'), ...args], { env, encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

async function startWorkload(
  env: NodeJS.ProcessEnv,
  dir: string,
  name: string,
  extra: Record<string, unknown>,
): Promise<Workload> {
  const file = join(dir, `${name}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      name,
      image: `cmd://${process.execPath}`,
      cmd_args: [ECHO],
      transport: 'stdio',
      ...extra,
    }),
  );
  const run = cli(env, ['run', '--from-config', file, '--json']);
  if (run.status !== 0) throw new Error(`skep run ${name} failed: ${run.stderr}`);
  const port = (JSON.parse(run.stdout) as { port: number }).port;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const list = JSON.parse(cli(env, ['list', '--json']).stdout) as {
      workloads: { name: string; status: string }[];
    };
    if (list.workloads.find((w) => w.name === name)?.status === 'running') break;
    if (Date.now() > deadline) throw new Error(`${name} did not become running`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { name, port };
}

/**
 * Opens a session on the workload and returns a function making one tools/call (with a
 * different message each time when `fresh`).
 */
async function session(pool: Pool, fresh: boolean): Promise<() => Promise<void>> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  const init = await pool.request({ path: '/mcp', method: 'POST', headers, body: INIT_BODY });
  await init.body.text();
  const sid = init.headers['mcp-session-id'];
  if (typeof sid !== 'string') throw new Error(`no session id (HTTP ${init.statusCode})`);
  headers['mcp-session-id'] = sid;
  headers['mcp-protocol-version'] = '2025-06-18';
  const note = await pool.request({
    path: '/mcp',
    method: 'POST',
    headers,
    body: '{"jsonrpc":"2.0","method":"notifications/initialized"}',
  });
  await note.body.text();
  let id = 1;
  const prefix = Math.random().toString(36).slice(2, 8);
  return async () => {
    const n = id++;
    const message = fresh ? `hello-${prefix}-${n}` : 'hello';
    const res = await pool.request({
      path: '/mcp',
      method: 'POST',
      headers,
      body: `{"jsonrpc":"2.0","id":${n},"method":"tools/call","params":{"name":"echo","arguments":{"message":"${message}"}}}`,
    });
    const text = await res.body.text();
    if (res.statusCode !== 200 || !text.includes('hello'))
      throw new Error(`HTTP ${res.statusCode}: ${text.slice(0, 200)}`);
  };
}

interface Phase {
  p50_ms: number;
  p99_ms: number;
  calls_per_s: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function phase(calls: Array<() => Promise<void>>, total: number): Promise<Phase> {
  const latencies: number[] = [];
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    calls.map(async (call) => {
      while (next < total) {
        next++;
        const t0 = process.hrtime.bigint();
        await call();
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  latencies.sort((a, b) => a - b);
  return {
    p50_ms: round(percentile(latencies, 50), 4),
    p99_ms: round(percentile(latencies, 99), 4),
    calls_per_s: Math.round(total / seconds),
  };
}

const round = (n: number, digits: number): number => Number(n.toFixed(digits));
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
};

async function main(): Promise<void> {
  log('bundling the CLI');
  const built = spawnSync(process.execPath, ['scripts/bundle.mjs'], { cwd: root, stdio: 'inherit' });
  if (built.status !== 0) throw new Error('bundling the CLI failed');
  const home = await mkdtemp(join(tmpdir(), 'skep-bench-policy-'));
  const env = { ...process.env, SKEP_HOME: home, SKEP_LOG_LEVEL: 'silent' };
  const receiverPort = await freePort();
  const receiver: ChildProcess = spawn(process.execPath, ['-e', RECEIVER, String(receiverPort)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const names: string[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      receiver.stdout?.once('data', () => resolve());
      receiver.once('exit', (code) => reject(new Error(`webhook receiver exited ${code}`)));
    });
    const authz = { authz_config: { version: '1.0', type: 'cedarv1', cedar: { policies: POLICIES } } };
    const auditFile = join(home, 'audit.log');
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
        validating_webhooks: [
          {
            name: 'bench',
            url: `http://127.0.0.1:${receiverPort}/validate`,
            timeout: '5s',
            failure_policy: 'fail',
            tls_config: { insecure_skip_verify: true },
          },
        ],
      },
      'authz-fresh': {
        authz_config: { version: '1.0', type: 'cedarv1', cedar: { policies: freshPolicies } },
      },
    };
    const targets: Array<{
      label: string;
      c1: Array<() => Promise<void>>;
      c32: Array<() => Promise<void>>;
      pool: Pool;
    }> = [];
    for (const [label, extra] of Object.entries(configs)) {
      log(`starting workload ${label}`);
      const w = await startWorkload(env, home, `bench-${label}`, extra);
      names.push(w.name);
      const pool = new Pool(`http://127.0.0.1:${w.port}`, { connections: 64, keepAliveTimeout: 60_000 });
      const fresh = label === 'authz-fresh';
      const c32 = await Promise.all(Array.from({ length: 32 }, () => session(pool, fresh)));
      targets.push({ label, pool, c1: [c32[0] as () => Promise<void>], c32 });
      await phase(c32, WARMUP);
    }
    const rounds: Record<string, { c1: Phase[]; c32: Phase[] }> = {};
    for (let r = 0; r < ROUNDS; r++) {
      for (const t of targets) {
        log(`round ${r + 1}/${ROUNDS}: ${t.label}`);
        const entry = (rounds[t.label] ??= { c1: [], c32: [] });
        entry.c1.push(await phase(t.c1, CALLS_C1));
        entry.c32.push(await phase(t.c32, CALLS_C32));
      }
    }
    const summary: Record<string, Record<string, number>> = {};
    for (const [label, r] of Object.entries(rounds)) {
      summary[label] = {
        c1_p50_ms: median(r.c1.map((p) => p.p50_ms)),
        c1_p99_ms: median(r.c1.map((p) => p.p99_ms)),
        c1_calls_per_s: median(r.c1.map((p) => p.calls_per_s)),
        c32_p50_ms: median(r.c32.map((p) => p.p50_ms)),
        c32_p99_ms: median(r.c32.map((p) => p.p99_ms)),
        c32_calls_per_s: median(r.c32.map((p) => p.calls_per_s)),
      };
    }
    for (const t of targets) await t.pool.close();
    const none = summary['none'] as Record<string, number>;
    const versus = (label: string) => {
      const s = summary[label] as Record<string, number>;
      return {
        added_c1_p50_ms: round((s['c1_p50_ms'] ?? 0) - (none['c1_p50_ms'] ?? 0), 4),
        c32_throughput_kept: round((s['c32_calls_per_s'] ?? 0) / (none['c32_calls_per_s'] ?? 1), 3),
      };
    };
    const authzVs = versus('authz');
    const fullVs = versus('full');
    const freshVs = versus('authz-fresh');
    const auditLines = readFileSync(auditFile, 'utf8')
      .split('\n')
      .filter((l) => l !== '').length;
    process.stdout.write(
      `${JSON.stringify(
        {
          setup: {
            rounds: ROUNDS,
            calls_c1: CALLS_C1,
            calls_c32: CALLS_C32,
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
    for (const name of names) cli(env, ['rm', name]);
    receiver.kill();
    await rm(home, { recursive: true, force: true });
  }
}

await main();
