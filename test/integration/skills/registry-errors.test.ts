/**
 * Registry failure statuses (ToolHive's pull error table). A real registry cannot be made to
 * answer 429 or hang on demand, so these use a minimal HTTP server on loopback that answers
 * the Distribution endpoints with the failure under test; the happy paths run against the
 * real docker-registry in registry.test.ts.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { SkepError } from '../../../src/shared/index.js';
import { OciSession } from '../../../src/skills/oci-client.js';
import { parseOciRef } from '../../../src/skills/oci-ref.js';
import { testApp } from '../../helpers/api.js';

// The stub registries run on loopback: listed as the user's own (`src/shared/net`).
process.env['SKEP_SKILLS_PRIVATE_HOSTS'] = '127.0.0.1';

async function stubRegistry(
  t: { after(fn: () => unknown): void },
  status: number | 'hang',
  headers: Record<string, string> = {},
): Promise<string> {
  const server: Server = createServer((_req, res) => {
    if (status === 'hang') return; // never answers
    res.writeHead(status, headers).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => {
    server.closeAllConnections();
    return new Promise((r) => server.close(r));
  });
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

for (const [status, code, expected] of [
  [401, 'unauthorized', 401],
  [403, 'unauthorized', 401],
  [404, 'not_found', 404],
  [429, 'rate_limited', 429],
  [500, 'bad_gateway', 502],
] as const) {
  test(`registry HTTP ${status} → API ${expected} (${code})`, async (t) => {
    const host = await stubRegistry(t, status);
    const { app } = await testApp(t);
    const res = await app.inject({
      method: 'GET',
      url: `/api/v1beta/skills/content?ref=${host}/skills/some-skill:1.0.0`,
    });
    assert.equal(res.statusCode, expected, res.body);
    assert.equal(res.json().code, code);
  });
}

test('a Bearer challenge whose token endpoint refuses → 401', async (t) => {
  const tokenHost = await stubRegistry(t, 401);
  const host = await stubRegistry(t, 401, {
    'www-authenticate': `Bearer realm="http://${tokenHost}/token",service="test"`,
  });
  const { app } = await testApp(t);
  const res = await app.inject({
    method: 'GET',
    url: `/api/v1beta/skills/content?ref=${host}/skills/some-skill:1.0.0`,
  });
  assert.equal(res.statusCode, 401, res.body);
});

test('a registry that does not answer in time → 504 (gateway_timeout)', async (t) => {
  const host = await stubRegistry(t, 'hang');
  const session = new OciSession(parseOciRef(`${host}/skills/slow-skill:1.0.0`), false, {
    timeoutMs: 300,
    privateHosts: ['127.0.0.1'],
  });
  await assert.rejects(session.getManifest('1.0.0'), (err: unknown) => {
    assert.ok(err instanceof SkepError);
    assert.equal(err.code, 'gateway_timeout');
    assert.equal(err.status, 504);
    return true;
  });
});
