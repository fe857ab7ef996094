/**
 * The `httpv1` authorizer against decision points on loopback (ToolHive's `httpv1`):
 * the PORC request, what counts as an answer (HTTP 200 `{"allow": bool}` only), TLS with and
 * without `insecure_skip_verify`, and the outbound address policy.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { type TestContext, test } from 'node:test';
import {
  type AuthzRequest,
  type HttpAuthzConfig,
  parseAuthzConfig,
} from '../../../src/dataplane/middleware/authz/index.js';
import { HttpPdpAuthorizer } from '../../../src/dataplane/middleware/authz/runtime.js';
import { tempHome } from '../../helpers/home.js';
import { makeTlsFiles } from '../../helpers/redis.js';
import { closeServer } from '../auth/harness.js';

type Handler = (porc: Record<string, unknown>, req: IncomingMessage, res: ServerResponse) => void;

async function serve(t: TestContext, server: Server, handler: Handler): Promise<number> {
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handler(JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}'), req, res));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => closeServer(server));
  return (server.address() as AddressInfo).port;
}

function pdp(
  t: TestContext,
  url: string,
  extra: Record<string, unknown> = {},
  mapping = 'standard',
): HttpPdpAuthorizer {
  const config = parseAuthzConfig({
    version: '1.0',
    type: 'httpv1',
    pdp: { http: { url, timeout: 2, ...extra }, claim_mapping: mapping },
  }) as HttpAuthzConfig;
  const authorizer = new HttpPdpAuthorizer(config, 'github');
  t.after(() => authorizer.close());
  return authorizer;
}

const REQUEST: AuthzRequest = {
  claims: { sub: 'alice', roles: ['dev'], groups: ['eng'], scope: 'repo read', email: 'alice@example.com' },
  localUser: false,
  feature: 'prompt',
  resourceId: 'summarize',
  arguments: { topic: 'x' },
};

test('POST <url>/decision with the PORC body (standard mapping, no context flags) and JSON headers', async (t) => {
  const seen: Array<{
    porc: Record<string, unknown>;
    headers: IncomingMessage['headers'];
    url: string | undefined;
  }> = [];
  const port = await serve(t, createHttpServer(), (porc, req, res) => {
    seen.push({ porc, headers: req.headers, url: req.url });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"allow":true}');
  });
  const decision = await pdp(t, `http://127.0.0.1:${port}`).authorize(REQUEST);
  assert.equal(decision.allow, true);
  assert.equal(seen[0]?.url, '/decision');
  assert.equal(seen[0]?.headers['content-type'], 'application/json');
  assert.equal(seen[0]?.headers['accept'], 'application/json');
  assert.deepEqual(seen[0]?.porc, {
    principal: { sub: 'alice', roles: ['dev'], groups: ['eng'], scopes: 'repo read' },
    operation: 'mcp:prompt:get',
    resource: 'mrn:mcp:github:prompt:summarize',
    context: {},
  });
});

test('mpe mapping (mroles from roles, mgroups from groups, mannotations default {})', async (t) => {
  let principal: unknown;
  const port = await serve(t, createHttpServer(), (porc, _req, res) => {
    principal = porc['principal'];
    res.writeHead(200).end('{"allow":false}');
  });
  const decision = await pdp(t, `http://127.0.0.1:${port}/`, {}, 'mpe').authorize({
    ...REQUEST,
    claims: { sub: 'alice', mroles: ['m'], roles: ['r'], groups: ['g'], clearance: 'secret' },
  });
  assert.equal(decision.allow, false);
  assert.match(decision.reason, /denied/);
  assert.deepEqual(principal, {
    sub: 'alice',
    mroles: ['m'],
    mgroups: ['g'],
    mclearance: 'secret',
    mannotations: {},
  });
});

test('only HTTP 200 with a boolean "allow" is an answer: other statuses, redirects and bodies deny', async (t) => {
  const answers: Array<(res: ServerResponse) => void> = [
    (res) => res.writeHead(500).end('{"allow":true}'),
    (res) => res.writeHead(302, { location: '/elsewhere' }).end(),
    (res) => res.writeHead(200).end('not json'),
    (res) => res.writeHead(200).end('{"allow":"yes"}'),
    (res) => res.writeHead(200).end('null'),
    (res) => res.writeHead(201).end('{"allow":true}'),
  ];
  let i = 0;
  const port = await serve(t, createHttpServer(), (_porc, _req, res) => answers[i++]?.(res));
  const authorizer = pdp(t, `http://127.0.0.1:${port}`);
  const reasons: string[] = [];
  for (let n = 0; n < answers.length; n++) {
    const d = await authorizer.authorize(REQUEST);
    assert.equal(d.allow, false, `answer ${n}`);
    reasons.push(d.reason);
  }
  assert.match(reasons[0] ?? '', /HTTP 500/);
  assert.match(reasons[1] ?? '', /HTTP 302/);
  assert.match(reasons[2] ?? '', /not JSON/);
  assert.match(reasons[3] ?? '', /no boolean "allow"/);
});

test('TLS: an untrusted certificate denies; insecure_skip_verify accepts it', async (t) => {
  const dir = tempHome(t, 'skep-pdp-tls-').dir;
  const tls = makeTlsFiles(dir);
  const port = await serve(
    t,
    createHttpsServer({ cert: readFileSync(tls.cert), key: readFileSync(tls.key) }),
    (_porc, _req, res) => res.writeHead(200).end('{"allow":true}'),
  );
  const url = `https://127.0.0.1:${port}`;
  const strict = await pdp(t, url).authorize(REQUEST);
  assert.equal(strict.allow, false);
  assert.match(strict.reason, /unreachable: .*certificate/);
  assert.equal((await pdp(t, url, { insecure_skip_verify: true }).authorize(REQUEST)).allow, true);
});

test('outbound address policy: the configured loopback host is allowed; link-local/metadata addresses are never contacted', async (t) => {
  const d = await pdp(t, 'http://169.254.169.254/latest').authorize(REQUEST);
  assert.equal(d.allow, false);
  assert.match(d.reason, /link-local or cloud metadata address/);
});

test('a closed authorizer denies without calling', async (t) => {
  let calls = 0;
  const port = await serve(t, createHttpServer(), (_porc, _req, res) => {
    calls++;
    res.writeHead(200).end('{"allow":true}');
  });
  const authorizer = pdp(t, `http://127.0.0.1:${port}`);
  await authorizer.close();
  await authorizer.close();
  assert.equal((await authorizer.authorize(REQUEST)).allow, false);
  assert.equal(calls, 0);
});
