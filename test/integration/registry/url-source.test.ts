/**
 * The URL source against real HTTP servers on loopback: the SSRF guard, https rule, ETag
 * revalidation, TTL, stale copies, and the 502/504 mapping of PUT (ToolHive's).
 * Loopback is a private address, so positive cases set `allow_private_ip`.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { RegistryService } from '../../../src/registry/index.js';
import { isSkepError } from '../../../src/shared/index.js';
import { openStore } from '../../../src/store/index.js';
import { testApp } from '../../helpers/api.js';
import { generateDocument } from '../../unit/registry/fixtures.js';
import { closedPort, httpServer, silentServer } from './helpers.js';

const DOC = JSON.stringify(generateDocument(12, 3));

function serveDoc(body: () => { status: number; text: string; etag?: string }) {
  return (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
    const { status, text, etag } = body();
    if (etag !== undefined && req.headers['if-none-match'] === etag) {
      res.writeHead(304, { etag });
      res.end();
      return;
    }
    res.writeHead(status, { 'content-type': 'application/json', ...(etag !== undefined ? { etag } : {}) });
    res.end(text);
  };
}

function service(
  t: import('node:test').TestContext,
  options: { ttlMs?: number; fetchTimeoutMs?: number; now?: () => number } = {},
) {
  const dir = mkdtempSync(join(tmpdir(), 'skep-reg-'));
  const store = openStore(join(dir, 'state.db'));
  const make = () => new RegistryService({ store, cacheDir: join(dir, 'cache'), ...options });
  const svc = make();
  t.after(async () => {
    await svc.close();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { svc, make, store };
}

test('private-address guard: loopback sources are refused without allow_private_ip, by IP and by resolved name', async (t) => {
  const src = await httpServer(
    t,
    serveDoc(() => ({ status: 200, text: DOC })),
  );
  const { app } = await testApp(t);
  const put = (payload: object) =>
    app.inject({ method: 'PUT', url: '/api/v1beta/registry/default', payload });

  const http = await put({ url: `${src.url}/registry.json` });
  assert.equal(http.statusCode, 400, 'http:// needs allow_private_ip');

  const literal = await put({ url: `https://127.0.0.1:${src.port}/registry.json` });
  assert.equal(literal.statusCode, 403);
  assert.equal(literal.json().code, 'registry_private_address');

  // `localhost` is a name: the refusal comes from checking the addresses it resolves to.
  const named = await put({ url: `https://localhost:${src.port}/registry.json` });
  assert.equal(named.statusCode, 403);
  assert.equal(named.json().code, 'registry_private_address');
  assert.match(
    named.json().message,
    /localhost resolves to .*, which is a loopback address; set allow_private_ip/,
  );

  // Every other spelling of loopback (F7: IPv4-compatible and NAT64 included).
  for (const host of [
    '[::ffff:127.0.0.1]',
    '[::7f00:1]',
    '[::127.0.0.1]',
    '[64:ff9b::7f00:1]',
    '0x7f.1',
    '2130706433',
    '0177.0.0.1',
    '127.1',
  ]) {
    const refused = await put({ api_url: `https://${host}:${src.port}/` });
    assert.equal(refused.statusCode, 403, host);
    assert.equal(refused.json().code, 'registry_private_address', host);
  }
  // Link-local / metadata addresses stay refused even with allow_private_ip.
  const metadata = await put({ url: 'http://169.254.169.254/latest/meta-data/', allow_private_ip: true });
  assert.equal(metadata.statusCode, 403);
  assert.match(metadata.json().message, /link-local or cloud metadata address, which is never contacted/);

  assert.equal(src.requests.length, 0, 'nothing was sent to the refused source');
  assert.equal(src.connections(), 0, 'no connection was even opened');
  const info = (await app.inject({ method: 'GET', url: '/api/v1beta/registry' })).json().registries[0];
  assert.equal(info.type, 'default', 'a refused source is not saved');
});

test('a JSON file server as source: PUT with allow_private_ip → {type: url}; both views serve its content', async (t) => {
  const src = await httpServer(
    t,
    serveDoc(() => ({ status: 200, text: DOC, etag: '"v1"' })),
  );
  const { app } = await testApp(t);
  const put = await app.inject({
    method: 'PUT',
    url: '/api/v1beta/registry/default',
    payload: { url: `${src.url}/registry.json`, allow_private_ip: true },
  });
  assert.equal(put.statusCode, 200);
  assert.deepEqual(put.json(), { type: 'url' });
  const info = (await app.inject({ method: 'GET', url: '/api/v1beta/registry' })).json().registries[0];
  assert.deepEqual([info.type, info.source, info.server_count], ['url', `${src.url}/registry.json`, 12]);
  const catalog = (
    await app.inject({ method: 'GET', url: '/registry/default/v0.1/servers?limit=200' })
  ).json();
  assert.equal(catalog.metadata.total, 12);
  const skills = (
    await app.inject({ method: 'GET', url: '/registry/default/v0.1/x/dev.toolhive/skills' })
  ).json();
  assert.equal(skills.metadata.total, 3);
  // Within the TTL the content comes from the cache: one fetch for PUT, none since.
  assert.equal(src.requests.length, 1);
});

test('PUT maps source failures: 5xx → 502, invalid JSON → 502, legacy → 502, refused → 504, silent → 504', async (t) => {
  let answer = { status: 500, text: 'boom' };
  const src = await httpServer(
    t,
    serveDoc(() => answer),
  );
  const { app } = await testApp(t);
  const put = () =>
    app.inject({
      method: 'PUT',
      url: '/api/v1beta/registry/default',
      payload: { url: `${src.url}/registry.json`, allow_private_ip: true },
    });
  let res = await put();
  assert.equal(res.statusCode, 502);
  assert.equal(res.json().code, 'registry_invalid');
  assert.match(res.json().message, /HTTP 500/);

  answer = { status: 200, text: '{"version": "1.0.0", "data": {"servers": [' };
  res = await put();
  assert.equal(res.statusCode, 502);
  assert.match(res.json().message, /not valid JSON/);

  answer = { status: 200, text: '{"servers": {"a": {"image": "x"}}}' };
  res = await put();
  assert.equal(res.statusCode, 502);
  assert.match(res.json().message, /legacy/);

  const port = await closedPort();
  res = await app.inject({
    method: 'PUT',
    url: '/api/v1beta/registry/default',
    payload: { url: `http://127.0.0.1:${port}/registry.json`, allow_private_ip: true },
  });
  assert.equal(res.statusCode, 504);
  assert.equal(res.json().code, 'registry_unavailable');
  assert.match(res.json().message, /unreachable/);

  // A server that never answers hits the real 5 s default deadline.
  const silent = await silentServer(t);
  res = await app.inject({
    method: 'PUT',
    url: '/api/v1beta/registry/default',
    payload: { url: `http://127.0.0.1:${silent.port}/registry.json`, allow_private_ip: true },
  });
  assert.equal(res.statusCode, 504);
  assert.match(res.json().message, /did not answer within 5000 ms/);

  const info = (await app.inject({ method: 'GET', url: '/api/v1beta/registry' })).json().registries[0];
  assert.equal(info.type, 'default', 'no failed source was saved');
});

test('the timeout is injectable: a silent source fails after the configured deadline with registry_unavailable', async (t) => {
  const silent = await silentServer(t);
  const { svc } = service(t, { fetchTimeoutMs: 200 });
  await assert.rejects(
    svc.configure('default', { url: `http://127.0.0.1:${silent.port}/r.json`, allow_private_ip: true }),
    (e) => isSkepError(e) && e.code === 'registry_unavailable' && /within 200 ms/.test(e.message),
  );
});

test('ETag and TTL: an expired copy is revalidated with If-None-Match (304 keeps it); a down source is served stale with a warning', async (t) => {
  let clock = 1_000_000;
  let mode: 'ok' | 'down' = 'ok';
  let doc = DOC;
  const src = await httpServer(
    t,
    serveDoc(() =>
      mode === 'ok' ? { status: 200, text: doc, etag: `"${doc.length}"` } : { status: 503, text: 'down' },
    ),
  );
  const { svc, make } = service(t, { ttlMs: 60_000, now: () => clock });
  await svc.configure('default', { url: `${src.url}/registry.json`, allow_private_ip: true });
  assert.equal(src.requests.length, 1);

  await svc.listCatalogServers({});
  assert.equal(src.requests.length, 1, 'fresh within the TTL');

  clock += 61_000;
  await svc.listCatalogServers({});
  assert.equal(src.requests.length, 2);
  assert.equal(src.requests[1]!.ifNoneMatch, `"${DOC.length}"`, 'revalidated with the stored ETag');
  assert.equal(svc.lastWarning(), undefined);

  // The source changes: a new body replaces the copy.
  doc = JSON.stringify(generateDocument(20, 0, 3));
  clock += 61_000;
  assert.equal((await svc.listCatalogServers({})).metadata.total, 20);

  // The source goes down: the last good copy is served, with a warning.
  mode = 'down';
  clock += 61_000;
  const stale = await svc.listCatalogServers({});
  assert.equal(stale.metadata.total, 20);
  assert.match(svc.lastWarning() ?? '', /is unavailable \(.*HTTP 503.*\); serving the copy fetched at/);
  const before = src.requests.length;
  await svc.listCatalogServers({});
  assert.equal(src.requests.length, before, 'no retry storm: a failed source is not asked again at once');

  // An explicit refresh does not hide the failure.
  await assert.rejects(
    svc.refresh('default'),
    (e) => isSkepError(e) && e.code === 'unavailable' && e.status === 503,
  );

  // A new process (new service, same state and cache dirs) starts from the disk copy.
  const again = make();
  t.after(() => again.close());
  assert.equal((await again.listCatalogServers({})).metadata.total, 20);
  assert.match(again.lastWarning() ?? '', /serving the copy fetched at/);

  // The source recovers: after the back-off the content is fresh again and the warning clears.
  mode = 'ok';
  clock += 31_000;
  await svc.listCatalogServers({});
  assert.equal(svc.lastWarning(), undefined);
});

test('GET with a source that is down and no copy anywhere → 503 unavailable', async (t) => {
  const src = await httpServer(
    t,
    serveDoc(() => ({ status: 200, text: DOC })),
  );
  const { svc, store } = service(t, { ttlMs: 0 });
  await svc.configure('default', { url: `${src.url}/registry.json`, allow_private_ip: true });
  await src.close();
  // Fresh service without the disk copy's directory: same store, different cache dir.
  const dir = mkdtempSync(join(tmpdir(), 'skep-reg-nocache-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const other = new RegistryService({ store, cacheDir: dir });
  t.after(() => other.close());
  await assert.rejects(
    other.listCatalogServers({}),
    (e) => isSkepError(e) && e.code === 'unavailable' && e.status === 503,
  );
});

test('redirects are followed hop by hop (each hop through the same guard), at most 3', async (t) => {
  const src = await httpServer(t, (req, res) => {
    const hop = Number(/hop=(\d+)/.exec(req.url ?? '')?.[1] ?? '0');
    if (req.url?.startsWith('/loop')) {
      res.writeHead(302, { location: `/loop?hop=${hop + 1}` });
      res.end();
    } else if (req.url === '/moved.json') {
      res.writeHead(301, { location: '/registry.json' });
      res.end();
    } else {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(DOC);
    }
  });
  const { svc } = service(t);
  assert.deepEqual(await svc.configure('default', { url: `${src.url}/moved.json`, allow_private_ip: true }), {
    type: 'url',
  });
  assert.deepEqual(
    src.requests.map((r) => r.url),
    ['/moved.json', '/registry.json'],
  );
  await assert.rejects(
    svc.configure('default', { url: `${src.url}/loop.json`, allow_private_ip: true }),
    (e) => isSkepError(e) && e.code === 'registry_unavailable' && /more than 3 redirects/.test(e.message),
  );
});
