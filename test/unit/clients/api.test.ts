/**
 * The clients routes through the real Fastify app (`inject`), on a temporary SKEP_HOME and a
 * temporary user HOME: discovery order and detection, registration defaults, validation before
 * any write (as in ToolHive: unknown client → 400, unknown group → 404, empty names → 400).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { createContext } from '../../../src/control/app/index.js';
import { buildTestApp } from '../../helpers/api.js';
import { CLIENT_TYPES } from '../../../src/clients/index.js';
import { tempHome } from '../../helpers/home.js';

async function api(t: import('node:test').TestContext) {
  const skep = tempHome(t, 'skep-clients-api-');
  const home = join(skep.dir, 'user-home');
  mkdirSync(home, { recursive: true });
  const ctx = createContext(skep.config, { env: { HOME: home } });
  const app = await buildTestApp(ctx);
  t.after(async () => {
    await app.close();
    await ctx.close();
  });
  return { app, ctx, home };
}

test('discovery lists all 25 clients in the fixed order with detection', async (t) => {
  const { app, home } = await api(t);
  mkdirSync(join(home, '.cursor'));
  writeFileSync(join(home, '.claude.json'), '{}');
  mkdirSync(join(home, '.config', 'Code', 'User'), { recursive: true });
  const res = await app.inject({ method: 'GET', url: '/api/v1beta/discovery/clients' });
  assert.equal(res.statusCode, 200);
  const { clients } = res.json<{
    clients: { client_type: string; installed: boolean; registered: boolean; supports_skills: boolean }[];
  }>();
  assert.deepEqual(
    clients.map((c) => c.client_type),
    [...CLIENT_TYPES],
  );
  assert.equal(clients.length, 25);
  const installed = clients.filter((c) => c.installed).map((c) => c.client_type);
  assert.deepEqual(installed, ['cursor', 'vscode', 'claude-code']);
  assert.ok(clients.every((c) => c.registered === false));
  const noSkills = clients.filter((c) => !c.supports_skills).map((c) => c.client_type);
  assert.deepEqual(noSkills.sort(), [
    'continue',
    'copilot-cli',
    'lm-studio',
    'vscode-server',
    'windsurf-jetbrains',
    'zed',
  ]);
});

test('register defaults to the default group, shows up in list, discovery and the group', async (t) => {
  const { app } = await api(t);
  const res = await app.inject({ method: 'POST', url: '/api/v1beta/clients', payload: { name: 'cursor' } });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), { name: 'cursor', groups: ['default'] });
  assert.deepEqual((await app.inject({ url: '/api/v1beta/clients' })).json(), [
    { name: 'cursor', groups: ['default'] },
  ]);
  const status = (await app.inject({ url: '/api/v1beta/discovery/clients' })).json<{
    clients: { client_type: string; registered: boolean }[];
  }>();
  assert.equal(status.clients.find((c) => c.client_type === 'cursor')?.registered, true);
  const group = (await app.inject({ url: '/api/v1beta/groups/default' })).json<{
    registered_clients: string[];
  }>();
  assert.deepEqual(group.registered_clients, ['cursor']);
});

test('bulk register returns one registration per name, in order; unregister per group and in bulk', async (t) => {
  const { app } = await api(t);
  await app.inject({ method: 'POST', url: '/api/v1beta/groups', payload: { name: 'team' } });
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1beta/clients/register',
    payload: { names: ['vscode', 'codex'], groups: ['team', 'default'] },
  });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), [
    { name: 'vscode', groups: ['default', 'team'] },
    { name: 'codex', groups: ['default', 'team'] },
  ]);
  let del = await app.inject({ method: 'DELETE', url: '/api/v1beta/clients/vscode/groups/team' });
  assert.equal(del.statusCode, 204);
  assert.deepEqual((await app.inject({ url: '/api/v1beta/clients' })).json(), [
    { name: 'codex', groups: ['default', 'team'] },
    { name: 'vscode', groups: ['default'] },
  ]);
  del = await app.inject({ method: 'DELETE', url: '/api/v1beta/clients/vscode/groups/nope' });
  assert.equal(del.statusCode, 404);
  assert.equal(del.json().code, 'group_not_found');
  del = await app.inject({
    method: 'POST',
    url: '/api/v1beta/clients/unregister',
    payload: { names: ['codex'], groups: ['team'] },
  });
  assert.equal(del.statusCode, 204);
  del = await app.inject({ method: 'DELETE', url: '/api/v1beta/clients/vscode' });
  assert.equal(del.statusCode, 204);
  assert.deepEqual((await app.inject({ url: '/api/v1beta/clients' })).json(), [
    { name: 'codex', groups: ['default'] },
  ]);
  del = await app.inject({
    method: 'POST',
    url: '/api/v1beta/clients/unregister',
    payload: { names: ['codex'] },
  });
  assert.equal(del.statusCode, 204);
  assert.deepEqual((await app.inject({ url: '/api/v1beta/clients' })).json(), []);
});

test('an unknown client type is 400 and nothing is written, even in a bulk request', async (t) => {
  const { app } = await api(t);
  let res = await app.inject({ method: 'POST', url: '/api/v1beta/clients', payload: { name: 'notepad' } });
  assert.equal(res.statusCode, 400);
  assert.equal(res.json().code, 'client_unknown');
  assert.match(res.json().message, /notepad/);
  res = await app.inject({
    method: 'POST',
    url: '/api/v1beta/clients/register',
    payload: { names: ['cursor', 'notepad'] },
  });
  assert.equal(res.statusCode, 400);
  assert.deepEqual((await app.inject({ url: '/api/v1beta/clients' })).json(), []);
  res = await app.inject({ method: 'DELETE', url: '/api/v1beta/clients/notepad' });
  assert.equal(res.statusCode, 400);
  assert.equal(res.json().code, 'client_unknown');
});

test('an unknown group is 404, a malformed one 400, and nothing is registered', async (t) => {
  const { app } = await api(t);
  let res = await app.inject({
    method: 'POST',
    url: '/api/v1beta/clients',
    payload: { name: 'cursor', groups: ['default', 'ghost'] },
  });
  assert.equal(res.statusCode, 404);
  assert.equal(res.json().code, 'group_not_found');
  res = await app.inject({
    method: 'POST',
    url: '/api/v1beta/clients',
    payload: { name: 'cursor', groups: ['Bad Name'] },
  });
  assert.equal(res.statusCode, 400);
  assert.deepEqual((await app.inject({ url: '/api/v1beta/clients' })).json(), []);
});

test('empty names is 400 for bulk register and bulk unregister', async (t) => {
  const { app } = await api(t);
  for (const url of ['/api/v1beta/clients/register', '/api/v1beta/clients/unregister']) {
    const res = await app.inject({ method: 'POST', url, payload: { names: [] } });
    assert.equal(res.statusCode, 400, url);
    assert.equal(res.json().code, 'bad_request');
  }
  const res = await app.inject({ method: 'POST', url: '/api/v1beta/clients', payload: {} });
  assert.equal(res.statusCode, 400);
});

test('a client config that does not parse is 409 and is left untouched, nothing registered', async (t) => {
  const { app, ctx } = await api(t);
  const file = ctx.clients.configPath('cursor');
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, '{ "mcpServers": { oops');
  const res = await app.inject({ method: 'POST', url: '/api/v1beta/clients', payload: { name: 'cursor' } });
  assert.equal(res.statusCode, 409);
  assert.equal(res.json().code, 'client_config_invalid');
  assert.equal(readFileSync(file, 'utf8'), '{ "mcpServers": { oops');
  assert.equal(existsSync(`${file}.skep.bak`), false);
  assert.deepEqual((await app.inject({ url: '/api/v1beta/clients' })).json(), []);
});
