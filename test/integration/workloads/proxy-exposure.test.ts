/**
 * Who may reach a workload's proxy: `allowed_origins` holds exact
 * origins (400 naming a bad one, at create, update and import; kept by export) and reaches the
 * proxy through the runner; a `host` beyond loopback, wildcards included, needs inbound
 * authentication (400 at create, update and import; a record written before the rule is
 * refused by the runner before it binds). The manager runs with a runner spawner that only
 * records an impossible pid; the runner itself runs in this process when a test needs it.
 */
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { isSkepError } from '../../../src/shared/index.js';
import { WorkloadManager } from '../../../src/workloads/index.js';
import { inProcessManager, runInProcess, waitFor, workloadEndpoint } from './helpers.js';

const ECHO = join(dirname(fileURLToPath(import.meta.url)), '../../../bench/fixtures/echo-server.mjs');
const echo = (name: string) => ({ name, image: `cmd://${process.execPath}`, cmd_arguments: [ECHO] });

/** Asserts a 400 `invalid_config` whose message matches. */
async function badRequest(action: Promise<unknown>, message: RegExp, what: string): Promise<void> {
  await assert.rejects(
    action,
    (err: unknown) => {
      assert.ok(isSkepError(err), `${what}: a SkepError`);
      assert.equal(err.code, 'invalid_config', what);
      assert.equal(err.status, 400, what);
      assert.match(err.message, message, what);
      return true;
    },
    what,
  );
}

const BAD_ORIGINS = [
  '*',
  'https://*.example.com',
  'null',
  'example.com',
  'ftp://example.com',
  'https://example.com/app',
  'https://example.com/',
  'https://example.com?x=1',
  'https://user@example.com',
];

test('allowed_origins must be exact origins — 400 naming the value at create, update and import', async (t) => {
  const { manager } = inProcessManager(t);
  for (const bad of BAD_ORIGINS) {
    await badRequest(
      manager.create({ ...echo('w'), allowed_origins: ['https://ok.example', bad] }),
      new RegExp(`^allowed_origins: '${bad.replace(/[.*?/]/g, '\\$&')}' `),
      `create ${bad}`,
    );
    assert.equal(manager.rows.get('w'), undefined, `${bad}: nothing was written`);
  }
  await badRequest(
    manager.create({ ...echo('w'), allowed_origins: ['https://example.com/'] }),
    /write 'https:\/\/example\.com'/,
    'a trailing slash gets the origin to write',
  );

  const good = ['https://app.example.com', 'http://localhost:5173', 'http://[::1]:8080'];
  await manager.create({ ...echo('w'), allowed_origins: good });
  assert.deepEqual(manager.exportConfig('w').allowed_origins, good, 'export keeps them');

  await badRequest(manager.update('w', { allowed_origins: ['*'] }), /allowed_origins: '\*'/, 'update');
  assert.deepEqual(manager.exportConfig('w').allowed_origins, good, 'a refused update changed nothing');
  await manager.update('w', { allowed_origins: ['https://other.example'] });
  assert.deepEqual(manager.exportConfig('w').allowed_origins, ['https://other.example']);
  await manager.update('w', { env_vars: { A: '1' } });
  assert.deepEqual(manager.exportConfig('w').allowed_origins, ['https://other.example'], 'merge keeps them');
  await manager.update('w', { allowed_origins: [] });
  assert.equal(manager.exportConfig('w').allowed_origins, undefined, 'an empty list removes them');

  // Import (`skep run --from-config`): the field travels with the run configuration.
  await manager.update('w', { allowed_origins: good });
  const exported = manager.exportConfig('w');
  await manager.createFromConfig(exported, { name: 'copy' });
  assert.deepEqual(manager.exportConfig('copy').allowed_origins, good);
  await badRequest(
    manager.createFromConfig({ ...exported, allowed_origins: ['https://*.example.com'] }, { name: 'copy2' }),
    /allowed_origins: 'https:\/\/\*\.example\.com' is a pattern/,
    'import',
  );
  assert.equal(manager.rows.get('copy2'), undefined);
});

test('a host beyond loopback (wildcards too) needs inbound auth — 400 at create, update and import', async (t) => {
  const { manager } = inProcessManager(t);
  for (const host of ['0.0.0.0', '::', '192.0.2.10', 'mcp.example.com']) {
    await badRequest(
      manager.create({ ...echo('exposed'), host }),
      /^host '.*' (listens on every network interface|is not a loopback address), and the workload has no inbound authentication: .*Use host 127\.0\.0\.1 .*oidc.*embedded_auth_server_config/,
      `create ${host}`,
    );
    assert.equal(manager.rows.get('exposed'), undefined, `${host}: nothing was written`);
  }
  // An oidc block that names no verifier authenticates nothing.
  await badRequest(
    manager.create({ ...echo('exposed'), host: '0.0.0.0', oidc: { audience: 'x' } }),
    /no inbound authentication/,
    'oidc without issuer/jwks/introspection',
  );

  for (const host of ['127.0.0.1', 'localhost', '']) {
    const name = `local-${host === '' ? 'default' : host.replace(/\W/g, '-')}`;
    await manager.create({ ...echo(name), host });
    assert.equal(manager.exportConfig(name).host, host === '' ? '127.0.0.1' : host);
  }

  // With a token required, binding every interface is the user's explicit choice.
  await manager.create({ ...echo('authed'), host: '0.0.0.0', oidc: { issuer: 'https://idp.example' } });
  assert.equal(manager.exportConfig('authed').host, '0.0.0.0');

  await badRequest(manager.update('local-127-0-0-1', { host: '0.0.0.0' }), /listens on every/, 'update');
  assert.equal(manager.exportConfig('local-127-0-0-1').host, '127.0.0.1', 'a refused update changed nothing');

  const exported = manager.exportConfig('authed');
  const { oidc_config: _dropped, ...withoutAuth } = exported;
  await badRequest(
    manager.createFromConfig(withoutAuth, { name: 'imported' }),
    /host '0\.0\.0\.0' listens on every network interface/,
    'import without auth',
  );
  assert.equal(manager.rows.get('imported'), undefined);
  await manager.createFromConfig({ ...exported, host: '' }, { name: 'imported' });
  assert.equal(
    manager.exportConfig('imported').host,
    '127.0.0.1',
    'an empty host is loopback, not every interface',
  );
});

test('the runner refuses a stored non-loopback host without auth before it binds', async (t) => {
  const { ctx, manager } = inProcessManager(t);
  await manager.create(echo('legacy'));
  // A record from before the rule (or edited by hand): the manager's checks never saw it.
  manager.rows.saveConfig({ ...manager.exportConfig('legacy'), host: '0.0.0.0' });
  // A runner that wrongly binds runs until stopped: stop it, so the test fails instead of hanging.
  const code = await runInProcess(ctx, 'legacy', AbortSignal.timeout(15_000));
  assert.equal(code, 1);
  const row = manager.rows.get('legacy');
  assert.equal(row?.status, 'error');
  assert.match(row?.statusContext ?? '', /host '0\.0\.0\.0' listens on every network interface/);
});

test(
  'allowed_origins reach the proxy through the runner: configured and own origins pass, other loopback ports do not',
  { timeout: 60_000 },
  async (t) => {
    const { ctx, manager } = inProcessManager(t);
    await manager.create({ ...echo('origins'), allowed_origins: ['https://app.example.com'] });
    const controller = new AbortController();
    const done = runInProcess(ctx, 'origins', controller.signal);
    try {
      await checkOrigins(manager);
    } finally {
      // Before the store closes (t.after hooks run in registration order, setup's first).
      controller.abort();
      assert.equal(await done, 0);
    }
  },
);

async function checkOrigins(manager: WorkloadManager): Promise<void> {
  await waitFor('running', () => (manager.rows.get('origins')?.status === 'running' ? true : undefined));
  const port = manager.rows.get('origins')?.port as number;
  const ping = (origin: string) =>
    fetch(workloadEndpoint(manager, 'origins'), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        origin,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 't', version: '1' },
        },
      }),
    });
  const statuses: Record<string, number> = {};
  for (const origin of [
    'https://app.example.com',
    `http://127.0.0.1:${port}`,
    `http://127.0.0.1:${port + 1}`,
    'http://localhost:5173',
    'https://app.example.com:444',
    'null',
  ]) {
    const res = await ping(origin);
    statuses[origin] = res.status;
    await res.text();
  }
  assert.deepEqual(statuses, {
    'https://app.example.com': 200,
    [`http://127.0.0.1:${port}`]: 200,
    [`http://127.0.0.1:${port + 1}`]: 403,
    'http://localhost:5173': 403,
    'https://app.example.com:444': 403,
    null: 403,
  });
}
