/**
 * A backend's upstream token (as ToolHive's vMCP picks it): a virtual workload with the embedded
 * authorization server and two upstream providers, and `upstream_inject` choosing the provider per
 * backend. Real parts: two `oidc-provider` upstreams on loopback; the virtual workload's runner
 * mounts the authorization server on its proxy, and a real OAuth client logs in through it (one
 * login walks both upstreams, the browser legs driven over HTTP); two team-fixture backends whose
 * own proxies take inbound OIDC from their own upstream only (RFC 7662 introspection of that
 * provider's opaque access tokens); the official MCP SDK client calls through the virtual endpoint.
 * With the providers crossed, both backends refuse. `token_exchange` takes its subject token from
 * the upstream `subjectProviderName` names, by default the first (both providers exchange only
 * their own live tokens, RFC 8693).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as oauth from 'oauth4webapi';
import { freePort } from '../../helpers/net.js';
import {
  authorize,
  EXCHANGE_CLIENT,
  type Host,
  INTROSPECTOR_CLIENT_ID,
  registerClient,
  startUpstream,
  UPSTREAM_CLIENT_ID,
  UPSTREAM_CLIENT_SECRET,
  UPSTREAM_SCOPES,
  type Upstream,
} from '../authserver/harness.js';
import { addGroup, callText, connect, lab, type Lab, team, toolNames } from './helpers.js';

function upstreamEntry(name: string, upstream: Upstream): Record<string, unknown> {
  return {
    name,
    type: 'oidc',
    oidc_config: {
      issuer_url: upstream.issuer,
      client_id: UPSTREAM_CLIENT_ID,
      client_secret_env_var: 'UPSTREAM_SECRET',
      scopes: UPSTREAM_SCOPES,
      // oidc-provider grants offline_access (a refresh token) only after consent.
      additional_authorization_params: { prompt: 'consent' },
      insecure_allow_http: true,
    },
  };
}

const inject = (providerName: string) => ({ type: 'upstream_inject', upstreamInject: { providerName } });

/** RFC 8693 at `upstream`, with the subject token of `subjectProviderName` (default: the first). */
const exchangeAt = (upstream: Upstream, audience: string, subjectProviderName?: string) => ({
  type: 'token_exchange',
  tokenExchange: {
    tokenUrl: `${upstream.issuer}/token`,
    clientId: EXCHANGE_CLIENT.id,
    clientSecret: EXCHANGE_CLIENT.secret,
    audience,
    ...(subjectProviderName === undefined ? {} : { subjectProviderName }),
  },
});

/** A virtual workload over group `team` with the embedded AS (upstreams `first`, `second`). */
async function gate(
  l: Lab,
  name: string,
  port: number,
  upstreams: [Upstream, Upstream],
  backends: { a: object; b: object },
  partialFailureMode: 'fail' | 'best_effort' = 'fail',
): Promise<string> {
  await l.manager.createFromConfig(
    {
      name,
      group: 'team',
      image: '',
      transport: 'stdio',
      proxy_mode: 'streamable-http',
      env_vars: { UPSTREAM_SECRET: UPSTREAM_CLIENT_SECRET },
      vmcp: {
        outgoingAuth: {
          source: 'inline',
          backends,
        },
        operational: { failureHandling: { partialFailureMode } },
      },
      embedded_auth_server_config: {
        scopes_supported: UPSTREAM_SCOPES,
        upstreams: [upstreamEntry('first', upstreams[0]), upstreamEntry('second', upstreams[1])],
      },
    },
    { port },
  );
  await l.run(name);
  return `http://127.0.0.1:${port}`;
}

/** The client's login at a virtual workload: one consent page, then both upstreams. */
async function login(origin: string, upstreams: [Upstream, Upstream]): Promise<string> {
  const session = await registerClient({ url: origin } as Host);
  const authorizeHops: string[] = [];
  const tokens = await authorize(session, 'alice', {
    loginAt: (page) => (page.startsWith(upstreams[1].issuer) ? 'alice-at-second' : 'alice'),
    beforeHop: async (url) => {
      if (upstreams.some((u) => url.startsWith(`${u.issuer}/auth?`))) authorizeHops.push(new URL(url).origin);
    },
  });
  assert.deepEqual(
    authorizeHops,
    upstreams.map((u) => u.issuer),
    'the login walked both upstreams, first then second',
  );
  return tokens.access_token;
}

async function introspectionUrl(upstream: Upstream): Promise<string> {
  const issuer = new URL(upstream.issuer);
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { [oauth.allowInsecureRequests]: true }),
  );
  return as.introspection_endpoint as string;
}

test(
  'virtual MCP with two upstreams: upstream_inject providerName sends each backend its own provider token',
  { timeout: 300_000 },
  async (t) => {
    const ports = [await freePort(), await freePort(), await freePort(), await freePort()];
    const callbacks = ports.map((p) => `http://127.0.0.1:${p}/oauth/callback`);
    const first = await startUpstream(t, callbacks, { introspection: true, exchange: true });
    const second = await startUpstream(t, callbacks, { introspection: true, exchange: true });
    const upstreams: [Upstream, Upstream] = [first, second];

    const l = lab(t);
    await addGroup(l, 'team');
    // Each backend's proxy accepts only live access tokens of its own provider.
    const inbound = async (upstream: Upstream) => ({
      oidc: {
        issuer: upstream.issuer,
        introspection_url: await introspectionUrl(upstream),
        client_id: INTROSPECTOR_CLIENT_ID,
      },
    });
    await team(l, 'a', 'team', await inbound(first));
    await team(l, 'b', 'team', await inbound(second));

    await t.test('each backend gets its provider token: a ← first, b ← second', async (t) => {
      const origin = await gate(l, 'gate', ports[0] as number, upstreams, {
        a: inject('first'),
        b: inject('second'),
      });
      const client = await connect(t, `${origin}/mcp`, { token: await login(origin, upstreams) });
      const names = await toolNames(client);
      for (const n of ['a_search', 'b_search']) assert.ok(names.includes(n), names.join(','));
      assert.equal(await callText(client, 'a_search', { query: 'x' }), 'a found x');
      assert.equal(await callText(client, 'b_search', { query: 'y' }), 'b found y');
    });

    await t.test('providers crossed (a ← second, b ← first): both backends refuse', async (t) => {
      // best_effort: a backend that refuses is left out of the list instead of failing it.
      const origin = await gate(
        l,
        'crossed',
        ports[1] as number,
        upstreams,
        { a: inject('second'), b: inject('first') },
        'best_effort',
      );
      const client = await connect(t, `${origin}/mcp`, { token: await login(origin, upstreams) });
      // Both backends are running and discovered (the first gate listed them); each refused.
      assert.deepEqual(await toolNames(client), []);
    });

    await t.test(
      'token_exchange: subjectProviderName picks the subject token, the first upstream by default',
      async (t) => {
        // a: exchanged at `first`, no subjectProviderName (the first upstream's token);
        // b: exchanged at `second` with subjectProviderName `second`. Each provider exchanges
        // only its own live tokens, and each backend's proxy takes only its provider's tokens.
        const origin = await gate(l, 'exchange', ports[2] as number, upstreams, {
          a: exchangeAt(first, 'https://a.test'),
          b: exchangeAt(second, 'https://b.test', 'second'),
        });
        const client = await connect(t, `${origin}/mcp`, { token: await login(origin, upstreams) });
        assert.equal(await callText(client, 'a_search', { query: 'x' }), 'a found x');
        assert.equal(await callText(client, 'b_search', { query: 'y' }), 'b found y');
        assert.deepEqual(first.exchanges.at(-1), { account: 'alice', audience: 'https://a.test' });
        assert.deepEqual(second.exchanges.at(-1), { account: 'alice-at-second', audience: 'https://b.test' });
      },
    );

    await t.test('token_exchange with the wrong subjectProviderName: that backend is left out', async (t) => {
      const before = second.exchanges.length;
      const origin = await gate(
        l,
        'exchange-crossed',
        ports[3] as number,
        upstreams,
        // b's subject is `first`'s token, which `second` refuses to exchange.
        { a: exchangeAt(first, 'https://a.test'), b: exchangeAt(second, 'https://b.test', 'first') },
        'best_effort',
      );
      const client = await connect(t, `${origin}/mcp`, { token: await login(origin, upstreams) });
      const names = await toolNames(client);
      assert.ok(names.includes('a_search'), names.join(','));
      assert.ok(!names.some((n) => n.startsWith('b_')), names.join(','));
      assert.equal(second.exchanges.length, before, 'second granted no exchange');
    });
  },
);
