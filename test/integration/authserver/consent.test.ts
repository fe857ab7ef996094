/**
 * The consent step of the embedded authorization server over plain HTTP (the confused deputy; MCP
 * security best practices 2025-11-25, "Confused Deputy Problem → Mitigation"): what the page
 * shows and the headers it carries, the cookies' attributes over http and https, every way
 * the consent POST is refused (CSRF token, flow cookie, Origin), one decision per page, and
 * remembered approvals per user and client with a real upstream (oidc-provider).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeJwt } from 'jose';
import * as oauth from 'oauth4webapi';
import {
  authorize,
  baseConfig,
  browserLogin,
  CookieJar,
  type ClientSession,
  decideConsent,
  type Host,
  mountAuthServer,
  openConsentPage,
  registerClient,
  startHost,
  startUpstream,
} from './harness.js';

async function register(host: Host, meta: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${host.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:9/cb'], ...meta }),
  });
  assert.equal(res.status, 201);
  return ((await res.json()) as { client_id: string }).client_id;
}

async function authorizeUrl(
  host: Host,
  clientId: string,
  extra: Record<string, string> = {},
  redirectUri = 'http://127.0.0.1:9/cb',
): Promise<string> {
  const challenge = await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier());
  return `${host.url}/oauth/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    state: 'client-state',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...extra,
  })}`;
}

test('MCP best practices, consent UI: the page names the client (escaped, or "unnamed client"), its redirect host, scopes and resource; no framing, no caching; the flow cookie is HttpOnly, SameSite=Lax, Path=/oauth', async (t) => {
  const host = await startHost(t);
  const upstream = await startUpstream(t, [host.callbackUrl]);
  await mountAuthServer(host, baseConfig(host, upstream));
  const named = await register(host, {
    client_name: '<script>alert(1)</script>',
    redirect_uris: ['https://app.example/cb'],
  });
  const { res, form } = await openConsentPage(
    await authorizeUrl(
      host,
      named,
      { scope: 'openid email', resource: host.resource },
      'https://app.example/cb',
    ),
  );
  const html = form.html;
  assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'), 'the name is shown as text');
  assert.ok(!html.includes('<script'), 'no markup from the registration reaches the page');
  assert.match(html, /id="redirect-host">app\.example</);
  assert.match(html, /<code>openid<\/code>[\s\S]*<code>email<\/code>/);
  assert.ok(html.includes(`<code>${host.resource}</code>`));
  assert.ok(html.includes(new URL(upstream.issuer).host), 'it says where the user signs in next');
  assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
  const csp = res.headers.get('content-security-policy') ?? '';
  for (const part of [
    "default-src 'none'",
    "style-src 'unsafe-inline'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ]) {
    assert.ok(csp.includes(part), `CSP has ${part}: ${csp}`);
  }
  assert.equal(res.headers.get('x-frame-options'), 'DENY');
  assert.equal(res.headers.get('cache-control'), 'no-store');
  const [cookie] = res.headers.getSetCookie();
  assert.match(cookie ?? '', /^skep_flow_[0-9a-f]{8}=[A-Za-z0-9_-]+:[A-Za-z0-9_-]+;/);
  assert.match(cookie ?? '', /; HttpOnly/);
  assert.match(cookie ?? '', /; SameSite=Lax/);
  assert.match(cookie ?? '', /; Path=\/oauth(;|$)/);
  assert.doesNotMatch(cookie ?? '', /Secure/, 'a plain-http issuer cannot set Secure cookies');

  const unnamed = await register(host, {});
  const page = await openConsentPage(await authorizeUrl(host, unnamed));
  assert.match(page.form.html, /id="client-name">unnamed client</);
});

test('https issuer: the flow cookie is Secure with the __Host- prefix and Path=/', async (t) => {
  const host = await startHost(t);
  const upstream = await startUpstream(t, [host.callbackUrl]);
  // The issuer is what browsers see (TLS ends in front of this host); the host itself is plain http.
  await mountAuthServer(host, { ...baseConfig(host, upstream), issuer: host.url.replace('http:', 'https:') });
  const client = await register(host, { client_name: 'tls client' });
  const { res } = await openConsentPage(await authorizeUrl(host, client));
  const [cookie] = res.headers.getSetCookie();
  assert.match(cookie ?? '', /^__Host-skep_flow_[0-9a-f]{8}=/);
  assert.match(cookie ?? '', /; Path=\/;/);
  assert.match(cookie ?? '', /; Secure/);
});

test('CSRF: the consent POST is refused without or with a wrong token, without the flow cookie or with another flow’s, and from any origin but the issuer’s; one decision per page', async (t) => {
  const host = await startHost(t);
  const upstream = await startUpstream(t, [host.callbackUrl]);
  await mountAuthServer(host, baseConfig(host, upstream));
  const client = await register(host, { client_name: 'csrf target' });
  const { form, jar } = await openConsentPage(await authorizeUrl(host, client));
  const other = await openConsentPage(await authorizeUrl(host, client));

  const refused = async (
    what: string,
    overrides: Parameters<typeof decideConsent>[3],
    useJar = jar,
    status = 403,
  ) => {
    const res = await decideConsent(form, useJar, 'approve', overrides);
    assert.equal(res.status, status, what);
    assert.equal(res.headers.get('location'), null, `${what}: no redirect`);
    const body = (await res.json()) as { error: string };
    assert.equal(body.error, status === 403 ? 'access_denied' : 'invalid_request', what);
  };
  await refused('no CSRF token', { fields: { csrf_token: undefined } });
  await refused('a wrong CSRF token', { fields: { csrf_token: other.form.csrf } });
  await refused('no flow cookie', { headers: { cookie: undefined } });
  await refused("another flow's cookie", {}, other.jar);
  await refused('a foreign Origin', { headers: { origin: 'http://evil.example' } });
  await refused('another port of the same host (same-site, not same-origin)', {
    headers: { origin: 'http://127.0.0.1:1' },
  });
  await refused('Origin: null', { headers: { origin: 'null' } });
  await refused('no decision', { fields: { decision: '' } }, jar, 400);
  const plain = await decideConsent(form, jar, 'approve', { headers: { 'content-type': 'text/plain' } });
  assert.equal(plain.status, 400);
  const get = await fetch(form.action);
  assert.equal(get.status, 405);
  assert.equal(get.headers.get('allow'), 'POST');

  // None of that spent the page: the real answer still goes through, once.
  const approved = await decideConsent(form, jar, 'approve');
  assert.equal(approved.status, 303);
  assert.ok((approved.headers.get('location') as string).startsWith(`${upstream.issuer}/`));
  const again = await decideConsent(form, jar, 'approve');
  assert.equal(again.status, 400, 'one decision per page');
  assert.match(((await again.json()) as { error_description: string }).error_description, /already answered/);

  // A browser asking for HTML gets a page, not JSON.
  const html = await decideConsent(other.form, other.jar, 'approve', {
    headers: { origin: 'http://evil.example', accept: 'text/html' },
  });
  assert.equal(html.status, 403);
  assert.equal(html.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.match(await html.text(), /Sign-in stopped/);
  // Without the Origin header (older browsers, privacy settings) the token and cookie suffice.
  const deny = await decideConsent(other.form, other.jar, 'deny', { headers: { origin: undefined } });
  assert.equal(deny.status, 303);
  const back = new URL(deny.headers.get('location') as string);
  assert.equal(back.searchParams.get('error'), 'access_denied');
  assert.equal(back.searchParams.get('state'), 'client-state');
  assert.match(deny.headers.getSetCookie()[0] ?? '', /Max-Age=0/, 'the flow cookie is cleared on deny');
});

test('remembered approval: the same client and scopes skip the page for the user who approved; another client, prompt=consent or another user logging in do not', async (t) => {
  const host = await startHost(t);
  const upstream = await startUpstream(t, [host.callbackUrl]);
  await mountAuthServer(host, baseConfig(host, upstream), {
    registerRateLimit: { perSecond: 100, burst: 100 },
  });
  const jar = new CookieJar();
  let pages = 0;
  const onConsentPage = () => void pages++;
  const session = await registerClient(host);

  const first = await authorize(session, 'alice', { jar, onConsentPage });
  assert.equal(pages, 1);
  assert.ok(
    jar.names('127.0.0.1').some((n) => /^skep_consent_[0-9a-f]{8}$/.test(n)),
    'a completed login leaves the "remembered" cookie',
  );
  const second = await authorize(session, 'alice', { jar, onConsentPage });
  assert.equal(pages, 1, 'the same client, redirect URI and scopes: no page');
  assert.equal(decodeJwt(second.access_token).sub, decodeJwt(first.access_token).sub);

  const otherClient: ClientSession = await registerClient(host);
  await authorize(otherClient, 'alice', { jar, onConsentPage });
  assert.equal(pages, 2, 'another client is asked for');

  const forced = await browserLogin(
    await authorizeUrl(host, session.client.client_id, { prompt: 'consent' }, session.redirectUri),
    session.redirectUri,
    'alice',
    { jar, onConsentPage },
  );
  assert.ok(forced.searchParams.get('code'));
  assert.equal(pages, 3, 'prompt=consent always shows the page');

  // Another person logs in at the upstream in this browser: the page was skipped for alice,
  // so bob approved nothing — no code, and the browser forgets alice.
  jar.forget(/^_/); // oidc-provider's session and interaction cookies
  const mixed = await browserLogin(
    await authorizeUrl(host, session.client.client_id, {}, session.redirectUri),
    session.redirectUri,
    'bob',
    { jar, onConsentPage },
  );
  assert.equal(pages, 3, 'skipped for the remembered user');
  assert.equal(mixed.searchParams.get('error'), 'access_denied');
  assert.equal(mixed.searchParams.get('code'), null);
  assert.ok(!jar.names('127.0.0.1').some((n) => n.startsWith('skep_consent_')), 'remembered cookie dropped');
  await authorize(session, 'bob', { jar, onConsentPage });
  assert.equal(pages, 4, 'bob is asked himself');
});

test('OAuth 2.1 §4.1.3: a replayed code also drops the remembered approval of that user and client', async (t) => {
  const host = await startHost(t);
  const upstream = await startUpstream(t, [host.callbackUrl]);
  await mountAuthServer(host, baseConfig(host, upstream));
  const session = await registerClient(host);
  const jar = new CookieJar();
  let pages = 0;
  const onConsentPage = () => void pages++;
  const verifier = oauth.generateRandomCodeVerifier();
  const url = new URL(
    await authorizeUrl(
      host,
      session.client.client_id,
      { scope: 'openid profile offline_access' },
      session.redirectUri,
    ),
  );
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
  const callback = await browserLogin(url.href, session.redirectUri, 'alice', { jar, onConsentPage });
  const redeem = () =>
    fetch(`${host.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code') as string,
        client_id: session.client.client_id,
        redirect_uri: session.redirectUri,
        code_verifier: verifier,
      }),
    });
  assert.equal((await redeem()).status, 200);
  assert.equal((await redeem()).status, 400);
  await authorize(session, 'alice', { jar, onConsentPage });
  assert.equal(pages, 2, 'after a replay the user is asked again (same scopes as the approval)');
});
