/**
 * The login chain over several upstreams (as ToolHive's embedded server walks it for a vMCP): two
 * real `oidc-provider` upstreams on loopback, the browser legs driven over HTTP. One login walks
 * both in config order and the session then holds each provider's token; the code is issued only
 * after the last leg; every leg keeps the single-use `state` and flow-cookie checks; a failed
 * second leg returns `access_denied` and leaves no upstream token; a second-leg account linked to
 * another user is refused.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import type { EmbeddedAuthServerConfig } from '../../../src/authserver/index.js';
import { MemoryStorage } from '../../../src/authserver/index.js';
import { aclUserArgs, cli, REDIS_HINT, redisAvailable, startRedis } from '../../helpers/redis.js';
import { requireService } from '../../helpers/services.js';
import {
  authorizationRequest,
  authorize,
  baseConfig,
  browserLogin,
  type ClientSession,
  CookieJar,
  type Host,
  mountAuthServer,
  registerClient,
  startHost,
  startUpstream,
  TEST_ENV,
  type Upstream,
} from './harness.js';

/** The real memory storage, recording which sessions received upstream tokens. */
class WatchedStorage extends MemoryStorage {
  readonly sessions = new Set<string>();
  override async saveUpstreamTokens(...args: Parameters<MemoryStorage['saveUpstreamTokens']>): Promise<void> {
    this.sessions.add(args[0]);
    return super.saveUpstreamTokens(...args);
  }
}

/** `first` then `second`, both OIDC; `secondParams` replaces the second's extra authorize parameters. */
function chainConfig(
  host: Host,
  first: Upstream,
  second: Upstream,
  secondParams: Record<string, string> = { prompt: 'consent' },
): EmbeddedAuthServerConfig {
  const cfg = baseConfig(host, first);
  const one = cfg.upstreams?.[0] as NonNullable<EmbeddedAuthServerConfig['upstreams']>[number];
  const oidc = one.oidc_config as NonNullable<typeof one.oidc_config>;
  return Object.assign({}, cfg, {
    upstreams: [
      Object.assign({}, one, { name: 'first' }),
      {
        name: 'second',
        type: 'oidc' as const,
        oidc_config: Object.assign({}, oidc, {
          issuer_url: second.issuer,
          additional_authorization_params: secondParams,
        }),
      },
    ],
  });
}

interface Lab {
  host: Host;
  first: Upstream;
  second: Upstream;
  storage: WatchedStorage;
  session: ClientSession;
}

async function setUp(t: TestContext, secondParams?: Record<string, string>): Promise<Lab> {
  const host = await startHost(t);
  const first = await startUpstream(t, [host.callbackUrl]);
  const second = await startUpstream(t, [host.callbackUrl]);
  const storage = new WatchedStorage();
  t.after(() => storage.close());
  await mountAuthServer(host, chainConfig(host, first, second, secondParams), { storage });
  return { host, first, second, storage, session: await registerClient(host) };
}

/** alice at the first upstream, `second` at the second (the page URL says which). */
function loginAt(lab: Lab, second = 'alice-at-second'): (pageUrl: string) => string {
  return (pageUrl) => (pageUrl.startsWith(lab.second.issuer) ? second : 'alice');
}

/** OIDC Core §5.3: whose account a provider's access token is (its userinfo), or the HTTP status. */
async function userinfo(upstream: Upstream, token: string): Promise<string | number> {
  const res = await fetch(`${upstream.issuer}/me`, { headers: { authorization: `Bearer ${token}` } });
  if (!res.ok) return res.status;
  return ((await res.json()) as { sub: string }).sub;
}

test(
  'login chain: one login walks both upstreams in config order; the session holds each provider token; the user is the first provider account',
  { timeout: 60_000 },
  async (t) => {
    const lab = await setUp(t);
    const hops: string[] = [];
    const consentPages: string[] = [];
    const tokens = await authorize(lab.session, 'alice', {
      loginAt: loginAt(lab),
      onConsentPage: (page) => consentPages.push(page.html),
      beforeHop: async (url) => {
        hops.push(url);
      },
    });
    assert.equal(consentPages.length, 1, 'one consent page for the whole chain');
    const host = (u: Upstream) => new URL(u.issuer).host;
    assert.ok(
      (consentPages[0] as string).includes(
        `you sign in at <code>${host(lab.first)}</code>, then at <code>${host(lab.second)}</code>.`,
      ),
      'the consent page names both upstreams, in order',
    );
    const at = (prefix: string) => hops.findIndex((u) => u.startsWith(prefix));
    const callbacks = hops.filter((u) => u.startsWith(lab.host.callbackUrl));
    assert.equal(callbacks.length, 2, 'one callback per upstream');
    assert.ok(at(`${lab.first.issuer}/auth`) >= 0 && at(`${lab.second.issuer}/auth`) >= 0, hops.join('\n'));
    assert.ok(
      at(`${lab.first.issuer}/auth`) < at(lab.host.callbackUrl) &&
        at(lab.host.callbackUrl) < at(`${lab.second.issuer}/auth`),
      `first upstream, its callback, then the second upstream:\n${hops.join('\n')}`,
    );

    const auth = lab.host.auth!;
    const claims = await auth.verifyAccessToken(tokens.access_token, lab.host.resource);
    assert.equal(claims.name, 'User alice', "the grant's user is the first provider's account");
    const firstToken = await auth.upstreamToken(claims.tsid, 'first');
    const secondToken = await auth.upstreamToken(claims.tsid, 'second');
    assert.notEqual(firstToken, secondToken);
    assert.equal(await userinfo(lab.first, firstToken), 'alice');
    assert.equal(await userinfo(lab.second, secondToken), 'alice-at-second');
    assert.equal(await userinfo(lab.second, firstToken), 401, "a provider does not take the other's token");
    assert.deepEqual([...lab.storage.sessions], [claims.tsid]);

    // The same user logs in again (another browser): the second account is linked to them.
    const again = await authorize(lab.session, 'alice', { loginAt: loginAt(lab) });
    const claims2 = await auth.verifyAccessToken(again.access_token, lab.host.resource);
    assert.equal(claims2.sub, claims.sub);
    assert.notEqual(claims2.tsid, claims.tsid);
  },
);

test(
  'login chain: an error at the second upstream returns access_denied to the client and leaves no upstream token',
  { timeout: 60_000 },
  async (t) => {
    // prompt=none without a session at the second provider: it answers error=login_required.
    const lab = await setUp(t, { prompt: 'none' });
    const { url, state } = await authorizationRequest(lab.session);
    const jar = new CookieJar();
    const back = await browserLogin(url, lab.session.redirectUri, 'alice', { jar, loginAt: loginAt(lab) });
    assert.equal(back.searchParams.get('error'), 'access_denied');
    assert.equal(back.searchParams.get('state'), state);
    assert.equal(back.searchParams.get('iss'), lab.host.url);
    assert.equal(back.searchParams.get('code'), null);
    // The first leg stored its tokens; the failed second leg deleted them.
    assert.equal(lab.storage.sessions.size, 1);
    const [sessionId] = [...lab.storage.sessions] as [string];
    assert.equal(await lab.storage.getUpstreamTokens(sessionId, 'first'), undefined);
    await assert.rejects(lab.host.auth!.upstreamToken(sessionId, 'first'), /re-authentication required/);
    assert.ok(
      !jar.header(lab.host.callbackUrl).includes('skep_flow_'),
      'the flow cookie is cleared before the client sees the error',
    );
  },
);

test(
  'login chain: a state of the first leg cannot be replayed for the second, and the second leg needs the flow cookie',
  { timeout: 60_000 },
  async (t) => {
    const lab = await setUp(t);
    const replay = async (url: string, cookie: string) => {
      const res = await fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });
      return { status: res.status, body: (await res.json()) as { error_description: string } };
    };

    await t.test('replays of the first leg are refused; the real second leg completes', async () => {
      const callbacks: string[] = [];
      const refused: Array<{ status: number; body: { error_description: string } }> = [];
      const tokens = await authorize(lab.session, 'alice', {
        loginAt: loginAt(lab),
        beforeHop: async (url, jar) => {
          if (!url.startsWith(lab.host.callbackUrl)) return;
          callbacks.push(url);
          if (callbacks.length !== 2) return;
          const first = new URL(callbacks[0] as string);
          // The first leg's callback again, as it was (its state is spent) ...
          refused.push(await replay(first.href, jar.header(first.href)));
          // ... and the second provider's answer carrying the first leg's state.
          const mixed = new URL(url);
          mixed.searchParams.set('state', first.searchParams.get('state') as string);
          refused.push(await replay(mixed.href, jar.header(mixed.href)));
        },
      });
      assert.equal(callbacks.length, 2);
      assert.deepEqual(
        refused.map((r) => [r.status, r.body.error_description]),
        [
          [400, 'authorization request not found or expired'],
          [400, 'authorization request not found or expired'],
        ],
      );
      const claims = await lab.host.auth!.verifyAccessToken(tokens.access_token, lab.host.resource);
      assert.equal(typeof (await lab.host.auth!.upstreamToken(claims.tsid, 'second')), 'string');
    });

    await t.test('the second leg in another browser is refused and spends the state', async () => {
      const { url } = await authorizationRequest(lab.session);
      let stranger: { status: number; body: { error_description: string } } | undefined;
      let legs = 0;
      await assert.rejects(
        browserLogin(url, lab.session.redirectUri, 'alice', {
          loginAt: loginAt(lab),
          beforeHop: async (hop) => {
            if (hop.startsWith(lab.host.callbackUrl) && ++legs === 2) stranger = await replay(hop, '');
          },
        }),
        /answered 400: .*authorization request not found or expired/,
      );
      assert.equal(stranger?.status, 400);
      assert.match(stranger?.body.error_description ?? '', /not started in this browser/);
    });
  },
);

test(
  'login chain: a second-leg account already linked to another user is refused (identity verification failed), never merged',
  { timeout: 60_000 },
  async (t) => {
    const lab = await setUp(t);
    // alice links the second provider's account "shared" to herself.
    await authorize(lab.session, 'alice', { loginAt: loginAt(lab, 'shared') });
    const before = lab.storage.sessions.size;

    const { url, state } = await authorizationRequest(lab.session);
    const bob = (pageUrl: string) => (pageUrl.startsWith(lab.second.issuer) ? 'shared' : 'bob');
    const back = await browserLogin(url, lab.session.redirectUri, 'bob', { loginAt: bob });
    assert.equal(back.searchParams.get('error'), 'access_denied');
    assert.match(back.searchParams.get('error_description') ?? '', /^identity verification failed: /);
    assert.equal(back.searchParams.get('state'), state);
    assert.equal(back.searchParams.get('code'), null);
    // bob's first-leg tokens are gone with the refused chain.
    const bobSession = [...lab.storage.sessions][before] as string;
    assert.equal(await lab.storage.getUpstreamTokens(bobSession, 'first'), undefined);

    // alice with the same accounts still logs in.
    const tokens = await authorize(lab.session, 'alice', { loginAt: loginAt(lab, 'shared') });
    assert.ok(tokens.access_token);
  },
);

test(
  'login chain on Redis storage: both legs stored under one session; a refused chain leaves no upstream key',
  { timeout: 60_000 },
  async (t) => {
    if (!requireService(t, 'redis-server', redisAvailable(), REDIS_HINT)) return;
    const password = 'redis-chain-password-0123456789';
    const redis = await startRedis(aclUserArgs('skep', password));
    t.after(() => redis.stop());
    const host = await startHost(t);
    const first = await startUpstream(t, [host.callbackUrl]);
    const second = await startUpstream(t, [host.callbackUrl]);
    const prefix = 'skep:auth:{chain}:';
    const config = Object.assign({}, chainConfig(host, first, second), {
      storage: {
        type: 'redis' as const,
        redis_config: {
          auth_type: 'aclUser',
          addr: redis.addr,
          key_prefix: prefix,
          acl_user_config: { username_env_var: 'REDIS_USER', password_env_var: 'REDIS_PASS' },
        },
      },
    });
    const auth = await mountAuthServer(host, config, {
      env: Object.assign({}, TEST_ENV, { REDIS_USER: 'skep', REDIS_PASS: password }),
    });
    const upstreamKeys = () =>
      cli(redis.port, password, '--user', 'skep', '--scan', '--pattern', `${prefix}upstream:*`)
        .trim()
        .split('\n')
        .filter((k) => k !== '' && !k.includes(':idx:'))
        .sort();
    const session = await registerClient(host);
    const as = (who: string) => (page: string) => (page.startsWith(second.issuer) ? 'shared' : who);

    const tokens = await authorize(session, 'alice', { loginAt: as('alice') });
    const claims = await auth.verifyAccessToken(tokens.access_token, host.resource);
    assert.deepEqual(upstreamKeys(), [
      `${prefix}upstream:${claims.tsid}:first`,
      `${prefix}upstream:${claims.tsid}:second`,
    ]);
    assert.equal(await userinfo(second, await auth.upstreamToken(claims.tsid, 'second')), 'shared');

    const { url } = await authorizationRequest(session);
    const back = await browserLogin(url, session.redirectUri, 'bob', { loginAt: as('bob') });
    assert.match(back.searchParams.get('error_description') ?? '', /^identity verification failed: /);
    assert.equal(upstreamKeys().length, 2, "bob's first-leg tokens were deleted with the refused chain");
  },
);
