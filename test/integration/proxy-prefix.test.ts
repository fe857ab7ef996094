/**
 * `X-Forwarded-Prefix` behind `trust_proxy_headers`, through real runners (in this process) over
 * server-everything on stdio with inbound OIDC: a path-stripping relay stands in for an ingress
 * that serves the workload under `/team-a` and says so in `X-Forwarded-Prefix` (and its own
 * origin in `X-Forwarded-Host`). The SSE `endpoint` event (MCP 2024-11-05 "HTTP with SSE"), the
 * 401's RFC 9728 `resource_metadata` and the metadata's `resource` name the URL the client came
 * through; a malformed header, and any header without trust, is ignored. Also through the
 * transparent relay of an SSE server.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { freePort } from '../helpers/net.js';
import { startPathRelay } from '../helpers/path-relay.js';
import { loggedLine, printed, proxyFor } from './proxy/helpers.js';
import { lab } from './vmcp/helpers.js';
import { EVERYTHING_ENTRY } from './workloads/helpers.js';

const AUDIENCE = 'prefix-test';

interface Idp {
  issuer: string;
  jwksUrl: string;
  sign(): Promise<string>;
}

/** An OIDC issuer on loopback: its JWKS, and tokens signed with its key. */
async function idp(t: TestContext): Promise<Idp> {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const server = createServer((req, res) => {
    if (req.url !== '/jwks') return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    jwksUrl: `${issuer}/jwks`,
    sign: () =>
      new SignJWT({ sub: 'alice' })
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setIssuer(issuer)
        .setAudience(AUDIENCE)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey),
  };
}

const protectedEverything = (name: string, issuer: Idp, extra: Record<string, unknown>) => ({
  schema_version: 'v0.1.0',
  name,
  image: `cmd://${process.execPath}`,
  cmd_args: [EVERYTHING_ENTRY, 'stdio'],
  transport: 'stdio',
  oidc_config: { issuer: issuer.issuer, jwksurl: issuer.jwksUrl, audience: AUDIENCE },
  ...extra,
});

/** `resource_metadata` of a 401's RFC 6750 challenge. */
async function challengedMetadataUrl(url: string): Promise<string> {
  const res = await fetch(url);
  await res.body?.cancel();
  assert.equal(res.status, 401);
  const m = /resource_metadata="([^"]+)"/.exec(res.headers.get('www-authenticate') ?? '');
  assert.ok(m, `a resource_metadata in ${res.headers.get('www-authenticate')}`);
  return m[1]!;
}

/** The first SSE event of `GET url` (the `endpoint` event), as text. */
async function firstEvent(url: string, headers: Record<string, string> = {}): Promise<string> {
  const abort = new AbortController();
  const res = await fetch(url, { headers, signal: abort.signal });
  assert.equal(res.status, 200);
  const reader = res.body!.getReader();
  let text = '';
  while (!text.includes('\n\n')) text += new TextDecoder().decode((await reader.read()).value);
  abort.abort();
  return text;
}

test(
  'trust_proxy_headers: X-Forwarded-Prefix is in the SSE endpoint event, the 401 resource_metadata and the RFC 9728 resource; malformed ones are ignored',
  { timeout: 120_000 },
  async (t) => {
    const issuer = await idp(t);
    const l = lab(t);
    await l.manager.createFromConfig(protectedEverything('behind', issuer, { trust_proxy_headers: true }));
    await l.run('behind');
    const direct = new URL(l.url('behind', '/sse'));
    const forwarded: Record<string, string> = { 'x-forwarded-prefix': '/team-a' };
    const relay = await startPathRelay(t, '/team-a', direct.origin, forwarded);
    const relayOrigin = new URL(relay.url).origin;
    forwarded['x-forwarded-host'] = new URL(relay.url).host;
    forwarded['x-forwarded-proto'] = 'http';

    // Without a token: the challenge names the metadata under the prefix, on the ingress's origin.
    const metadataUrl = await challengedMetadataUrl(`${relay.url}/sse${direct.search}`);
    assert.equal(metadataUrl, `${relay.url}/.well-known/oauth-protected-resource/mcp`);
    const metadata = await fetch(metadataUrl);
    assert.equal(metadata.status, 200);
    assert.match(metadata.headers.get('vary') ?? '', /X-Forwarded-Prefix/);
    const doc = (await metadata.json()) as { resource: string; authorization_servers: string[] };
    assert.equal(doc.resource, `${relay.url}/mcp`);
    assert.deepEqual(doc.authorization_servers, [issuer.issuer]);

    // With a valid JWT the SDK's SSE client works through the ingress, posting under the prefix.
    const authorization = `Bearer ${await issuer.sign()}`;
    const client = new Client({ name: 'proxy-prefix-test', version: '1.0.0' });
    await client.connect(
      new SSEClientTransport(new URL(`${relay.url}/sse${direct.search}`), {
        requestInit: { headers: { authorization } },
      }),
    );
    t.after(() => client.close());
    const result = (await client.callTool({ name: 'echo', arguments: { message: 'via ingress' } })) as {
      content: Array<{ text: string }>;
    };
    assert.equal(result.content[0]?.text, 'Echo: via ingress');
    assert.ok(
      relay.paths.some((p) => p.startsWith('/team-a/messages?session_id=')),
      `the client posted under the prefix: ${relay.paths.join(', ')}`,
    );

    // An ingress that names the stream's whole path means the prefix before it (as the reference reads it).
    forwarded['x-forwarded-prefix'] = '/team-a/sse';
    assert.match(
      await firstEvent(`${relay.url}/sse${direct.search}`, { authorization }),
      /^event: endpoint\ndata: \/team-a\/messages\?session_id=[\w-]+\n\n/,
    );

    // Malformed prefixes are ignored (no prefix), never repaired into a URL elsewhere.
    for (const bad of [
      '//evil.example/x',
      'https://evil.example',
      'team-a',
      '/a?b=c',
      '/a#f',
      '/a/../b',
      '/a//b',
      '/a\tb',
      '/a b',
    ]) {
      forwarded['x-forwarded-prefix'] = bad;
      assert.match(
        await firstEvent(`${relay.url}/sse${direct.search}`, { authorization }),
        /^event: endpoint\ndata: \/messages\?session_id=[\w-]+\n\n/,
        JSON.stringify(bad),
      );
      assert.equal(
        await challengedMetadataUrl(`${relay.url}/sse${direct.search}`),
        `${relayOrigin}/.well-known/oauth-protected-resource/mcp`,
        JSON.stringify(bad),
      );
    }
    // A malformed host is ignored too: the runner's own origin is named.
    forwarded['x-forwarded-prefix'] = '/team-a';
    for (const bad of ['evil.example/x', 'user@evil.example', 'evil.example:99999']) {
      forwarded['x-forwarded-host'] = bad;
      assert.equal(
        await challengedMetadataUrl(`${relay.url}/sse${direct.search}`),
        `${direct.origin}/team-a/.well-known/oauth-protected-resource/mcp`,
        JSON.stringify(bad),
      );
    }
  },
);

test(
  'without trust_proxy_headers X-Forwarded-* is ignored; endpoint_prefix wins over X-Forwarded-Prefix',
  { timeout: 120_000 },
  async (t) => {
    const issuer = await idp(t);
    const l = lab(t);
    await l.manager.createFromConfig(protectedEverything('untrusted', issuer, {}));
    await l.manager.createFromConfig(
      protectedEverything('fixed', issuer, { trust_proxy_headers: true, endpoint_prefix: '/fixed' }),
    );
    await Promise.all([l.run('untrusted'), l.run('fixed')]);
    const authorization = `Bearer ${await issuer.sign()}`;

    const direct = new URL(l.url('untrusted', '/sse'));
    const forwarded = { 'x-forwarded-prefix': '/team-a', 'x-forwarded-host': 'gw.example.com' };
    const relay = await startPathRelay(t, '/team-a', direct.origin, forwarded);
    assert.match(
      await firstEvent(`${relay.url}/sse${direct.search}`, { authorization }),
      /^event: endpoint\ndata: \/messages\?session_id=[\w-]+\n\n/,
    );
    const metadataUrl = await challengedMetadataUrl(`${relay.url}/sse${direct.search}`);
    assert.equal(metadataUrl, `${direct.origin}/.well-known/oauth-protected-resource/mcp`);
    const doc = (await (await fetch(`${relay.url}/.well-known/oauth-protected-resource/mcp`)).json()) as {
      resource: string;
    };
    assert.equal(doc.resource, `${direct.origin}/mcp`);

    const fixed = new URL(l.url('fixed', '/sse'));
    const fixedRelay = await startPathRelay(t, '/fixed', fixed.origin, { 'x-forwarded-prefix': '/team-a' });
    assert.match(
      await firstEvent(`${fixedRelay.url}/sse${fixed.search}`, { authorization }),
      /^event: endpoint\ndata: \/fixed\/messages\?session_id=[\w-]+\n\n/,
    );
    assert.equal(
      await challengedMetadataUrl(`${fixedRelay.url}/sse${fixed.search}`),
      `${fixed.origin}/fixed/.well-known/oauth-protected-resource/mcp`,
    );
  },
);

test('transparent SSE relay: the endpoint event follows a trusted X-Forwarded-Prefix; a malformed one is logged once at debug and ignored', async (t) => {
  const port = await freePort();
  const child = spawn(process.execPath, [EVERYTHING_ENTRY, 'sse'], {
    env: { ...process.env, PORT: String(port) },
  });
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  await printed(child, /running on port/);
  const { logger, logged } = loggedLine('ignored a malformed forwarded header');
  const proxy = await proxyFor(t, undefined, {
    upstream: { kind: 'http', url: `http://127.0.0.1:${port}/sse`, transport: 'sse' },
    trustProxyHeaders: true,
    logger,
  });
  assert.match(
    await firstEvent(`${proxy.url}/sse`, { 'x-forwarded-prefix': '/team-b/' }),
    /^event: endpoint\ndata: \/team-b\/messages\?session_id=[\w-]+\n\n/,
  );
  assert.match(
    await firstEvent(`${proxy.url}/sse`, { 'x-forwarded-prefix': '//evil.example' }),
    /^event: endpoint\ndata: \/messages\?session_id=[\w-]+\n\n/,
  );
  await logged;

  const forwarded = { 'x-forwarded-prefix': '/team-b' };
  const relay = await startPathRelay(t, '/team-b', proxy.url, forwarded);
  const client = new Client({ name: 'proxy-prefix-test', version: '1.0.0' });
  await client.connect(new SSEClientTransport(new URL(`${relay.url}/sse`)));
  t.after(() => client.close());
  const result = (await client.callTool({ name: 'echo', arguments: { message: 'relayed' } })) as {
    content: Array<{ text: string }>;
  };
  assert.equal(result.content[0]?.text, 'Echo: relayed');
  assert.ok(
    relay.paths.some((p) => p.startsWith('/team-b/messages?session_id=')),
    relay.paths.join(', '),
  );
});
