/**
 * A second Skep instance's own v0.1 catalog API as the upstream of the first one: paged fetch of
 * servers and skills, type detection from a base URL, short-name lookup through the API source, and
 * the private-address guard.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { buildApp } from '../../../src/control/api/app.js';
import { createContext } from '../../../src/control/app/index.js';
import { buildTestApp, testApp } from '../../helpers/api.js';
import { tempHome } from '../../helpers/home.js';
import { generateDocument } from '../../unit/registry/fixtures.js';

/**
 * Starts a Skep API on 127.0.0.1:0 whose default registry is a file of `servers` generated
 * entries. Registry sources send no credentials, and `skep serve` on TCP asks every caller
 * for its API token, so by default the app is built without authentication
 * (as its unix-socket app is) to serve the v0.1 catalog; `authenticated` builds it as
 * `skep serve` on TCP does.
 */
async function upstreamSkep(t: TestContext, servers: number, skills: number, authenticated = false) {
  const home = tempHome(t, 'skep-upstream-');
  const ctx = createContext(home.config);
  const file = join(home.dir, 'catalog.json');
  writeFileSync(file, JSON.stringify(generateDocument(servers, skills, 11)));
  await ctx.registry.configure('default', { local_path: file });
  const app = authenticated ? await buildTestApp(ctx) : await buildApp(ctx, { transport: 'unix' });
  const seen: string[] = [];
  app.server.on('request', (req: { url?: string }) => seen.push(req.url ?? ''));
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(async () => {
    await app.close();
    await ctx.close();
  });
  const port = (app.server.address() as { port: number }).port;
  // Skep serves its catalog under /registry/{name}: that prefix is the API base URL.
  return { url: `http://127.0.0.1:${port}/registry/default`, port, seen, ctx };
}

test('upstream v0.1 API (another Skep): paged fetch brings every server and skill, in order', async (t) => {
  const upstream = await upstreamSkep(t, 250, 30);
  const { app } = await testApp(t);
  const put = await app.inject({
    method: 'PUT',
    url: '/api/v1beta/registry/default',
    payload: { api_url: upstream.url, allow_private_ip: true },
  });
  assert.equal(put.statusCode, 200, put.body);
  assert.deepEqual(put.json(), { type: 'api' });

  const serverPages = upstream.seen.filter((u) => u.startsWith('/registry/default/v0.1/servers'));
  assert.equal(serverPages.length, 3, `250 servers at 100 per page: ${serverPages.join(' ')}`);
  assert.ok(serverPages.some((u) => u.includes('page=3')));

  const expected = (await upstream.ctx.registry.listCatalogServers({ limit: 200, page: 1 })).items.map(
    (s) => s.name,
  );
  expected.push(
    ...(await upstream.ctx.registry.listCatalogServers({ limit: 200, page: 2 })).items.map((s) => s.name),
  );
  const got: string[] = [];
  for (let page = 1; ; page++) {
    const res = (
      await app.inject({ method: 'GET', url: `/registry/default/v0.1/servers?limit=75&page=${page}` })
    ).json();
    assert.equal(res.metadata.total, 250);
    if (res.servers.length === 0) break;
    got.push(...res.servers.map((s: { name: string }) => s.name));
  }
  assert.deepEqual(got, expected);

  const skills = (
    await app.inject({ method: 'GET', url: '/registry/default/v0.1/x/dev.toolhive/skills?limit=200' })
  ).json();
  assert.equal(skills.metadata.total, 30);

  const info = (await app.inject({ method: 'GET', url: '/api/v1beta/registry' })).json().registries[0];
  assert.deepEqual([info.type, info.source, info.server_count], ['api', upstream.url, 250]);

  // Native views and the workload-engine lookup work on API content too.
  const short = expected[0]!.split('/')[1]!;
  const native = await app.inject({ method: 'GET', url: `/api/v1beta/registry/default/servers/${short}` });
  assert.equal(native.statusCode, 200);
  assert.equal((native.json().server ?? native.json().remote_server).name, expected[0]);
});

test('a base URL given as `url` is detected as a v0.1 API by probing /v0.1/servers', async (t) => {
  const upstream = await upstreamSkep(t, 5, 0);
  const { app } = await testApp(t);
  const put = await app.inject({
    method: 'PUT',
    url: '/api/v1beta/registry/default',
    payload: { url: `${upstream.url}/`, allow_private_ip: true },
  });
  assert.deepEqual(put.json(), { type: 'api' });
  assert.ok(
    upstream.seen.some((u) => u.startsWith('/registry/default/v0.1/servers?limit=1')),
    'probed',
  );
  const list = (await app.inject({ method: 'GET', url: '/registry/default/v0.1/servers' })).json();
  assert.equal(list.metadata.total, 5);
});

test('refresh re-pages the upstream; without allow_private_ip the upstream on loopback is refused', async (t) => {
  const upstream = await upstreamSkep(t, 40, 2);
  const { app } = await testApp(t);
  const refused = await app.inject({
    method: 'PUT',
    url: '/api/v1beta/registry/default',
    payload: { api_url: `https://127.0.0.1:${upstream.port}/registry/default` },
  });
  assert.equal(refused.statusCode, 403);
  assert.equal(upstream.seen.length, 0);

  const put = await app.inject({
    method: 'PUT',
    url: '/api/v1beta/registry/default',
    payload: { api_url: upstream.url, allow_private_ip: true },
  });
  assert.deepEqual(put.json(), { type: 'api' });
  const before = upstream.seen.length;
  const refreshed = await app.inject({ method: 'POST', url: '/api/v1beta/registry/default/refresh' });
  assert.deepEqual(refreshed.json(), { status: 'refreshed', type: 'api', server_count: 40 });
  assert.ok(upstream.seen.length > before, 'the upstream was asked again');
});

test('a Skep upstream that asks for its API token is refused with a message naming the 401 (its API token is not an OAuth login)', async (t) => {
  const upstream = await upstreamSkep(t, 5, 0, true);
  const { app } = await testApp(t);
  const put = await app.inject({
    method: 'PUT',
    url: '/api/v1beta/registry/default',
    payload: { api_url: upstream.url, allow_private_ip: true },
  });
  assert.equal(put.statusCode, 502);
  assert.match(put.json().message, /requires authentication \(HTTP 401\): add auth \{issuer, client_id\}/);
});
