import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testApp } from '../../helpers/api.js';

test('group default always exists and cannot be deleted', async (t) => {
  const { app } = await testApp(t);
  const list = await app.inject({ method: 'GET', url: '/api/v1beta/groups' });
  assert.deepEqual(list.json(), { groups: [{ name: 'default', registered_clients: [] }] });
  const del = await app.inject({ method: 'DELETE', url: '/api/v1beta/groups/default' });
  assert.equal(del.statusCode, 400);
  assert.equal(del.json().code, 'group_protected');
});

test('create → 201, duplicate → 409, get → 200, delete → 204, then 404', async (t) => {
  const { app } = await testApp(t);
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1beta/groups',
    payload: { name: 'team a' },
  });
  assert.equal(created.statusCode, 201);
  assert.deepEqual(created.json(), { name: 'team a' });
  const dup = await app.inject({ method: 'POST', url: '/api/v1beta/groups', payload: { name: 'team a' } });
  assert.equal(dup.statusCode, 409);
  assert.equal(dup.json().code, 'group_exists');
  const got = await app.inject({ method: 'GET', url: '/api/v1beta/groups/team%20a' });
  assert.equal(got.statusCode, 200);
  assert.deepEqual(got.json(), { name: 'team a', registered_clients: [] });
  const del = await app.inject({ method: 'DELETE', url: '/api/v1beta/groups/team%20a' });
  assert.equal(del.statusCode, 204);
  const gone = await app.inject({ method: 'GET', url: '/api/v1beta/groups/team%20a' });
  assert.equal(gone.statusCode, 404);
  assert.equal(gone.json().code, 'group_not_found');
  const delAgain = await app.inject({ method: 'DELETE', url: '/api/v1beta/groups/team%20a' });
  assert.equal(delAgain.statusCode, 404);
});

test('groups are listed sorted by name', async (t) => {
  const { app } = await testApp(t);
  for (const name of ['zeta', 'alpha', 'mid']) {
    await app.inject({ method: 'POST', url: '/api/v1beta/groups', payload: { name } });
  }
  const list = await app.inject({ method: 'GET', url: '/api/v1beta/groups' });
  assert.deepEqual(
    list.json().groups.map((g: { name: string }) => g.name),
    ['alpha', 'default', 'mid', 'zeta'],
  );
});

for (const bad of [
  '',
  'Upper',
  ' lead',
  'trail ',
  'two  spaces',
  'semi;colon',
  'slash/x',
  'dot.x',
  'x'.repeat(101),
]) {
  test(`group name rule rejects ${JSON.stringify(bad.length > 20 ? `${bad.slice(0, 8)}…(${bad.length})` : bad)} with 400`, async (t) => {
    const { app } = await testApp(t);
    const res = await app.inject({ method: 'POST', url: '/api/v1beta/groups', payload: { name: bad } });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'invalid_name');
    const list = await app.inject({ method: 'GET', url: '/api/v1beta/groups' });
    assert.equal(list.json().groups.length, 1, 'nothing was created');
  });
}

test('group name rule accepts lowercase words, digits, _ and -', async (t) => {
  const { app } = await testApp(t);
  for (const name of ['a', 'team-1', 'under_score', 'two words', 'x'.repeat(100)]) {
    const res = await app.inject({ method: 'POST', url: '/api/v1beta/groups', payload: { name } });
    assert.equal(res.statusCode, 201, name);
  }
});
