/**
 * upstreamInject with the real embedded authorization server (logged in through a real
 * oidc-provider upstream, pages driven over HTTP), and the remote health watch against real
 * sockets: a remote server that is down at first is retried with backoff until it comes up.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { test } from 'node:test';
import { probeRemote, watchRemote } from '../../../src/dataplane/middleware/auth/index.js';
import {
  authorize,
  baseConfig,
  callResource,
  mountAuthServer,
  registerClient,
  startHost,
  startUpstream,
} from '../authserver/harness.js';
import {
  captureLogs,
  closeServer,
  connectClient,
  listen,
  serveThroughProxy,
  startRemoteMcp,
  textOf,
} from './harness.js';

test(
  'upstreamInject: the embedded AS session token is verified and the upstream IdP token reaches the remote server',
  {
    timeout: 120_000,
  },
  async (t) => {
    const host = await startHost(t);
    const upstream = await startUpstream(t, [host.callbackUrl]);
    const auth = await mountAuthServer(host, baseConfig(host, upstream));
    const session = await registerClient(host);
    const tokens = await authorize(session);
    // What the host's protected resource reports as the upstream token for this session.
    const expected = JSON.parse((await callResource(host, tokens.access_token)).body) as { upstream: string };

    const remote = await startRemoteMcp(t);
    const { logger, lines } = captureLogs();
    const served = await serveThroughProxy(
      t,
      remote,
      {
        embedded_auth_server_config: { issuer: host.url },
        oidc_config: { resourceURL: host.resource },
        upstream_swap_config: { provider_name: 'idp' },
      },
      { logger, authServer: auth, resourceUrl: host.resource },
    );
    assert.deepEqual(served.chain.names, ['auth', 'upstreamswap']);
    const client = await connectClient(t, served.proxy.url, tokens.access_token);
    assert.equal(
      textOf(await client.callTool({ name: 'whoami', arguments: {} })),
      `Bearer ${expected.upstream}`,
    );
    assert.notEqual(expected.upstream, tokens.access_token);

    const bad = await fetch(`${served.proxy.url}/mcp`, {
      method: 'POST',
      headers: { authorization: 'Bearer not-a-token', 'content-type': 'application/json' },
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    });
    assert.equal(bad.status, 401);
    const log = lines.join('');
    assert.ok(!log.includes(expected.upstream) && !log.includes(tokens.access_token));
  },
);

test(
  'remote health: unreachable → retries with growing backoff, never gives up; healthy once the server listens',
  {
    timeout: 60_000,
  },
  async (t) => {
    // Reserve a port, then free it: the remote server is "down" at that address.
    const probe = createServer();
    const origin = await listen(probe);
    await closeServer(probe);
    const url = `${origin}/mcp`;
    assert.match((await probeRemote(url, 'streamable-http')) ?? '', /unreachable/);

    const abort = new AbortController();
    t.after(() => abort.abort());
    const delays: number[] = [];
    let healthy = 0;
    let server: ReturnType<typeof createServer> | undefined;
    const done = new Promise<void>((resolve) => {
      void watchRemote({
        url,
        transport: 'streamable-http',
        signal: abort.signal,
        policy: { initialDelayMs: 20, maxDelayMs: 80, intervalMs: 60_000 },
        async onHealthy() {
          healthy++;
          resolve();
        },
        onUnhealthy(_reason, retryInMs, failures) {
          delays.push(retryInMs);
          if (failures === 4) {
            // Bring the server up on the same port after a few failures.
            server = createServer((req, res) => {
              req.resume();
              res.writeHead(401).end();
            });
            server.listen(Number(new URL(origin).port), '127.0.0.1');
          }
        },
      });
    });
    await done;
    abort.abort();
    if (server) await closeServer(server);
    assert.equal(healthy, 1);
    assert.deepEqual(delays.slice(0, 4), [20, 40, 80, 80], 'capped exponential backoff');
    // A 401 is a reachable server (it just wants credentials).
  },
);
