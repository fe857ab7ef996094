/**
 * The MCP conformance suite (@modelcontextprotocol/conformance 0.1.13, server scenarios) run
 * twice against the same fixture server: served directly by the SDK's streamable-HTTP
 * transport, and as ONE stdio child behind Skep's proxy (every scenario, sampling and
 * elicitation included, shares that child). Whatever passes directly must pass through the
 * proxy, and the DNS-rebinding scenario must pass through the proxy.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { failedChecks, runConformanceSuite } from '../../helpers/conformance.js';
import { freePort } from '../../helpers/net.js';
import { FIXTURE_SERVER, proxyFor, spawnFixture, spawnServer } from './helpers.js';

async function startDirect(t: TestContext): Promise<string> {
  const port = await freePort();
  const child = spawnServer(t, ['--import', 'tsx', FIXTURE_SERVER, 'http', String(port)]);
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    child.stdout.on('data', (c: Buffer) => {
      seen += c.toString();
      if (seen.includes('listening')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`fixture exited ${code}`)));
  });
  return `http://127.0.0.1:${port}/mcp`;
}

test(
  'conformance: every scenario that passes against the server directly passes through the proxy (one shared stdio child)',
  {
    timeout: 600_000,
  },
  async (t) => {
    const direct = await runConformanceSuite(t, await startDirect(t));
    const proxy = await proxyFor(t, spawnFixture(t));
    const proxied = await runConformanceSuite(t, `${proxy.url}/mcp`);

    const regressions: string[] = [];
    for (const [scenario, checks] of direct) {
      if (failedChecks(checks).length > 0) continue; // not passing directly: no claim either way
      const through = proxied.get(scenario);
      if (through === undefined) {
        regressions.push(`${scenario}: did not run through the proxy`);
        continue;
      }
      for (const c of failedChecks(through))
        regressions.push(`${scenario}/${c.id}: ${c.errorMessage ?? 'failed'}`);
    }
    assert.deepEqual(regressions, [], 'no scenario regresses through the proxy');

    for (const scenario of [
      'tools-call-sampling',
      'tools-call-elicitation',
      'tools-call-with-progress',
      'tools-call-with-logging',
      'resources-subscribe',
    ]) {
      const checks = proxied.get(scenario);
      assert.ok(
        checks !== undefined && checks.length > 0 && failedChecks(checks).length === 0,
        `${scenario} passes through the proxy`,
      );
    }
    const rebinding = proxied.get('dns-rebinding-protection');
    assert.ok(
      rebinding?.some((c) => c.status === 'SUCCESS'),
      'the DNS-rebinding scenario ran',
    );
    assert.deepEqual(
      failedChecks(rebinding ?? []),
      [],
      'the DNS-rebinding scenario passes through the proxy',
    );
  },
);
