import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { testApp } from '../../helpers/api.js';

test('GET /health → 204 with the per-process nonce header', async (t) => {
  const { app, ctx } = await testApp(t);
  const res = await app.inject({ method: 'GET', url: '/health' });
  assert.equal(res.statusCode, 204);
  assert.equal(res.headers['x-skep-nonce'], ctx.nonce);
  assert.match(ctx.nonce, /^[0-9a-f]{32}$/);
});

test('GET /api/v1beta/version → {version}', async (t) => {
  const { app } = await testApp(t);
  const res = await app.inject({ method: 'GET', url: '/api/v1beta/version' });
  assert.equal(res.statusCode, 200);
  assert.match(res.json().version, /^\d+\.\d+\.\d+/);
});

test('the OpenAPI document validates as OpenAPI 3.1', async (t) => {
  const { app } = await testApp(t);
  const res = await app.inject({ method: 'GET', url: '/api/openapi.json' });
  assert.equal(res.statusCode, 200);
  const doc = res.json();
  assert.equal(doc.openapi, '3.1.0');
  assert.ok(doc.paths['/api/v1beta/groups'], 'groups are documented');
  // reference (toolhive-openapi.json): the document lists itself, GET /api/openapi.json, tag system.
  assert.deepEqual(doc.paths['/api/openapi.json']?.get?.tags, ['system']);
  assert.equal(
    doc.paths['/api/openapi.json'].get.responses['200'].content['application/json'].schema.type,
    'object',
  );
  const validator = new Validator();
  const result = await validator.validate(doc);
  assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
  assert.equal(validator.version, '3.1');
});

test('the docs page is served without any network access', async (t) => {
  const { app } = await testApp(t);
  const page = await app.inject({ method: 'GET', url: '/api/doc/' });
  assert.equal(page.statusCode, 200);
  assert.match(String(page.headers['content-type']), /text\/html/);
  // Self-contained: no script, style or link from anywhere else, and rendered on the server
  // (the operations and schemas are in the HTML; nothing is fetched).
  assert.doesNotMatch(page.body, /<(?:script|link|img)[^>]+(?:src|href)=/);
  assert.doesNotMatch(page.body, /fetch\(/);
  assert.match(page.body, /id="op-post-api-v1beta-workloads"/);
  assert.match(page.body, /id="schema-WorkloadSummary"/);
  // A strict policy: only this page's inline script and style, by hash; no connections.
  const csp = String(page.headers['content-security-policy']);
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/]+=*';/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|connect-src/);
});

test('the OpenAPI document names its schemas after the wire objects and references them', async (t) => {
  const { app } = await testApp(t);
  const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
  const text = JSON.stringify(doc);
  const names = Object.keys(doc.components.schemas);
  for (const name of [
    'Error',
    'WorkloadSummary',
    'WorkloadDetail',
    'RunConfig',
    'CreateWorkloadRequest',
    'SecretRef',
  ])
    assert.ok(names.includes(name), `components.schemas.${name}`);
  assert.doesNotMatch(text, /def-\d/, 'no def-N names');
  // Every $ref points to a component that exists.
  const refs = [...text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]);
  assert.ok(refs.length > 50, `${refs.length} references`);
  for (const ref of refs) assert.ok(names.includes(ref as string), `$ref to ${ref}`);
  // The error body (with its code table) is described once, not in every operation.
  assert.equal(text.split('The request is malformed or a field is invalid').length - 1, 1);
  const list = doc.paths['/api/v1beta/workloads'].get.responses;
  assert.deepEqual(list['200'].content['application/json'].schema.properties.workloads.items, {
    $ref: '#/components/schemas/WorkloadSummary',
  });
  assert.deepEqual(list['404'].content['application/json'].schema, { $ref: '#/components/schemas/Error' });
  assert.match(list['404'].description, /`workload_not_found`/);
});

test('malformed JSON → 400 bad_request', async (t) => {
  const { app } = await testApp(t);
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1beta/groups',
    headers: { 'content-type': 'application/json' },
    payload: '{"name": ',
  });
  assert.equal(res.statusCode, 400);
  assert.equal(res.json().code, 'bad_request');
  assert.match(res.json().message, /not valid JSON/);
});

test('schema violation → 400 naming the field', async (t) => {
  const { app } = await testApp(t);
  const missing = await app.inject({ method: 'POST', url: '/api/v1beta/groups', payload: { nam: 'x' } });
  assert.equal(missing.statusCode, 400);
  assert.deepEqual(missing.json(), { code: 'bad_request', message: 'body.name: is required' });
  const wrongType = await app.inject({ method: 'POST', url: '/api/v1beta/groups', payload: { name: ['x'] } });
  assert.equal(wrongType.statusCode, 400);
  assert.match(wrongType.json().message, /^body\.name: must be string/);
});

test('a body over 1 MiB → 413 payload_too_large', async (t) => {
  const { app } = await testApp(t);
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1beta/groups',
    payload: { name: 'x'.repeat(1024 * 1024 + 10) },
  });
  assert.equal(res.statusCode, 413);
  assert.equal(res.json().code, 'payload_too_large');
});

test('unknown route → 404 not_found; unknown method on a known route → 405 with Allow', async (t) => {
  const { app } = await testApp(t);
  const notFound = await app.inject({ method: 'GET', url: '/api/v1beta/nothing-here' });
  assert.equal(notFound.statusCode, 404);
  assert.equal(notFound.json().code, 'not_found');
  const wrongMethod = await app.inject({ method: 'PATCH', url: '/api/v1beta/groups/default' });
  assert.equal(wrongMethod.statusCode, 405);
  assert.equal(wrongMethod.json().code, 'method_not_allowed');
  assert.match(wrongMethod.headers.allow ?? '', /GET/);
  assert.match(wrongMethod.headers.allow ?? '', /DELETE/);
});

test('an unexpected error → opaque 500, details only in the log', async (t) => {
  const { app } = await testApp(t);
  const logged: unknown[] = [];
  app.get('/api/v1beta/boom', async (request) => {
    request.log.error = (obj: unknown) => logged.push(obj);
    throw new Error('database password is hunter2');
  });
  const res = await app.inject({ method: 'GET', url: '/api/v1beta/boom' });
  assert.equal(res.statusCode, 500);
  assert.deepEqual(res.json(), { code: 'internal_error', message: 'internal error; see the server log' });
  assert.doesNotMatch(res.body, /hunter2/);
  assert.equal(logged.length, 1);
});

test('DNS rebinding: foreign Host, foreign Origin or another loopback port → 403; the own origin passes', async (t) => {
  const { app } = await testApp(t);
  const evilHost = await app.inject({
    method: 'GET',
    url: '/health',
    headers: { host: 'attacker.example:8080' },
  });
  assert.equal(evilHost.statusCode, 403);
  assert.equal(evilHost.json().code, 'forbidden_host');
  const evilOrigin = await app.inject({
    method: 'GET',
    url: '/api/v1beta/groups',
    headers: { host: '127.0.0.1:8080', origin: 'http://attacker.example' },
  });
  assert.equal(evilOrigin.statusCode, 403);
  // SameSite does not separate ports: a page on another loopback port is another origin.
  const otherPort = await app.inject({
    method: 'GET',
    url: '/api/v1beta/groups',
    headers: { host: 'localhost:8080', origin: 'http://localhost:9999' },
  });
  assert.equal(otherPort.statusCode, 403);
  assert.equal(otherPort.json().code, 'forbidden_host');
  for (const host of ['localhost:8080', '127.0.0.1:8080', '[::1]:8080', 'localhost']) {
    const ok = await app.inject({
      method: 'GET',
      url: '/health',
      headers: { host, origin: `http://${host}` },
    });
    assert.equal(ok.statusCode, 204, host);
  }
});

test('security headers on every response', async (t) => {
  const { app } = await testApp(t);
  const res = await app.inject({ method: 'GET', url: '/api/v1beta/groups' });
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  assert.equal(res.headers['cross-origin-resource-policy'], 'same-origin');
});

test('GET /health → 503 with the reason when the runtime is not usable', async (t) => {
  const { buildTestApp } = await import('../../helpers/api.js');
  const { createContext } = await import('../../../src/control/app/index.js');
  const { tempHome } = await import('../../helpers/home.js');
  const home = tempHome(t);
  const ctx = createContext(home.config, {
    runtime: {
      name: 'docker',
      health: async () => ({ ok: false, reason: 'cannot reach /run/podman/podman.sock' }),
      start: async () => {
        throw new Error('not used');
      },
    },
  });
  const app = await buildTestApp(ctx);
  t.after(async () => {
    await app.close();
    await ctx.close();
  });
  const res = await app.inject({ method: 'GET', url: '/health' });
  assert.equal(res.statusCode, 503);
  assert.equal(res.json().code, 'unavailable');
  assert.match(res.json().message, /podman\.sock/);
  assert.equal(res.headers['x-skep-nonce'], undefined);
});
