import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { testApp } from '../../helpers/api.js';
import { generateDocument } from './fixtures.js';

test('"List registries": one registry, default, with type/source/version/last_updated/server_count/auth fields', async (t) => {
  const { app } = await testApp(t);
  const res = await app.inject({ method: 'GET', url: '/api/v1beta/registry' });
  assert.equal(res.statusCode, 200);
  const { registries } = res.json();
  assert.equal(registries.length, 1);
  const r = registries[0];
  assert.equal(r.name, 'default');
  assert.equal(r.type, 'default');
  assert.equal(r.source, '');
  assert.equal(r.auth_status, 'none');
  assert.equal(r.auth_type, '');
  assert.ok(r.server_count >= 30);
  assert.match(r.last_updated, /^\d{4}-\d\d-\d\dT/);
});

test('"Get a registry": RegistryInfo plus native content; any other name is 404', async (t) => {
  const { app } = await testApp(t);
  const res = await app.inject({ method: 'GET', url: '/api/v1beta/registry/default' });
  assert.equal(res.statusCode, 200);
  const body = res.json();
  assert.equal(body.name, 'default');
  assert.ok(body.registry.servers['io.github.modelcontextprotocol/fetch'].image === 'mcp/fetch');
  assert.equal(body.registry.remote_servers['com.notion/notion'].url, 'https://mcp.notion.com/mcp');
  // ToolHive's group shape: the built-in catalog's groups, members in the map of their kind.
  const cloudflare = body.registry.groups.find((g: { name: string }) => g.name === 'cloudflare');
  assert.deepEqual(Object.keys(cloudflare).sort(), ['description', 'name', 'remote_servers', 'servers']);
  assert.equal(
    cloudflare.remote_servers['com.cloudflare/cloudflare-docs'].url,
    body.registry.remote_servers['com.cloudflare/cloudflare-docs'].url,
  );
  assert.deepEqual(cloudflare.servers, {});
  assert.equal(
    body.server_count,
    Object.keys(body.registry.servers).length + Object.keys(body.registry.remote_servers).length,
  );
  for (const url of [
    '/api/v1beta/registry/other',
    '/api/v1beta/registry/other/servers',
    '/api/v1beta/registry/other/servers/fetch',
  ]) {
    const missing = await app.inject({ method: 'GET', url });
    assert.equal(missing.statusCode, 404, url);
    assert.equal(missing.json().code, 'registry_not_found');
  }
});

test('"List servers in a registry": servers and remote_servers, sorted by name', async (t) => {
  const { app } = await testApp(t);
  const res = await app.inject({ method: 'GET', url: '/api/v1beta/registry/default/servers' });
  assert.equal(res.statusCode, 200);
  const { servers, remote_servers } = res.json();
  const names = servers.map((s: { name: string }) => s.name);
  assert.deepEqual(names, [...names].sort());
  assert.ok(servers.every((s: { image?: string }) => typeof s.image === 'string'));
  assert.ok(remote_servers.every((s: { url?: string }) => typeof s.url === 'string'));
});

test('"Get a server": URL-encoded reverse-DNS name or unique short name; is_remote tells which object applies', async (t) => {
  const { app } = await testApp(t);
  const full = await app.inject({
    method: 'GET',
    url: '/api/v1beta/registry/default/servers/io.github.modelcontextprotocol%2Ftime',
  });
  assert.equal(full.statusCode, 200);
  assert.equal(full.json().is_remote, false);
  assert.equal(full.json().server.image, 'mcp/time');
  assert.deepEqual(full.json().server.tools, ['get_current_time', 'convert_time']);
  const short = await app.inject({ method: 'GET', url: '/api/v1beta/registry/default/servers/linear' });
  assert.equal(short.json().is_remote, true);
  assert.equal(short.json().remote_server.name, 'app.linear/linear');
  assert.equal(short.json().server, undefined);
  const missing = await app.inject({ method: 'GET', url: '/api/v1beta/registry/default/servers/nope' });
  assert.equal(missing.statusCode, 404);
  assert.equal(missing.json().code, 'server_not_found');
});

test('catalog list: defaults page 1 / limit 50, clamp to 200, bad values fall back, q is case-insensitive', async (t) => {
  const { app, home } = await testApp(t);
  const file = join(home.dir, 'big.json');
  writeFileSync(file, JSON.stringify(generateDocument(260)));
  const put = await app.inject({
    method: 'PUT',
    url: '/api/v1beta/registry/default',
    payload: { local_path: file },
  });
  assert.deepEqual(put.json(), { type: 'file' });

  const first = await app.inject({ method: 'GET', url: '/registry/anything/v0.1/servers' });
  assert.equal(first.statusCode, 200);
  assert.deepEqual(first.json().metadata, { total: 260, page: 1, limit: 50 });
  assert.equal(first.json().servers.length, 50);

  const clamped = await app.inject({
    method: 'GET',
    url: '/registry/default/v0.1/servers?limit=1000&page=2',
  });
  assert.deepEqual(clamped.json().metadata, { total: 260, page: 2, limit: 200 });
  assert.equal(clamped.json().servers.length, 60);

  const bad = await app.inject({ method: 'GET', url: '/registry/default/v0.1/servers?limit=-5&page=abc' });
  assert.deepEqual(bad.json().metadata, { total: 260, page: 1, limit: 50 });

  const q = await app.inject({
    method: 'GET',
    url: '/registry/default/v0.1/servers?q=SERVER%2012&limit=200',
  });
  const names = q.json().servers.map((s: { description: string }) => s.description);
  assert.ok(names.length > 0 && names.every((d: string) => d.toLowerCase().includes('server 12')));
});

test('"Get a registry server": encoded name → server.json; missing → 404 {code: not_found}', async (t) => {
  const { app } = await testApp(t);
  const res = await app.inject({
    method: 'GET',
    url: '/registry/default/v0.1/servers/io.github.modelcontextprotocol%2Feverything/versions/latest',
  });
  assert.equal(res.statusCode, 200);
  const server = res.json();
  assert.equal(server.name, 'io.github.modelcontextprotocol/everything');
  assert.equal(server.packages[0].registryType, 'npm');
  assert.equal(server.packages[0].identifier, '@modelcontextprotocol/server-everything');
  assert.ok(server._meta['io.modelcontextprotocol.registry/publisher-provided']['io.github.stacklok']);
  const missing = await app.inject({
    method: 'GET',
    url: '/registry/default/v0.1/servers/io.x%2Fnope/versions/latest',
  });
  assert.equal(missing.statusCode, 404);
  assert.equal(missing.json().code, 'not_found');
  assert.equal(typeof missing.json().message, 'string');
});

test('skills: list with q over name/namespace/description, get by namespace and name, 404 not_found', async (t) => {
  const { app } = await testApp(t);
  const all = await app.inject({ method: 'GET', url: '/registry/default/v0.1/x/dev.toolhive/skills' });
  assert.equal(all.statusCode, 200);
  assert.ok(all.json().metadata.total >= 5);
  const names = all.json().skills.map((s: { name: string }) => s.name);
  assert.deepEqual(names, [...names].sort());
  const q = await app.inject({
    method: 'GET',
    url: '/registry/default/v0.1/x/dev.toolhive/skills?q=ANTHROPICS&limit=2',
  });
  assert.deepEqual(q.json().metadata, { total: all.json().metadata.total, page: 1, limit: 2 });
  const pdf = await app.inject({
    method: 'GET',
    url: '/registry/default/v0.1/x/dev.toolhive/skills/io.github.anthropics/pdf',
  });
  assert.equal(pdf.statusCode, 200);
  assert.equal(pdf.json().packages[0].registryType, 'git');
  const missing = await app.inject({
    method: 'GET',
    url: '/registry/default/v0.1/x/dev.toolhive/skills/io.github.anthropics/nope',
  });
  assert.equal(missing.statusCode, 404);
  assert.equal(missing.json().code, 'not_found');
});

test('PUT: bad input is 400 and changes nothing; other registry names are 404', async (t) => {
  const { app, home } = await testApp(t);
  const cases: [unknown, number, RegExp][] = [
    [{ url: 'https://a.example/r.json', local_path: '/x.json' }, 400, /more than one registry type/],
    [{ url: 'http://registry.example/r.json' }, 400, /must start with https/],
    [{ url: 'ftp://registry.example/r.json', allow_private_ip: true }, 400, /must start with https/],
    [{ api_url: 'not a url' }, 400, /is not a URL/],
    [{ local_path: join(home.dir, 'missing.json') }, 400, /does not exist/],
    [{ url: 5 }, 400, /url/],
    // Registry authentication applies to url and api_url sources only.
    [{ auth: { issuer: 'https://x', client_id: 'y' } }, 400, /built-in catalog needs none/],
    [{ auth: { issuer: 'https://x' } }, 400, /^auth\.issuer and auth\.client_id are required$/],
  ];
  for (const [payload, status, message] of cases) {
    const res = await app.inject({
      method: 'PUT',
      url: '/api/v1beta/registry/default',
      payload: payload as object,
    });
    assert.equal(res.statusCode, status, JSON.stringify(payload));
    assert.match(res.json().message, message);
  }
  const other = await app.inject({ method: 'PUT', url: '/api/v1beta/registry/other', payload: {} });
  assert.equal(other.statusCode, 404);
  const list = await app.inject({ method: 'GET', url: '/api/v1beta/registry' });
  assert.equal(list.json().registries[0].type, 'default');
});

test('a local_path that is not a registry is refused without echoing any of its content', async (t) => {
  const { app, home } = await testApp(t);
  const secret = 'S3cr3t-Value-9f2c';
  const files: [content: string, message: RegExp][] = [
    [`root:${secret}:20211:0:99999:7:::\ndaemon:*:20211:0:99999:7:::\n`, /is not JSON/],
    [`{"aws_secret_access_key": "${secret}"}`, /not a registry document: missing data\.servers/],
    [`{"token": "${secret}`, /is not valid JSON \(syntax error/],
    [`{"token": ${secret}}`, /is not valid JSON \(syntax error/],
    [`["${secret}"]`, /not a registry document: not a JSON object/],
    [`{"data": {"servers": "${secret}"}}`, /not a registry document: missing data\.servers/],
  ];
  for (const [i, [content, message]] of files.entries()) {
    const file = join(home.dir, `not-a-registry-${i}`);
    writeFileSync(file, content);
    const res = await app.inject({
      method: 'PUT',
      url: '/api/v1beta/registry/default',
      payload: { local_path: file },
    });
    assert.equal(res.statusCode, 502, content);
    assert.equal(res.json().code, 'registry_invalid');
    assert.match(res.json().message, message);
    assert.ok(!res.body.includes(secret), `the answer quotes the file: ${res.body}`);
    assert.ok(!res.body.includes('root:') && !res.body.includes('aws_secret'), res.body);
  }
});

test('local file source: validated on PUT (502 when unusable), re-read when it changes, none → back to built-in', async (t) => {
  const { app, home } = await testApp(t);
  const file = join(home.dir, 'reg.json');
  writeFileSync(file, '{"servers": {}}');
  const legacy = await app.inject({
    method: 'PUT',
    url: '/api/v1beta/registry/default',
    payload: { local_path: file },
  });
  assert.equal(legacy.statusCode, 502);
  assert.equal(legacy.json().code, 'registry_invalid');

  writeFileSync(file, JSON.stringify(generateDocument(5)));
  const ok = await app.inject({
    method: 'PUT',
    url: '/api/v1beta/registry/default',
    payload: { local_path: `file://${file}` },
  });
  assert.deepEqual(ok.json(), { type: 'file' });
  let info = (await app.inject({ method: 'GET', url: '/api/v1beta/registry' })).json().registries[0];
  assert.deepEqual([info.type, info.source, info.server_count], ['file', file, 5]);

  writeFileSync(file, JSON.stringify(generateDocument(8)));
  info = (await app.inject({ method: 'GET', url: '/api/v1beta/registry' })).json().registries[0];
  assert.equal(info.server_count, 8, 'the changed file is re-read');

  // A broken edit keeps serving the last good copy, with a Warning header.
  writeFileSync(file, '{ not json');
  const stale = await app.inject({ method: 'GET', url: '/registry/default/v0.1/servers' });
  assert.equal(stale.statusCode, 200);
  assert.equal(stale.json().metadata.total, 8);
  assert.match(String(stale.headers['warning']), /^110 skep "serving the last good copy/);

  const reset = await app.inject({ method: 'PUT', url: '/api/v1beta/registry/default', payload: {} });
  assert.deepEqual(reset.json(), { type: 'default' });
  info = (await app.inject({ method: 'GET', url: '/api/v1beta/registry' })).json().registries[0];
  assert.equal(info.type, 'default');
  assert.ok(info.server_count >= 30);
});

test('refresh: POST /api/v1beta/registry/default/refresh reloads; other names 404', async (t) => {
  const { app } = await testApp(t);
  const res = await app.inject({ method: 'POST', url: '/api/v1beta/registry/default/refresh' });
  assert.equal(res.statusCode, 200);
  assert.equal(res.json().status, 'refreshed');
  assert.equal(res.json().type, 'default');
  const other = await app.inject({ method: 'POST', url: '/api/v1beta/registry/x/refresh' });
  assert.equal(other.statusCode, 404);
});

test('the source setting is shared through the store: a second context sees the change', async (t) => {
  const { app, home, ctx } = await testApp(t);
  const file = join(home.dir, 'shared.json');
  writeFileSync(file, JSON.stringify(generateDocument(3)));
  await ctx.registry.configure('default', { local_path: file });
  const info = (await app.inject({ method: 'GET', url: '/api/v1beta/registry' })).json().registries[0];
  assert.equal(info.type, 'file');
  const { createContext } = await import('../../../src/control/app/index.js');
  const other = createContext(home.config);
  t.after(() => other.close());
  assert.equal((await other.registry.listRegistries())[0]!.server_count, 3);
});
