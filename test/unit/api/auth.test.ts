/**
 * The management API on TCP needs authentication (any local user could call it). Every route but
 * `GET /health` (and the login link's landing `GET /auth/login`, and `GET /auth/challenge`, which
 * proves the server to `skep ui`) now needs the bearer token or a browser session used from the
 * server's own pages with its CSRF token. The table below walks the OpenAPI document, so a route
 * added later is covered without touching this file.
 */
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { buildApp } from '../../../src/control/api/app.js';
import {
  BrowserSessions,
  SESSION_ABSOLUTE_MS,
  SESSION_IDLE_MS,
  TICKET_TTL_MS,
} from '../../../src/control/api/browser-sessions.js';
import { createContext } from '../../../src/control/app/index.js';
import { TEST_API_TOKEN, testApp } from '../../helpers/api.js';
import { tempHome } from '../../helpers/home.js';

const NO_TOKEN = { authorization: '' };
const HOST = '127.0.0.1:8080';

type Doc = { paths: Record<string, Record<string, { security?: unknown[] }>> };

function assertUnauthorized(
  res: { statusCode: number; headers: Record<string, unknown>; json(): unknown },
  what: string,
) {
  assert.equal(res.statusCode, 401, what);
  if (!what.startsWith('HEAD ')) assert.equal((res.json() as { code: string }).code, 'unauthorized', what);
  assert.match(String(res.headers['www-authenticate']), /^Bearer realm="skep"/, what);
}

test('F1 regression: without a token every operation of the OpenAPI document is 401; only /health, /auth/login and /auth/challenge are public', async (t) => {
  const { app } = await testApp(t);
  const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json<Doc>();
  const publicOps: string[] = [];
  let checked = 0;
  for (const [path, item] of Object.entries(doc.paths)) {
    const url = path.replaceAll(/\{[^}]+\}/g, 'x');
    for (const [method, op] of Object.entries(item)) {
      const verb = method.toUpperCase();
      const res = await app.inject({
        method: verb as 'GET',
        url,
        headers: NO_TOKEN,
        ...(verb === 'POST' || verb === 'PUT' ? { payload: {} } : {}),
      });
      if (Array.isArray(op.security) && op.security.length === 0) {
        publicOps.push(`${verb} ${path}`);
        // Public: the route itself answers (`/auth/login` refuses a missing ticket on its own terms).
        assert.doesNotMatch(res.body, /needs authentication/, `${verb} ${path} is documented as public`);
        continue;
      }
      assertUnauthorized(res, `${verb} ${path}`);
      checked++;
    }
  }
  assert.deepEqual(publicOps.sort(), ['GET /auth/challenge', 'GET /auth/login', 'GET /health']);
  assert.ok(checked > 50, `walked ${checked} protected operations`);
  // Beyond the document: the document itself, the docs page, HEAD, unknown routes.
  for (const [method, url] of [
    ['GET', '/api/openapi.json'],
    ['GET', '/api/doc'],
    ['HEAD', '/api/v1beta/version'],
    ['GET', '/api/v1beta/no-such-route'],
    ['DELETE', '/'],
  ] as const)
    assertUnauthorized(await app.inject({ method, url, headers: NO_TOKEN }), `${method} ${url}`);
});

test('RFC 6750: a wrong or malformed credential is 401 invalid_token; the right token passes, scheme in any case', async (t) => {
  const { app } = await testApp(t);
  const wrong = await app.inject({
    method: 'GET',
    url: '/api/v1beta/groups',
    headers: { authorization: `Bearer ${TEST_API_TOKEN}x` },
  });
  assertUnauthorized(wrong, 'wrong token');
  assert.equal(wrong.headers['www-authenticate'], 'Bearer realm="skep", error="invalid_token"');
  assert.doesNotMatch(wrong.body, new RegExp(TEST_API_TOKEN));
  const basic = await app.inject({
    method: 'GET',
    url: '/api/v1beta/groups',
    headers: { authorization: `Basic ${Buffer.from(`u:${TEST_API_TOKEN}`).toString('base64')}` },
  });
  assertUnauthorized(basic, 'basic');
  const prefix = await app.inject({
    method: 'GET',
    url: '/api/v1beta/groups',
    headers: { authorization: `Bearer ${TEST_API_TOKEN.slice(0, 20)}` },
  });
  assertUnauthorized(prefix, 'a prefix of the token');
  for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
    const ok = await app.inject({
      method: 'GET',
      url: '/api/v1beta/groups',
      headers: { authorization: `${scheme} ${TEST_API_TOKEN}` },
    });
    assert.equal(ok.statusCode, 200, scheme);
  }
  const health = await app.inject({ method: 'GET', url: '/health', headers: NO_TOKEN });
  assert.equal(health.statusCode, 204);
});

test('the unix-socket app needs no token (ToolHive Studio); a TCP app cannot be built without one', async (t) => {
  const home = tempHome(t);
  const ctx = createContext(home.config);
  t.after(() => ctx.close());
  await assert.rejects(buildApp(ctx), /apiToken is required on TCP/);
  const app = await buildApp(ctx, { transport: 'unix' });
  t.after(() => app.close());
  const res = await app.inject({ method: 'GET', url: '/api/v1beta/groups' });
  assert.equal(res.statusCode, 200);
  const link = await app.inject({ method: 'POST', url: '/api/v1beta/auth/login-link' });
  assert.equal(link.statusCode, 400, 'a socket has no browser URL to hand out');
});

test('the OpenAPI document declares the bearer and session schemes', async (t) => {
  const { app } = await testApp(t);
  const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json<{
    components: { securitySchemes: Record<string, Record<string, string>> };
    security: unknown[];
    paths: Record<string, Record<string, { security?: unknown[] }>>;
  }>();
  assert.deepEqual(doc.components.securitySchemes['bearer']?.['type'], 'http');
  assert.deepEqual(doc.components.securitySchemes['bearer']?.['scheme'], 'bearer');
  assert.deepEqual(doc.components.securitySchemes['session']?.['in'], 'cookie');
  assert.deepEqual(doc.components.securitySchemes['session']?.['name'], 'skep_session');
  assert.deepEqual(doc.security, [{ bearer: [] }, { session: [] }]);
  assert.deepEqual(doc.paths['/api/v1beta/auth/login-link']?.['post']?.security, [{ bearer: [] }]);
});

/** An app with a frozen clock and a logged-in browser. */
async function loggedIn(t: import('node:test').TestContext) {
  const clock = { now: 1_700_000_000_000 };
  const sessions = new BrowserSessions({ now: () => clock.now });
  const { app } = await testApp(t, { sessions });
  const link = await app.inject({
    method: 'POST',
    url: '/api/v1beta/auth/login-link',
    headers: { host: HOST },
  });
  assert.equal(link.statusCode, 200);
  assert.equal(link.headers['cache-control'], 'no-store');
  const url = new URL(link.json<{ url: string }>().url);
  assert.equal(url.origin, `http://${HOST}`);
  assert.equal(url.pathname, '/auth/login');
  const login = await app.inject({
    method: 'GET',
    url: `${url.pathname}${url.search}`,
    headers: { ...NO_TOKEN, host: HOST },
  });
  assert.equal(login.statusCode, 200);
  const cookie = String(login.headers['set-cookie']);
  const session = /^skep_session=([A-Za-z0-9_-]{43});/.exec(cookie)?.[1];
  assert.ok(session, cookie);
  const csrf = /content="0;url=\/#skep-csrf=([A-Za-z0-9_-]{43})"/.exec(login.body)?.[1];
  assert.ok(csrf, login.body);
  return { app, clock, url, login, cookie: `skep_session=${session}`, csrf, sessions };
}

test('login link: a one-time ticket sets an HttpOnly, SameSite=Strict session cookie and forwards to / with the CSRF token in the fragment', async (t) => {
  const { app, url, login, csrf } = await loggedIn(t);
  // A page from this origin, not a 303: the refresh is a same-origin navigation even when the
  // link was opened from a file or another site, so the Strict cookie rides along.
  assert.match(String(login.headers['content-type']), /^text\/html/);
  assert.equal(login.headers.location, undefined);
  assert.ok(login.body.includes(`<a href="/#skep-csrf=${csrf}">`));
  assert.match(String(login.headers['content-security-policy']), /^default-src 'none'/);
  assert.equal(login.headers['cache-control'], 'no-store');
  assert.equal(login.headers['referrer-policy'], 'no-referrer');
  const attributes = String(login.headers['set-cookie'])
    .split(';')
    .map((a) => a.trim());
  assert.ok(attributes.includes('HttpOnly'));
  assert.ok(attributes.includes('SameSite=Strict'));
  assert.ok(attributes.includes('Path=/'));
  assert.ok(!attributes.includes('Secure'), 'Secure only under TLS (see the HTTPS test)');
  const again = await app.inject({
    method: 'GET',
    url: `${url.pathname}${url.search}`,
    headers: { ...NO_TOKEN, host: HOST },
  });
  assertUnauthorized(again, 'a ticket works once');
  assert.equal(again.headers['set-cookie'], undefined);
  const none = await app.inject({ method: 'GET', url: '/auth/login', headers: { ...NO_TOKEN, host: HOST } });
  assertUnauthorized(none, 'no ticket');
});

test('login link: a ticket expires after 60 s (injected clock)', async (t) => {
  const clock = { now: 1_700_000_000_000 };
  const sessions = new BrowserSessions({ now: () => clock.now });
  const { app } = await testApp(t, { sessions });
  const mint = async () =>
    new URL(
      (
        await app.inject({ method: 'POST', url: '/api/v1beta/auth/login-link', headers: { host: HOST } })
      ).json<{
        url: string;
      }>().url,
    );
  const spend = (u: URL) =>
    app.inject({ method: 'GET', url: `${u.pathname}${u.search}`, headers: { ...NO_TOKEN, host: HOST } });
  const late = await mint();
  clock.now += TICKET_TTL_MS;
  assertUnauthorized(await spend(late), 'expired ticket');
  const inTime = await mint();
  clock.now += TICKET_TTL_MS - 1;
  assert.equal((await spend(inTime)).statusCode, 200);
});

test('login link: only the bearer token mints one, not a session cookie', async (t) => {
  const { app, cookie } = await loggedIn(t);
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1beta/auth/login-link',
    headers: { ...NO_TOKEN, host: HOST, cookie, 'sec-fetch-site': 'same-origin' },
  });
  assertUnauthorized(res, 'cookie on a bearer-only route');
});

test('session cookie: accepted from the server’s own pages only (Fetch Metadata, else an own Origin)', async (t) => {
  const { app, cookie, csrf } = await loggedIn(t);
  const call = (headers: Record<string, string>, method: 'GET' | 'POST' = 'GET') =>
    app.inject({
      method,
      url: '/api/v1beta/groups',
      headers: { ...NO_TOKEN, host: HOST, cookie, 'x-skep-csrf': csrf, ...headers },
      ...(method === 'POST' ? { payload: { name: `g${Math.floor(Math.random() * 1e9)}` } } : {}),
    });
  assert.equal((await call({ 'sec-fetch-site': 'same-origin' })).statusCode, 200);
  assert.equal((await call({ 'sec-fetch-site': 'none' })).statusCode, 200, 'typed or bookmarked');
  assert.equal(
    (await call({ 'sec-fetch-site': 'same-origin', origin: `http://${HOST}` }, 'POST')).statusCode,
    201,
  );
  // A page on another port of this machine is same-site: SameSite=Strict sends the cookie.
  assertUnauthorized(await call({ 'sec-fetch-site': 'same-site' }), 'another local port');
  assertUnauthorized(await call({ 'sec-fetch-site': 'cross-site' }), 'another site');
  assertUnauthorized(await call({ 'sec-fetch-site': 'same-site' }, 'POST'), 'another local port, POST');
  // A foreign Origin with a valid cookie: refused by the origin guard before the cookie counts.
  const foreign = await call({ 'sec-fetch-site': 'same-site', origin: 'http://127.0.0.1:9999' }, 'POST');
  assert.equal(foreign.statusCode, 403);
  assert.equal(foreign.json().code, 'forbidden_host');
  // No Fetch Metadata (old browsers): only with the server's own Origin, whatever the method.
  assertUnauthorized(await call({}), 'no Sec-Fetch-Site, no Origin');
  assert.equal((await call({ origin: `http://${HOST}` })).statusCode, 200);
  assert.equal((await call({ origin: `http://${HOST}` }, 'POST')).statusCode, 201);
  // A wrong bearer never falls back to the cookie.
  const wrongBearer = await call({ 'sec-fetch-site': 'same-origin', authorization: 'Bearer nope' });
  assertUnauthorized(wrongBearer, 'wrong bearer with a good cookie');
  // An unknown session id.
  const forged = await app.inject({
    method: 'GET',
    url: '/api/v1beta/groups',
    headers: {
      ...NO_TOKEN,
      host: HOST,
      cookie: `skep_session=${'A'.repeat(43)}`,
      'sec-fetch-site': 'same-origin',
    },
  });
  assertUnauthorized(forged, 'forged session');
});

test('session: ends after the idle time and after the absolute lifetime (injected clock)', async (t) => {
  const idle = await loggedIn(t);
  const use = (s: typeof idle) =>
    s.app.inject({
      method: 'GET',
      url: '/api/v1beta/version',
      headers: {
        ...NO_TOKEN,
        host: HOST,
        cookie: s.cookie,
        'x-skep-csrf': s.csrf,
        'sec-fetch-site': 'same-origin',
      },
    });
  idle.clock.now += SESSION_IDLE_MS - 1;
  assert.equal((await use(idle)).statusCode, 200, 'activity just inside the idle time');
  idle.clock.now += SESSION_IDLE_MS;
  assertUnauthorized(await use(idle), 'idle too long');

  const busy = await loggedIn(t);
  const step = SESSION_IDLE_MS / 2;
  for (let elapsed = step; elapsed < SESSION_ABSOLUTE_MS; elapsed += step) {
    busy.clock.now += step;
    assert.equal((await use(busy)).statusCode, 200, `still in at ${elapsed} ms`);
  }
  busy.clock.now += step;
  assertUnauthorized(await use(busy), 'absolute lifetime over');
});

test('logout ends the session and clears the cookie', async (t) => {
  const { app, cookie, csrf } = await loggedIn(t);
  const headers = { ...NO_TOKEN, host: HOST, cookie, 'x-skep-csrf': csrf, 'sec-fetch-site': 'same-origin' };
  const out = await app.inject({ method: 'POST', url: '/auth/logout', headers });
  assert.equal(out.statusCode, 204);
  assert.match(String(out.headers['set-cookie']), /^skep_session=; Max-Age=0;.*HttpOnly/);
  assertUnauthorized(await app.inject({ method: 'GET', url: '/api/v1beta/groups', headers }), 'after logout');
  // A cross-site form cannot log the user out either.
  const { app: other, cookie: otherCookie, csrf: otherCsrf } = await loggedIn(t);
  const crossSite = await other.inject({
    method: 'POST',
    url: '/auth/logout',
    headers: {
      ...NO_TOKEN,
      host: HOST,
      cookie: otherCookie,
      'x-skep-csrf': otherCsrf,
      'sec-fetch-site': 'same-site',
    },
  });
  assertUnauthorized(crossSite, 'logout from another page');
});

test('OWASP CSRF synchronizer token: a replayed cookie without the session’s X-Skep-CSRF is 403 on every method, whatever Sec-Fetch-Site says', async (t) => {
  const { app, cookie, csrf, sessions } = await loggedIn(t);
  const other = sessions.login(sessions.mintTicket());
  assert.ok(other !== undefined);
  const workload = { name: 'csrf-shell', url: 'cmd:///bin/sh' };
  const calls = [
    ['POST', '/api/v1beta/workloads', workload],
    ['POST', '/api/v1beta/groups', { name: 'csrf-group' }],
    ['PUT', '/api/v1beta/registry/default', { url: 'https://example.com/registry.json' }],
    ['DELETE', '/api/v1beta/groups/csrf-group', undefined],
    ['GET', '/api/v1beta/workloads', undefined],
  ] as const;
  for (const site of ['same-origin', 'none']) {
    const tokens: (string | undefined)[] = [
      undefined,
      '',
      csrf.slice(0, -1),
      `${csrf}x`,
      sessions.csrfToken(other),
    ];
    for (const token of tokens) {
      for (const [method, url, payload] of calls) {
        const res: Awaited<ReturnType<typeof app.inject>> = await app.inject({
          method,
          url,
          headers: {
            ...NO_TOKEN,
            host: HOST,
            cookie,
            'sec-fetch-site': site,
            ...(token === undefined ? {} : { 'x-skep-csrf': token }),
          },
          ...(payload === undefined ? {} : { payload }),
        });
        const what = `${method} ${url}, Sec-Fetch-Site ${site}, token ${token === undefined ? 'absent' : JSON.stringify(token.slice(0, 6))}`;
        assert.equal(res.statusCode, 403, what);
        assert.equal(res.json<{ code: string }>().code, 'forbidden', what);
        assert.equal(res.headers['x-skep-csrf'], 'required', what);
      }
    }
  }
  // Nothing was created.
  const workloads = await app.inject({ method: 'GET', url: '/api/v1beta/workloads?all=true' });
  assert.deepEqual(workloads.json<{ workloads: unknown[] }>().workloads, []);
  // With the token the same cookie works (the docs page, opened by a link, needs only the cookie).
  const withToken = await app.inject({
    method: 'POST',
    url: '/api/v1beta/groups',
    headers: { ...NO_TOKEN, host: HOST, cookie, 'sec-fetch-site': 'same-origin', 'x-skep-csrf': csrf },
    payload: { name: 'csrf-group' },
  });
  assert.equal(withToken.statusCode, 201, withToken.body);
  const removed = await app.inject({
    method: 'DELETE',
    url: '/api/v1beta/groups/csrf-group',
    headers: { ...NO_TOKEN, host: HOST, cookie, 'sec-fetch-site': 'same-origin', 'x-skep-csrf': csrf },
  });
  assert.equal(removed.statusCode, 204, removed.body);
  const docs = await app.inject({
    method: 'GET',
    url: '/api/doc',
    headers: { ...NO_TOKEN, host: HOST, cookie, 'sec-fetch-site': 'same-origin' },
  });
  assert.equal(docs.statusCode, 200);
});

test('discovery proof: GET /auth/challenge answers HMAC-SHA256(proof key, nonce) without credentials; 404 without a key', async (t) => {
  const key = randomBytes(32);
  const { app } = await testApp(t, { discoveryProofKey: key });
  const nonce = randomBytes(32).toString('base64url');
  const res = await app.inject({
    method: 'GET',
    url: `/auth/challenge?nonce=${nonce}`,
    headers: { ...NO_TOKEN, host: HOST },
  });
  assert.equal(res.statusCode, 200, res.body);
  const expected = createHmac('sha256', key).update(`skep-discovery-proof\u0000${nonce}`).digest('base64url');
  assert.equal(res.json<{ proof: string }>().proof, expected);
  assert.notEqual(
    res.json<{ proof: string }>().proof,
    createHmac('sha256', randomBytes(32)).update(`skep-discovery-proof\u0000${nonce}`).digest('base64url'),
  );
  const short = await app.inject({ method: 'GET', url: '/auth/challenge?nonce=abc', headers: NO_TOKEN });
  assert.equal(short.statusCode, 400);
  const { app: keyless } = await testApp(t);
  const none = await keyless.inject({
    method: 'GET',
    url: `/auth/challenge?nonce=${nonce}`,
    headers: NO_TOKEN,
  });
  assert.equal(none.statusCode, 404);
});
