import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { createContext } from '../../../src/control/app/index.js';
import { buildTestApp } from '../../helpers/api.js';
import { tempHome } from '../../helpers/home.js';

const BASE = '/api/v1beta/secrets';

/** The API on a temp home with a controlled environment (no keyring, no inherited SKEP_*). */
async function api(t: TestContext, extraEnv: NodeJS.ProcessEnv = {}) {
  const home = tempHome(t);
  const env = { PATH: '/nonexistent-bin', SKEP_HOME: home.dir, ...extraEnv };
  const ctx = createContext(home.config, { env });
  const app = await buildTestApp(ctx);
  t.after(async () => {
    await app.close();
    await ctx.close();
  });
  const call = async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) => {
    const res = await app.inject({
      method,
      url,
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return {
      status: res.statusCode,
      body: res.body === '' ? undefined : res.json<Record<string, unknown>>(),
    };
  };
  return { call, home };
}

test('every secrets route answers 404 secrets_not_setup with a how-to message before setup', async (t) => {
  const { call } = await api(t);
  const calls = [
    call('GET', `${BASE}/default`),
    call('GET', `${BASE}/default/keys`),
    call('POST', `${BASE}/default/keys`, { key: 'a', value: 'b' }),
    call('PUT', `${BASE}/default/keys/a`, { value: 'b' }),
    call('DELETE', `${BASE}/default/keys/a`),
  ];
  for (const res of await Promise.all(calls)) {
    assert.equal(res.status, 404);
    assert.equal(res.body?.['code'], 'secrets_not_setup');
    assert.match(String(res.body?.['message']), /skep secret setup|POST \/api\/v1beta\/secrets/);
  }
});

test('encrypted provider: setup 201, details, create 201/409, list (no values), update 200/404, delete 204/404', async (t) => {
  const { call } = await api(t);
  const setup = await call('POST', BASE, { provider_type: 'encrypted' });
  assert.equal(setup.status, 201);
  assert.equal(setup.body?.['provider_type'], 'encrypted');
  assert.match(
    String(setup.body?.['message']),
    /^Secrets provider setup successfully; a strong password was generated/,
  );
  const again = await call('POST', BASE, { provider_type: 'encrypted' });
  assert.equal(again.status, 201);
  assert.match(String(again.body?.['message']), /^Secrets provider reconfigured successfully/);

  const details = await call('GET', `${BASE}/default`);
  assert.equal(details.status, 200);
  assert.deepEqual(details.body, {
    name: 'default',
    provider_type: 'encrypted',
    capabilities: { can_read: true, can_write: true, can_delete: true, can_list: true, can_cleanup: true },
  });

  const created = await call('POST', `${BASE}/default/keys`, { key: 'github', value: 'api-test-value-1' });
  assert.equal(created.status, 201);
  assert.deepEqual(created.body, { key: 'github', message: 'Secret created successfully' });
  const dup = await call('POST', `${BASE}/default/keys`, { key: 'github', value: 'other' });
  assert.equal(dup.status, 409);
  assert.equal(dup.body?.['code'], 'secret_exists');

  const list = await call('GET', `${BASE}/default/keys`);
  assert.equal(list.status, 200);
  assert.deepEqual(list.body, { keys: [{ key: 'github' }] });

  const updated = await call('PUT', `${BASE}/default/keys/github`, { value: 'api-test-value-2' });
  assert.equal(updated.status, 200);
  assert.deepEqual(updated.body, { key: 'github', message: 'Secret updated successfully' });
  const missingUpdate = await call('PUT', `${BASE}/default/keys/nope`, { value: 'x' });
  assert.equal(missingUpdate.status, 404);
  assert.equal(missingUpdate.body?.['code'], 'secret_not_found');

  const deleted = await call('DELETE', `${BASE}/default/keys/github`);
  assert.equal(deleted.status, 204);
  assert.equal(deleted.body, undefined);
  // Skep decision: a missing key is 404 (the reference answers 500).
  const missingDelete = await call('DELETE', `${BASE}/default/keys/github`);
  assert.equal(missingDelete.status, 404);
  assert.equal(missingDelete.body?.['code'], 'secret_not_found');
});

test('request validation: 400 for missing fields, empty values, bad names and bad provider types', async (t) => {
  const { call } = await api(t);
  assert.equal((await call('POST', BASE, {})).status, 400);
  const empty = await call('POST', BASE, { provider_type: '' });
  assert.equal(empty.status, 400);
  assert.match(String(empty.body?.['message']), /provider type cannot be empty/);
  const unknown = await call('POST', BASE, { provider_type: 'none' });
  assert.equal(unknown.status, 400);
  assert.match(String(unknown.body?.['message']), /valid types: encrypted, 1password, environment/);
  assert.equal((await call('POST', BASE, { provider_type: 'encrypted' })).status, 201);
  assert.equal((await call('POST', `${BASE}/default/keys`, { key: 'a' })).status, 400);
  assert.equal((await call('POST', `${BASE}/default/keys`, { key: 'a', value: '' })).status, 400);
  assert.equal((await call('POST', `${BASE}/default/keys`, { key: 'a,b', value: 'v' })).status, 400);
  assert.equal((await call('POST', `${BASE}/default/keys`, { key: 'a', value: 5 })).status, 400);
  assert.equal((await call('PUT', `${BASE}/default/keys/a`, {})).status, 400);
  assert.deepEqual((await call('GET', `${BASE}/default/keys`)).body, { keys: [] }, 'nothing was written');
});

test('read-only environment provider: create/update/list/delete → 405', async (t) => {
  const { call } = await api(t);
  assert.equal((await call('POST', BASE, { provider_type: 'environment' })).status, 201);
  const details = await call('GET', `${BASE}/default`);
  assert.equal((details.body?.['capabilities'] as Record<string, boolean> | undefined)?.['can_write'], false);
  for (const res of [
    await call('POST', `${BASE}/default/keys`, { key: 'a', value: 'b' }),
    await call('PUT', `${BASE}/default/keys/a`, { value: 'b' }),
    await call('GET', `${BASE}/default/keys`),
    await call('DELETE', `${BASE}/default/keys/a`),
  ]) {
    assert.equal(res.status, 405);
    assert.equal(res.body?.['code'], 'secrets_read_only');
  }
});

test('wrong password at setup → 400 secrets_locked; a tampered file → 500 secrets_corrupt with a clear message', async (t) => {
  const { call, home } = await api(t);
  assert.equal(
    (await call('POST', BASE, { provider_type: 'encrypted', password: 'first-password' })).status,
    201,
  );
  assert.equal((await call('POST', `${BASE}/default/keys`, { key: 'k', value: 'v-value' })).status, 201);
  const wrong = await call('POST', BASE, { provider_type: 'encrypted', password: 'wrong-password' });
  assert.equal(wrong.status, 400);
  assert.equal(wrong.body?.['code'], 'secrets_locked');
  assert.match(String(wrong.body?.['message']), /wrong password/);

  const file = join(home.config.paths.dataDir, 'secrets.enc');
  const envelope = JSON.parse(readFileSync(file, 'utf8')) as { tag: string };
  const tag = Buffer.from(envelope.tag, 'base64');
  tag[3] = (tag[3] ?? 0) ^ 0xff;
  writeFileSync(file, JSON.stringify({ ...envelope, tag: tag.toString('base64') }));
  const res = await call('POST', `${BASE}/default/keys`, { key: 'k2', value: 'v2' });
  assert.equal(res.status, 500);
  assert.equal(res.body?.['code'], 'secrets_corrupt');
  assert.match(String(res.body?.['message']), /integrity check/);
});
