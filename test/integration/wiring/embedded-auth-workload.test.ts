/**
 * The embedded OAuth 2.1 authorization server in a real workload (ToolHive's
 * `embedded_auth_server_config` / `upstream_swap_config`, and the CRD's `embeddedAuthServer` /
 * `upstreamInject`). A workload is created through the WorkloadManager with a RunConfig naming an
 * `oidc` upstream (a real `oidc-provider` on loopback); its detached runner mounts the
 * authorization server on the workload's proxy. A real OAuth client (oauth4webapi) then runs
 * metadata → register → authorize → Skep's consent page (approved) → upstream login (driven over
 * HTTP) → callback → token against the proxy URL, and the official MCP SDK client uses the token
 * through the proxy. The issuer is left unset: it defaults to the proxy's origin, and
 * `allowed_audiences` to its `/mcp` URL. The last test pins the proxy's `handlers` hook itself
 * (what a mounted handler is and is not offered).
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { generateKeyPair, SignJWT } from 'jose';
import * as oauth from 'oauth4webapi';
import type { ApiContext } from '../../../src/control/app/index.js';
import { startProxy } from '../../../src/dataplane/proxy/index.js';
import { runnerAlive } from '../../../src/workloads/index.js';
import { connectClient, startRemoteMcp, textOf } from '../auth/harness.js';
import {
  authorize,
  type Host,
  registerClient,
  startUpstream,
  UPSTREAM_CLIENT_ID,
  UPSTREAM_CLIENT_SECRET,
  UPSTREAM_SCOPES,
  type Upstream,
} from '../authserver/harness.js';
import { EVERYTHING_ENTRY, waitFor, waitForStatus, workloadApp } from '../workloads/helpers.js';
import { freePort } from '../../helpers/net.js';

/** The `embedded_auth_server_config` block: one oidc upstream, secret read from a file. */
function embeddedConfig(upstream: Upstream, secretFile: string): Record<string, unknown> {
  return {
    scopes_supported: UPSTREAM_SCOPES,
    upstreams: [
      {
        name: 'idp',
        type: 'oidc',
        oidc_config: {
          issuer_url: upstream.issuer,
          client_id: UPSTREAM_CLIENT_ID,
          client_secret_file: secretFile,
          scopes: UPSTREAM_SCOPES,
          // oidc-provider grants offline_access (a refresh token) only after consent.
          additional_authorization_params: { prompt: 'consent' },
          // The test provider is plain http on loopback.
          insecure_allow_http: true,
        },
      },
    ],
  };
}

interface Prepared {
  ctx: ApiContext;
  port: number;
  origin: string;
  upstream: Upstream;
  secretFile: string;
}

/**
 * The proxy port is chosen before the workload exists: the upstream must know the callback
 * (`<issuer>/oauth/callback`, exact redirect-URI matching) before the first login.
 */
async function prepare(t: TestContext): Promise<Prepared> {
  const { ctx, home } = await workloadApp(t);
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const upstream = await startUpstream(t, [`${origin}/oauth/callback`]);
  const secretFile = join(home.dir, 'upstream-client-secret');
  writeFileSync(secretFile, `${UPSTREAM_CLIENT_SECRET}\n`, { mode: 0o600 });
  return { ctx, port, origin, upstream, secretFile };
}

async function waitRunning(ctx: ApiContext, name: string): Promise<void> {
  try {
    await waitForStatus(ctx, name, 'running');
  } catch (err) {
    throw new Error(`${(err as Error).message}\nrunner log:\n${ctx.workloads.proxyLogs(name, 60)}`, {
      cause: err,
    });
  }
}

/** The OAuth flow a client runs knowing only the workload URL (RFC 9728 → RFC 8414 → RFC 7591). */
async function login(origin: string): Promise<{ accessToken: string; as: oauth.AuthorizationServer }> {
  const unauth = await fetch(`${origin}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  });
  assert.equal(unauth.status, 401);
  const challenge = unauth.headers.get('www-authenticate') ?? '';
  const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
  assert.equal(metadataUrl, `${origin}/.well-known/oauth-protected-resource/mcp`, challenge);
  const prm = (await (await fetch(metadataUrl)).json()) as {
    resource: string;
    authorization_servers: string[];
  };
  assert.equal(prm.resource, `${origin}/mcp`);
  assert.deepEqual(prm.authorization_servers, [origin], 'the issuer defaults to the proxy origin');

  // registerClient/authorize only read `url` (the issuer) from the host they are given.
  const session = await registerClient({ url: prm.authorization_servers[0] } as Host);
  assert.equal(session.as.issuer, origin);
  assert.equal(session.as.token_endpoint, `${origin}/oauth/token`);
  // Skep's consent page (against a confused deputy) is served, and approved, through the proxy.
  const consentPages: string[] = [];
  const tokens = await authorize(session, 'alice', {
    onConsentPage: (page) => consentPages.push(page.action),
  });
  assert.deepEqual(consentPages, [`${origin}/oauth/consent`]);
  return { accessToken: tokens.access_token, as: session.as };
}

function decodeClaims(jwt: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(jwt.split('.')[1] as string, 'base64url').toString('utf8'));
}

async function postPing(origin: string, token: string): Promise<Response> {
  return fetch(`${origin}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  });
}

test(
  'embeddedAuthServer on a stdio workload: OAuth 2.1 flow against the proxy URL, SDK client lists tools with the token, no/forged token → 401',
  {
    timeout: 240_000,
  },
  async (t) => {
    const { ctx, port, origin, upstream, secretFile } = await prepare(t);
    const created = await ctx.workloads.createFromConfig(
      {
        name: 'guarded',
        image: `cmd://${process.execPath}`,
        cmd_args: [EVERYTHING_ENTRY, 'stdio'],
        transport: 'stdio',
        embedded_auth_server_config: embeddedConfig(upstream, secretFile),
      },
      { port },
    );
    assert.equal(created.port, port);
    await waitRunning(ctx, 'guarded');

    // The AS endpoints are public (no token): RFC 8414 metadata, the OIDC alias and JWKS.
    const meta = (await (await fetch(`${origin}/.well-known/oauth-authorization-server`)).json()) as Record<
      string,
      unknown
    >;
    assert.equal(meta['issuer'], origin);
    assert.deepEqual(meta['code_challenge_methods_supported'], ['S256']);
    const oidcMeta = (await (await fetch(`${origin}/.well-known/openid-configuration`)).json()) as Record<
      string,
      unknown
    >;
    assert.deepEqual(oidcMeta['subject_types_supported'], ['public']);
    const jwks = (await (await fetch(`${origin}/.well-known/jwks.json`)).json()) as { keys: unknown[] };
    assert.equal(jwks.keys.length, 1);

    const { accessToken } = await login(origin);
    const claims = decodeClaims(accessToken);
    assert.equal(claims['iss'], origin);
    assert.deepEqual(claims['aud'], [`${origin}/mcp`], 'RFC 8707: audience = the workload resource');
    assert.equal(claims['name'], 'User alice');

    const client = await connectClient(t, origin, accessToken);
    const { tools } = await client.listTools();
    assert.ok(
      tools.some((tool) => tool.name === 'echo'),
      'server-everything tools are listed',
    );
    assert.equal(
      textOf(await client.callTool({ name: 'echo', arguments: { message: 'through the AS' } })),
      'Echo: through the AS',
    );

    // RFC 6750 §3.1: no credentials → 401 with a challenge naming the RFC 9728 metadata, no error code.
    const none = await fetch(`${origin}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    assert.equal(none.status, 401);
    const noneChallenge = none.headers.get('www-authenticate') ?? '';
    assert.match(noneChallenge, /^Bearer /);
    assert.ok(
      noneChallenge.includes(`resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`),
      noneChallenge,
    );

    // Forged: the real token with its payload changed (signature no longer matches) ...
    const [h, , sig] = accessToken.split('.');
    const tampered = Buffer.from(JSON.stringify({ ...claims, sub: 'mallory' })).toString('base64url');
    // ... and a well-formed token with the right iss/aud, signed by a key the AS never had.
    const { privateKey } = await generateKeyPair('ES256');
    const selfSigned = await new SignJWT({ ...claims, sub: 'mallory' })
      .setProtectedHeader({ alg: 'ES256', kid: 'not-the-as-key' })
      .sign(privateKey);
    for (const forged of [`${h}.${tampered}.${sig}`, selfSigned, 'not-a-jwt']) {
      const res = await postPing(origin, forged);
      assert.equal(res.status, 401, `forged token accepted: ${forged.slice(0, 24)}…`);
      assert.match(res.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
      await res.arrayBuffer();
    }
    // The real token still works on a raw request (the 401s above were not a blanket refusal).
    const ok = await postPing(origin, accessToken);
    assert.notEqual(ok.status, 401);
    await ok.arrayBuffer();
  },
);

test(
  'upstreamInject on a remote workload: the remote SDK server receives the upstream provider token, never Skep’s',
  {
    timeout: 240_000,
  },
  async (t) => {
    const { ctx, port, origin, upstream, secretFile } = await prepare(t);
    const remote = await startRemoteMcp(t);
    await ctx.workloads.createFromConfig(
      {
        name: 'swapped',
        image: '',
        remote_url: remote.url,
        transport: 'streamable-http',
        embedded_auth_server_config: embeddedConfig(upstream, secretFile),
        upstream_swap_config: { provider_name: 'idp' },
      },
      { port },
    );
    await waitRunning(ctx, 'swapped');

    const { accessToken } = await login(origin);
    const client = await connectClient(t, origin, accessToken);
    const { tools } = await client.listTools();
    assert.ok(tools.some((tool) => tool.name === 'whoami'));
    const authorization = textOf(await client.callTool({ name: 'whoami', arguments: {} }));
    assert.match(authorization, /^Bearer \S+$/);
    const upstreamToken = authorization.slice('Bearer '.length);
    assert.notEqual(upstreamToken, accessToken);

    // It is a live token of the upstream provider for the user who logged in: its userinfo
    // endpoint (OIDC Core §5.3) answers for alice.
    const idp = await oauth.processDiscoveryResponse(
      new URL(upstream.issuer),
      await oauth.discoveryRequest(new URL(upstream.issuer), {
        algorithm: 'oidc',
        [oauth.allowInsecureRequests]: true,
      }),
    );
    const info = await fetch(idp.userinfo_endpoint as string, {
      headers: { authorization: `Bearer ${upstreamToken}` },
    });
    assert.equal(info.status, 200);
    assert.equal(((await info.json()) as { sub: string }).sub, 'alice');

    // The client's MCP requests reached the remote with the upstream token (the runner's own
    // health probes carry none); Skep's token never left the proxy.
    const mcpRequests = remote.seen.filter((r) => /"method":"tools\/(list|call)"/.test(r.body));
    assert.equal(mcpRequests.length, 2);
    for (const r of remote.seen) {
      assert.ok(!JSON.stringify(r.headers).includes(accessToken), 'the Skep access token reached the remote');
    }
    for (const r of mcpRequests) assert.equal(r.headers['authorization'], `Bearer ${upstreamToken}`);

    const forged = await postPing(origin, `${accessToken.slice(0, -4)}AAAA`);
    assert.equal(forged.status, 401);
    await forged.arrayBuffer();
  },
);

test(
  'a bad embedded_auth_server_config puts the workload in error with a clear status_context (no restart loop)',
  {
    timeout: 180_000,
  },
  async (t) => {
    const { ctx, port, upstream, secretFile } = await prepare(t);
    const config = embeddedConfig(upstream, secretFile);
    config['token_lifespans'] = { access_token_lifespan: '5s' };
    await ctx.workloads.createFromConfig(
      {
        name: 'misconfigured',
        image: `cmd://${process.execPath}`,
        cmd_args: [EVERYTHING_ENTRY, 'stdio'],
        transport: 'stdio',
        embedded_auth_server_config: config,
      },
      { port },
    );
    await waitForStatus(ctx, 'misconfigured', 'error');
    const { status_context } = ctx.workloads.status('misconfigured');
    assert.match(status_context, /embedded authorization server/);
    assert.match(status_context, /access_token_lifespan must be between 60s/);
    // The runner exits and stays down: a reconcile does not bring an `error` workload back.
    await waitFor('the runner to exit', () => {
      const row = ctx.workloads.rows.get('misconfigured');
      return row !== undefined && !runnerAlive(row.runnerPid, row.name) ? true : undefined;
    });
    assert.deepEqual(await ctx.workloads.reconcile(), []);
    assert.equal(ctx.workloads.status('misconfigured').status, 'error');

    // upstream_swap_config without the embedded server is refused the same way. It sets a
    // header of requests to an HTTP server (on a stdio server it is refused at create, as a
    // field with no effect), so this workload is a remote one; the runner stops before reaching it.
    await ctx.workloads.createFromConfig(
      {
        name: 'swap-alone',
        remote_url: 'http://127.0.0.1:1/mcp',
        transport: 'streamable-http',
        upstream_swap_config: { provider_name: 'idp' },
      },
      { port: await freePort() },
    );
    await waitForStatus(ctx, 'swap-alone', 'error');
    assert.match(ctx.workloads.status('swap-alone').status_context, /embedded_auth_server_config/);
  },
);

test("proxy handlers: offered only non-MCP paths, before the 404 and after middlewares' well-known documents", async (t) => {
  const offered: string[] = [];
  const proxy = await startProxy({
    port: 0,
    middlewares: [
      {
        name: 'deny-all',
        async handle() {
          return { status: 401, headers: { 'www-authenticate': 'Bearer' } };
        },
        wellKnown: (path) =>
          path === '/.well-known/oauth-protected-resource'
            ? { status: 200, body: { from: 'middleware' } }
            : undefined,
      },
    ],
    handlers: [
      async (req, res) => {
        offered.push(req.url ?? '');
        if (!req.url?.startsWith('/oauth/')) return false;
        res.writeHead(200, { 'content-type': 'text/plain' }).end('handled');
        return true;
      },
    ],
  });
  t.after(() => proxy.close());
  const get = (path: string, init?: RequestInit) => fetch(`${proxy.url}${path}`, init);

  const handled = await get('/oauth/token?x=1', { method: 'POST', body: 'a=b' });
  assert.equal(handled.status, 200, 'a handler answers without the middleware chain (no token needed)');
  assert.equal(await handled.text(), 'handled');
  const unclaimed = await get('/elsewhere');
  assert.equal(unclaimed.status, 404);
  await unclaimed.arrayBuffer();
  const doc = await get('/.well-known/oauth-protected-resource');
  assert.deepEqual(await doc.json(), { from: 'middleware' });
  for (const path of ['/mcp', '/sse', '/messages']) {
    const res = await get(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(res.status, 401, `${path} goes through the middleware chain`);
    await res.arrayBuffer();
  }
  const health = await get('/health');
  await health.arrayBuffer();
  assert.deepEqual(
    offered,
    ['/oauth/token?x=1', '/elsewhere'],
    'MCP endpoints and /health never reach a handler',
  );
});
