/**
 * A server gets only what it is given. Skep's environment holds
 * the secrets password, the API token and cloud credentials; a real server process (the probe
 * fixture) started by the process runtime, and by a detached runner behind the proxy (reached
 * with the official MCP SDK client), must see none of them, but must see PATH, HOME and what
 * its run configuration names.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { ProcessRuntime } from '../../../src/dataplane/runtime/index.js';
import { waitForStatus, workloadHome } from '../workloads/helpers.js';
import { PROBE_SERVER, probeClient, stdioProbe } from './probe.js';

const SKEP_SECRETS = {
  SKEP_SECRETS_PASSWORD: 'master-password-f4',
  SKEP_API_TOKEN: 'api-token-f4',
  AWS_SECRET_ACCESS_KEY: 'aws-secret-f4',
  GITHUB_TOKEN: 'ghp-f4',
};

/** Puts the credentials into this process's environment (what the runtime and runners inherit) for one test. */
function withSkepSecrets(t: TestContext): void {
  const saved = Object.fromEntries(Object.keys(SKEP_SECRETS).map((k) => [k, process.env[k]]));
  Object.assign(process.env, SKEP_SECRETS);
  t.after(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
}

function assertOnlyGiven(env: Record<string, string>): void {
  for (const [name, value] of Object.entries(SKEP_SECRETS)) {
    if (name === 'GITHUB_TOKEN') continue;
    assert.equal(env[name], undefined, `${name} reached the server`);
    assert.ok(!Object.values(env).includes(value), `the value of ${name} reached the server`);
  }
  assert.ok(!Object.keys(env).some((k) => k.startsWith('SKEP_')), 'a SKEP_* variable reached the server');
  assert.ok((env['PATH'] ?? '') !== '', 'PATH is passed');
  assert.ok((env['HOME'] ?? '') !== '', 'HOME is passed');
  assert.equal(env['CONFIGURED'], 'from-run-config');
}

test('the process runtime gives a server the allow-listed environment only', async (t) => {
  withSkepSecrets(t);
  const dir = mkdtempSync(join(tmpdir(), 'skep-env-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const runtime = new ProcessRuntime({ logMaxBytes: 1 << 20, logFiles: 1 });
  const handle = await runtime.start({
    name: 'env',
    image: `cmd://${process.execPath}`,
    args: [PROBE_SERVER],
    env: { CONFIGURED: 'from-run-config' },
    transport: 'stdio',
    logFile: join(dir, 'env.log'),
  });
  t.after(() => handle.stop());
  assert.ok(handle.stdio);
  const env = JSON.parse(await stdioProbe(handle.stdio).call('env')) as Record<string, string>;
  assertOnlyGiven(env);
  assert.equal(env['GITHUB_TOKEN'], undefined, 'GITHUB_TOKEN of Skep’s environment reached the server');
  assert.equal(env['PATH'], process.env['PATH']);
});

test(
  'through a detached runner and the proxy (MCP SDK client), Skep’s credentials never reach the server; the run configuration’s do',
  { timeout: 120_000 },
  async (t) => {
    withSkepSecrets(t);
    const { ctx } = workloadHome(t);
    await ctx.workloads.create({
      name: 'env-probe',
      image: `cmd://${process.execPath}`,
      cmd_arguments: [PROBE_SERVER],
      // The run configuration may hand a server a credential on purpose.
      env_vars: { CONFIGURED: 'from-run-config', GITHUB_TOKEN: 'given-by-config' },
    });
    await waitForStatus(ctx, 'env-probe', 'running');
    const client = await probeClient(ctx, 'env-probe');
    t.after(() => client.close());
    const env = JSON.parse(await client.call('env')) as Record<string, string>;
    assertOnlyGiven(env);
    assert.equal(env['GITHUB_TOKEN'], 'given-by-config');
  },
);
