/**
 * Registry upgrades of workloads (reference: GET /workloads/upgrade-check,
 * GET /workloads/{name}/upgrade-check, POST /workloads/{name}/upgrade): the default registry is
 * a file the test rewrites, as a catalog maintainer would publish a new version.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli } from '../../helpers/cli.js';
import { workloadApp } from './helpers.js';

const ECHO = 'io.example/echo';

function catalog(version: string, envVars: unknown[], name = ECHO) {
  return {
    version: '1.0.0',
    meta: { last_updated: '2026-11-01T00:00:00Z' },
    data: {
      servers: [
        {
          name,
          description: 'An echo server for upgrade tests',
          version,
          packages: [
            {
              registryType: 'npm',
              identifier: '@example/echo-mcp',
              version,
              transport: { type: 'stdio' },
              environmentVariables: envVars,
            },
          ],
        },
      ],
    },
  };
}

test('upgrade-check reports a newer registry image and the variables it needs; upgrade applies it, keeping the configuration', async (t) => {
  const { app, ctx, home } = await workloadApp(t);
  const file = join(home.dir, 'catalog.json');
  const logLevel = { name: 'LOG_LEVEL', description: 'verbosity', isRequired: false, default: 'info' };
  writeFileSync(file, JSON.stringify(catalog('1.0.0', [logLevel])));
  await ctx.registry.configure('default', { local_path: file });
  await ctx.secrets.setup({ provider_type: 'encrypted', password: 'upgrade-test-password' });
  await ctx.secrets.create('echo-token', 'token-value-never-shown');

  const created = await app.inject({
    method: 'POST',
    url: '/api/v1beta/workloads',
    payload: { name: 'echo', registry: 'default', server: ECHO, env_vars: { MINE: 'kept' } },
  });
  assert.equal(created.statusCode, 201, created.body);
  const plain = await app.inject({
    method: 'POST',
    url: '/api/v1beta/workloads',
    payload: {
      name: 'plain',
      image: `cmd://${process.execPath}`,
      cmd_arguments: ['-e', 'setInterval(()=>{},1e6)'],
    },
  });
  assert.equal(plain.statusCode, 201, plain.body);

  const check = async (name: string) => {
    const res = await app.inject({ method: 'GET', url: `/api/v1beta/workloads/${name}/upgrade-check` });
    assert.equal(res.statusCode, 200, res.body);
    return res.json<{ result: Record<string, unknown> }>().result;
  };
  assert.deepEqual(await check('echo'), {
    workload_name: 'echo',
    status: 'up-to-date',
    current_image: 'npx://@example/echo-mcp@1.0.0',
    candidate_image: 'npx://@example/echo-mcp@1.0.0',
    registry_server: ECHO,
  });
  assert.deepEqual(await check('plain'), {
    workload_name: 'plain',
    status: 'not-registry-sourced',
    current_image: `cmd://${process.execPath}`,
  });

  // The catalog publishes 1.1.0, which needs an API URL and a token.
  writeFileSync(
    file,
    JSON.stringify(
      catalog('1.1.0', [
        logLevel,
        { name: 'API_URL', description: 'where the API is', isRequired: true },
        { name: 'API_TOKEN', description: 'token', isRequired: true, isSecret: true, default: 'leak-me-not' },
      ]),
    ),
  );
  const available = await check('echo');
  assert.equal(available['status'], 'upgrade-available');
  assert.equal(available['candidate_image'], 'npx://@example/echo-mcp@1.1.0');
  assert.deepEqual(available['env_var_drift'], {
    added: [
      { name: 'API_URL', description: 'where the API is', required: true },
      { name: 'API_TOKEN', description: 'token', required: true, secret: true },
    ],
    removed: [],
  });
  assert.equal(available['config_drift'], undefined);

  const all = await app.inject({ method: 'GET', url: '/api/v1beta/workloads/upgrade-check?all=true' });
  assert.equal(all.statusCode, 200);
  assert.doesNotMatch(all.body, /leak-me-not/, 'a secret variable’s default is never shown');
  assert.deepEqual(
    all
      .json<{ results: { workload_name: string; status: string }[] }>()
      .results.map((r) => [r.workload_name, r.status]),
    [
      ['echo', 'upgrade-available'],
      ['plain', 'not-registry-sourced'],
    ],
  );
  const badGroup = await app.inject({ method: 'GET', url: '/api/v1beta/workloads/upgrade-check?group=nope' });
  assert.equal(badGroup.statusCode, 404);

  // Required variables still missing → 422 naming them; nothing changes.
  const refused = await app.inject({
    method: 'POST',
    url: '/api/v1beta/workloads/echo/upgrade',
    payload: { env: { API_URL: 'https://api.example' } },
  });
  assert.equal(refused.statusCode, 422, refused.body);
  assert.match(refused.json().message, /requires API_TOKEN: pass it in env or secrets/);
  assert.equal(ctx.workloads.exportConfig('echo').image, 'npx://@example/echo-mcp@1.0.0');

  const badRef = await app.inject({
    method: 'POST',
    url: '/api/v1beta/workloads/echo/upgrade',
    payload: { secrets: ['echo-token'] },
  });
  assert.equal(badRef.statusCode, 400);
  assert.match(badRef.json().message, /<name>,target=<ENV_VAR>/);

  const upgraded = await app.inject({
    method: 'POST',
    url: '/api/v1beta/workloads/echo/upgrade',
    payload: { env: { API_URL: 'https://api.example' }, secrets: ['echo-token,target=API_TOKEN'] },
  });
  assert.equal(upgraded.statusCode, 200, upgraded.body);
  assert.equal(upgraded.json().result.status, 'up-to-date');
  assert.equal(upgraded.json().result.current_image, 'npx://@example/echo-mcp@1.1.0');
  const after = ctx.workloads.exportConfig('echo');
  assert.equal(after.image, 'npx://@example/echo-mcp@1.1.0');
  assert.deepEqual(after.env_vars, { LOG_LEVEL: 'info', MINE: 'kept', API_URL: 'https://api.example' });
  assert.deepEqual(after.secrets, ['echo-token,target=API_TOKEN']);
  assert.equal(after.registry_server_name, ECHO);
  assert.doesNotMatch(JSON.stringify(after), /token-value-never-shown/);

  // Nothing to do: the check comes back unchanged; a workload not from a registry too.
  const noop = await app.inject({ method: 'POST', url: '/api/v1beta/workloads/echo/upgrade' });
  assert.equal(noop.statusCode, 200, 'a POST without a body is an empty request');
  assert.equal(noop.json().result.status, 'up-to-date');
  const notSourced = await app.inject({
    method: 'POST',
    url: '/api/v1beta/workloads/plain/upgrade',
    payload: {},
  });
  assert.equal(notSourced.json().result.status, 'not-registry-sourced');

  // The entry leaves the catalog (another one takes its place).
  writeFileSync(file, JSON.stringify(catalog('2.0.0', [], 'io.example/other')));
  assert.equal((await check('echo'))['status'], 'server-not-found');

  // The same through the CLI (its own process, same home).
  const listed = runCli(['upgrade-check', '--all', '--json'], home.env);
  assert.equal(listed.status, 0, listed.stderr);
  assert.deepEqual(
    (JSON.parse(listed.stdout) as { results: { status: string }[] }).results.map((r) => r.status),
    ['server-not-found', 'not-registry-sourced'],
  );
  const table = runCli(['upgrade-check'], home.env);
  assert.match(table.stdout, /^NAME\s+STATUS\s+CURRENT/m);
  const cliUpgrade = runCli(['upgrade', 'echo'], home.env);
  assert.equal(cliUpgrade.status, 0, cliUpgrade.stderr);
  assert.equal(cliUpgrade.stdout, 'workload echo: server-not-found (npx://@example/echo-mcp@1.1.0)\n');

  const missing = await app.inject({ method: 'GET', url: '/api/v1beta/workloads/ghost/upgrade-check' });
  assert.equal(missing.statusCode, 404);
  const invalid = await app.inject({
    method: 'POST',
    url: '/api/v1beta/workloads/Bad_Name!/upgrade',
    payload: {},
  });
  assert.equal(invalid.statusCode, 400);
});
