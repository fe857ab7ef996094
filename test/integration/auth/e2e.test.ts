/**
 * End to end through real parts: tokens from oidc-provider (client_credentials, and its
 * RFC 8693 grant), Skep's proxy with the chain built from a run configuration, and an MCP SDK
 * streamable-HTTP server behind it that records what it receives.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  captureLogs,
  connectClient,
  EXCHANGER,
  PROXY_AUDIENCE,
  serveThroughProxy,
  startIdp,
  startRemoteMcp,
  textOf,
} from './harness.js';

const REMOTE_AUDIENCE = 'https://remote.skep.test/mcp';

function oidcConfig(issuer: string) {
  return { issuer, audience: PROXY_AUDIENCE, insecureAllowHTTP: true, resourceURL: PROXY_AUDIENCE };
}

test(
  'inbound OIDC: RFC 6750 §3 challenge without a token, RFC 9728 metadata, invalid_token for a bad one, access with a real JWT',
  {
    timeout: 60_000,
  },
  async (t) => {
    const idp = await startIdp(t);
    const remote = await startRemoteMcp(t);
    const { logger } = captureLogs();
    const { proxy } = await serveThroughProxy(t, remote, { oidc_config: oidcConfig(idp.issuer) }, { logger });

    const anonymous = await fetch(`${proxy.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    assert.equal(anonymous.status, 401);
    const challenge = anonymous.headers.get('www-authenticate') ?? '';
    assert.match(challenge, /^Bearer /);
    assert.match(
      challenge,
      /resource_metadata="https:\/\/proxy\.skep\.test\/\.well-known\/oauth-protected-resource\/mcp"/,
    );
    assert.doesNotMatch(challenge, /error=/, 'RFC 6750 §3.1: no error code when no credentials were sent');

    const metadata = await fetch(`${proxy.url}/.well-known/oauth-protected-resource/mcp`);
    assert.equal(metadata.status, 200);
    assert.deepEqual(await metadata.json(), {
      resource: PROXY_AUDIENCE,
      authorization_servers: [idp.issuer],
      bearer_methods_supported: ['header'],
    });

    const wrongAudience = await idp.clientToken('https://other.skep.test/mcp');
    const rejected = await fetch(`${proxy.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${wrongAudience}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    assert.equal(rejected.status, 401);
    assert.match(rejected.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
    assert.equal(remote.seen.length, 0, 'nothing reached the remote server');

    const client = await connectClient(t, proxy.url, await idp.clientToken());
    const tools = await client.listTools();
    assert.deepEqual(tools.tools.map((x) => x.name).sort(), ['echo', 'whoami']);
    // The client's own token is never passed on to the remote server.
    assert.equal(textOf(await client.callTool({ name: 'whoami', arguments: {} })), '(none)');
  },
);

test(
  'tokenExchange (RFC 8693 §2.1): the remote server receives a token for its audience; one exchange per subject token (cache)',
  {
    timeout: 60_000,
  },
  async (t) => {
    const idp = await startIdp(t);
    const remote = await startRemoteMcp(t);
    const { logger, lines } = captureLogs();
    const secrets = new Map([['exchanger-secret', EXCHANGER.secret]]);
    const { proxy } = await serveThroughProxy(
      t,
      remote,
      {
        oidc_config: oidcConfig(idp.issuer),
        token_exchange_config: {
          token_url: `${idp.issuer}/token`,
          client_id: EXCHANGER.id,
          client_secret: 'exchanger-secret,target=TE_SECRET',
          audience: REMOTE_AUDIENCE,
          scopes: ['mcp:tools'],
        },
      },
      { logger, secretLookup: async (name) => secrets.get(name) },
    );
    const subject = await idp.clientToken();
    const client = await connectClient(t, proxy.url, subject);
    const auth = textOf(await client.callTool({ name: 'whoami', arguments: {} }));
    await client.callTool({ name: 'echo', arguments: {} });
    assert.match(auth, /^Bearer /);
    const exchanged = auth.slice(7);
    assert.notEqual(exchanged, subject);
    const claims = await idp.verify(exchanged, REMOTE_AUDIENCE);
    assert.equal(claims['sub'], (await idp.verify(subject, PROXY_AUDIENCE))['sub']);
    assert.deepEqual(
      claims['act'],
      { sub: EXCHANGER.id },
      'RFC 8693 §4.1: the exchanging client is the actor',
    );
    // initialize, notifications/initialized, tools/call ×2 …: many requests, one exchange.
    assert.ok(remote.seen.length >= 4);
    assert.equal(idp.exchanges.length, 1);
    assert.deepEqual(idp.exchanges[0], {
      audience: REMOTE_AUDIENCE,
      scope: 'mcp:tools',
      clientId: EXCHANGER.id,
    });
    for (const r of remote.seen) assert.equal(r.headers['authorization'], auth);
    // A second caller (different subject token) gets its own exchange.
    const other = await connectClient(t, proxy.url, await idp.clientToken());
    await other.callTool({ name: 'echo', arguments: {} });
    assert.equal(idp.exchanges.length, 2);

    const log = lines.join('');
    for (const secret of [EXCHANGER.secret, subject, exchanged])
      assert.ok(!log.includes(secret), 'no secret or token in logs');
  },
);

test(
  'tokenExchange: a refused exchange is a clear 401 and nothing reaches the remote server',
  {
    timeout: 60_000,
  },
  async (t) => {
    const idp = await startIdp(t);
    const remote = await startRemoteMcp(t);
    const { logger, lines } = captureLogs();
    const { proxy } = await serveThroughProxy(
      t,
      remote,
      {
        oidc_config: oidcConfig(idp.issuer),
        token_exchange_config: {
          token_url: `${idp.issuer}/token`,
          client_id: EXCHANGER.id,
          client_secret: 'wrong-secret-value-123',
          audience: REMOTE_AUDIENCE,
        },
      },
      { logger },
    );
    const token = await idp.clientToken();
    const res = await fetch(`${proxy.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    assert.equal(res.status, 401);
    assert.equal(await res.text(), 'Token exchange failed');
    assert.match(res.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
    assert.equal(remote.seen.length, 0);
    const log = lines.join('');
    assert.match(log, /token exchange failed/);
    assert.ok(!log.includes('wrong-secret-value-123') && !log.includes(token));
  },
);

test(
  'tokenExchange with external_token_header_name: the exchanged token travels in that header',
  {
    timeout: 60_000,
  },
  async (t) => {
    const idp = await startIdp(t);
    const remote = await startRemoteMcp(t);
    const { logger } = captureLogs();
    const { proxy } = await serveThroughProxy(
      t,
      remote,
      {
        oidc_config: oidcConfig(idp.issuer),
        token_exchange_config: {
          token_url: `${idp.issuer}/token`,
          client_id: EXCHANGER.id,
          client_secret: EXCHANGER.secret,
          audience: REMOTE_AUDIENCE,
          external_token_header_name: 'X-Upstream-Token',
        },
      },
      { logger },
    );
    const subject = await idp.clientToken();
    const client = await connectClient(t, proxy.url, subject);
    await client.callTool({ name: 'echo', arguments: {} });
    const last = remote.seen.at(-1);
    assert.ok(last);
    await idp.verify((last.headers['x-upstream-token'] ?? '').slice(7), REMOTE_AUDIENCE);
    assert.equal(last.headers['authorization'], `Bearer ${subject}`);
  },
);

test(
  'headerInjection, header_forward and bearerToken: headers from secrets and plaintext reach the remote server; values never logged',
  {
    timeout: 60_000,
  },
  async (t) => {
    const remote = await startRemoteMcp(t);
    const { logger, lines } = captureLogs();
    const secrets = new Map([
      ['api-key', 'sk-live-9f8e7d6c5b4a'],
      ['remote-token', 'remote-bearer-1a2b3c4d5e'],
    ]);
    const runConfig = {
      header_forward: {
        add_plaintext_headers: { 'X-Tenant': 'acme' },
        add_headers_from_secret: { 'X-Api-Key': 'api-key' },
      },
      remote_auth_config: { bearer_token: 'remote-token,target=bearer_token' },
    };
    const { proxy, chain, config } = await serveThroughProxy(t, remote, runConfig, {
      logger,
      secretLookup: async (name) => secrets.get(name),
    });
    // One stage per type: the bearer token is remote-auth; plaintext and secret headers are one header-forward.
    assert.deepEqual(chain.names, ['remote-auth', 'header-forward']);
    const client = await connectClient(t, proxy.url);
    assert.equal(
      textOf(await client.callTool({ name: 'whoami', arguments: {} })),
      'Bearer remote-bearer-1a2b3c4d5e',
    );
    for (const r of remote.seen) {
      assert.equal(r.headers['x-tenant'], 'acme');
      assert.equal(r.headers['x-api-key'], 'sk-live-9f8e7d6c5b4a');
    }
    // Exports hold the references only; logs hold no value.
    const exported = JSON.stringify(config);
    const log = lines.join('');
    for (const value of secrets.values()) {
      assert.ok(!exported.includes(value), 'secret value in the run configuration');
      assert.ok(!log.includes(value), 'secret value in the logs');
    }
  },
);

test('a missing secret fails the pipeline with secret_not_found naming the secret, not a value', async () => {
  const { logger } = captureLogs();
  const { buildPipeline } = await import('../../../src/dataplane/pipeline/index.js');
  const { parseRunConfig } = await import('../../../src/workloads/index.js');
  const config = parseRunConfig({
    name: 'w',
    image: '',
    remote_url: 'http://127.0.0.1:9/mcp',
    header_forward: { add_headers_from_secret: { 'X-Api-Key': 'nope' } },
  });
  await assert.rejects(
    buildPipeline(config, { logger, secretLookup: async () => undefined }),
    (err: Error) => {
      assert.equal((err as { code?: string }).code, 'secret_not_found');
      assert.match(err.message, /"nope"/);
      return true;
    },
  );
  const restricted = parseRunConfig({
    name: 'w',
    image: '',
    remote_url: 'http://127.0.0.1:9/mcp',
    header_forward: { add_plaintext_headers: { Host: 'evil' } },
  });
  await assert.rejects(
    buildPipeline(restricted, { logger, secretLookup: async () => undefined }),
    /restricted/,
  );
});

test(
  'unauthenticated: empty chain; tools_filter and tools_override keep working behind the auth chain',
  {
    timeout: 60_000,
  },
  async (t) => {
    const idp = await startIdp(t);
    const remote = await startRemoteMcp(t);
    const { logger } = captureLogs();
    const plain = await serveThroughProxy(t, remote, {}, { logger });
    assert.deepEqual(plain.chain.names, []);
    const anon = await connectClient(t, plain.proxy.url);
    assert.equal((await anon.listTools()).tools.length, 2);

    const filtered = await serveThroughProxy(
      t,
      remote,
      {
        oidc_config: oidcConfig(idp.issuer),
        token_exchange_config: {
          token_url: `${idp.issuer}/token`,
          client_id: EXCHANGER.id,
          client_secret: EXCHANGER.secret,
          audience: REMOTE_AUDIENCE,
        },
      },
      { logger },
      { toolsFilter: ['who'], toolsOverride: { whoami: { name: 'who', description: 'renamed' } } },
    );
    const client = await connectClient(t, filtered.proxy.url, await idp.clientToken());
    const tools = await client.listTools();
    assert.deepEqual(
      tools.tools.map((x) => [x.name, x.description]),
      [['who', 'renamed']],
    );
    const auth = textOf(await client.callTool({ name: 'who', arguments: {} }));
    await idp.verify(auth.slice(7), REMOTE_AUDIENCE);
  },
);
