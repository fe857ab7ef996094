/**
 * The MCP conformance suite (@modelcontextprotocol/conformance 0.1.13, server scenarios) run
 * twice against the same fixture server: served directly by the SDK's streamable-HTTP
 * transport, and as ONE stdio child behind Skep's proxy (every scenario, sampling and
 * elicitation included, shares that child). Whatever passes directly must pass through the
 * proxy, and the DNS-rebinding scenario must pass through the proxy.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { freePort } from '../../helpers/net.js';
import { FIXTURE_SERVER, proxyFor, spawnFixture, spawnServer } from './helpers.js';

const require = createRequire(import.meta.url);
const CONFORMANCE = join(
  dirname(require.resolve('@modelcontextprotocol/conformance/package.json')),
  'dist/index.js',
);

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
}

/** Runs every server scenario against `url`; returns scenario → checks. */
async function runSuite(t: TestContext, url: string): Promise<Map<string, Check[]>> {
  const out = await mkdtemp(join(tmpdir(), 'skep-conformance-'));
  t.after(() => rm(out, { recursive: true, force: true }));
  const child = spawn(process.execPath, [CONFORMANCE, 'server', '--url', url, '-o', out], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout.on('data', (c: Buffer) => {
    log += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    log += c.toString();
  });
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  await new Promise((resolve) => child.once('exit', resolve));
  const results = new Map<string, Check[]>();
  for (const dir of await readdir(out)) {
    const scenario = dir.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT.*$/, '');
    const checks = JSON.parse(await readFile(join(out, dir, 'checks.json'), 'utf8')) as Check[];
    results.set(scenario, checks);
  }
  assert.ok(
    results.size > 20,
    `the suite ran its scenarios (got ${results.size}); output:\n${log.slice(-2000)}`,
  );
  return results;
}

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

const failed = (checks: Check[]): Check[] => checks.filter((c) => c.status === 'FAILURE');

test(
  'conformance: every scenario that passes against the server directly passes through the proxy (one shared stdio child)',
  {
    timeout: 600_000,
  },
  async (t) => {
    const direct = await runSuite(t, await startDirect(t));
    const proxy = await proxyFor(t, spawnFixture(t));
    const proxied = await runSuite(t, `${proxy.url}/mcp`);

    const regressions: string[] = [];
    for (const [scenario, checks] of direct) {
      if (failed(checks).length > 0) continue; // not passing directly: no claim either way
      const through = proxied.get(scenario);
      if (through === undefined) {
        regressions.push(`${scenario}: did not run through the proxy`);
        continue;
      }
      for (const c of failed(through)) regressions.push(`${scenario}/${c.id}: ${c.errorMessage ?? 'failed'}`);
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
        checks !== undefined && checks.length > 0 && failed(checks).length === 0,
        `${scenario} passes through the proxy`,
      );
    }
    const rebinding = proxied.get('dns-rebinding-protection');
    assert.ok(
      rebinding?.some((c) => c.status === 'SUCCESS'),
      'the DNS-rebinding scenario ran',
    );
    assert.deepEqual(failed(rebinding ?? []), [], 'the DNS-rebinding scenario passes through the proxy');
  },
);
