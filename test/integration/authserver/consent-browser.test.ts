/**
 * The confused deputy (a DCR client gets a code for a logged-in victim) in a real browser: headless
 * Chromium (Debian's package, driven by playwright-core) against Skep's authorization server, with
 * oidc-provider as the upstream. The victim's browser is already logged in at the upstream (it used
 * a legitimate client before), so the upstream lets it through without a click — the MCP security
 * best practices' "Confused Deputy Problem" setting. An attacker registers its own client by RFC
 * 7591 and hands the victim links; a listener plays the attacker's redirect URI and records every
 * request that reaches it.
 *
 * Shown: the victim lands on Skep's consent page naming the attacker's client and its
 * redirect host, and nothing reaches the attacker until the victim approves; Deny sends
 * `access_denied`; an upstream link or a callback URL taken from the attacker's own browser
 * yields no code in the victim's (no flow cookie); the flow is single use; an approval is
 * remembered for the same client and scopes, not for another client or wider scopes.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type TestContext, test } from 'node:test';
import * as oauth from 'oauth4webapi';
import type { BrowserContext, Page } from 'playwright-core';
import { chromiumAvailable, launchChromium } from '../../helpers/browser.js';
import {
  baseConfig,
  browserLogin,
  decideConsent,
  type Host,
  mountAuthServer,
  openConsentPage,
  startHost,
  startUpstream,
  UPSTREAM_CLIENT_ID,
  type Upstream,
} from './harness.js';

const SCOPE = 'openid profile email';

interface Hit {
  url: URL;
  cookie: string;
}

/** A client's redirect URI on loopback that records every request reaching it. */
async function startListener(t: TestContext, path: string): Promise<{ redirectUri: string; hits: Hit[] }> {
  const hits: Hit[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    if (req.url === '/favicon.ico') {
      // Chromium asks for it after showing a page; not a visit to the redirect URI.
      res.writeHead(404).end();
      return;
    }
    hits.push({ url: new URL(req.url ?? '/', 'http://listener.invalid'), cookie: req.headers.cookie ?? '' });
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('received');
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { redirectUri: `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`, hits };
}

async function register(host: Host, name: string, redirectUri: string): Promise<string> {
  const res = await fetch(`${host.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: name,
      redirect_uris: [redirectUri],
      token_endpoint_auth_method: 'none',
      scope: SCOPE,
    }),
  });
  assert.equal(res.status, 201);
  return ((await res.json()) as { client_id: string }).client_id;
}

interface AuthorizeLink {
  url: string;
  state: string;
  verifier: string;
}

async function authorizeLink(
  host: Host,
  clientId: string,
  redirectUri: string,
  scope: string,
): Promise<AuthorizeLink> {
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(`${host.url}/oauth/authorize`);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    scope,
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    resource: host.resource,
  }).toString();
  return { url: url.href, state, verifier };
}

/** Redeems a code as the client would; returns the token response. */
async function redeem(
  host: Host,
  clientId: string,
  redirectUri: string,
  code: string,
  verifier: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${host.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      client_id: clientId,
      redirect_uri: redirectUri,
      code_verifier: verifier,
    }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The upstream's (oidc-provider's development) login and first-time consent screens. */
async function upstreamLogin(page: Page, login: string): Promise<void> {
  await page.locator('input[name=login]').fill(login);
  await page.locator('input[name=password]').fill('any-password');
  await page.locator('button[type=submit]').click();
  await page.locator('input[name=prompt][value=consent]').waitFor({ state: 'attached' });
  await page.locator('button[type=submit]').click();
}

/** Statuses of the authorize responses a page received: 200 is the consent page, 302 a skip. */
function watchAuthorize(page: Page): number[] {
  const statuses: number[] = [];
  page.on('response', (r) => {
    if (new URL(r.url()).pathname === '/oauth/authorize') statuses.push(r.status());
  });
  return statuses;
}

function upstreamConfig(host: Host, upstream: Upstream) {
  const config = baseConfig(host, upstream);
  // No prompt=consent and no offline_access: once logged in (and consented there), the
  // upstream answers a new authorization request without showing anything.
  config.upstreams = [
    {
      name: 'idp',
      type: 'oidc',
      oidc_config: {
        issuer_url: upstream.issuer,
        client_id: UPSTREAM_CLIENT_ID,
        client_secret_env_var: 'SKEP_TEST_UPSTREAM_SECRET',
        scopes: ['openid', 'profile', 'email'],
        insecure_allow_http: true,
      },
    },
  ];
  return config;
}

test(
  'a client registered by an attacker gets no code for a victim already logged in upstream unless the victim approves it by name (Chromium)',
  { timeout: 180_000 },
  async (t) => {
    if (!chromiumAvailable(t)) return;
    const host = await startHost(t);
    const upstream = await startUpstream(t, [host.callbackUrl]);
    await mountAuthServer(host, upstreamConfig(host, upstream), {
      registerRateLimit: { perSecond: 100, burst: 100 },
    });
    const legit = await startListener(t, '/callback');
    const attacker = await startListener(t, '/oauth/steal');
    const legitId = await register(host, 'Legit IDE', legit.redirectUri);
    const attackerName = 'Evil <b>Tool</b> & "Co"';
    const attackerId = await register(host, attackerName, attacker.redirectUri);

    const browser = await launchChromium(t);
    const victimContext: BrowserContext = await browser.newContext();
    const victim = await victimContext.newPage();
    const problems: string[] = [];
    victim.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text());
    });
    victim.on('pageerror', (err) => problems.push(err.message));
    const requested: string[] = [];
    victim.on('request', (r) => requested.push(r.url()));
    const victimAuthorize = watchAuthorize(victim);

    // 1. The victim signs in through the legitimate client: Skep's page, then the upstream.
    const first = await authorizeLink(host, legitId, legit.redirectUri, 'openid profile');
    const page1 = await victim.goto(first.url);
    assert.equal(page1?.status(), 200);
    assert.equal(await victim.locator('#client-name').textContent(), 'Legit IDE');
    await victim.locator('button[value=approve]').click();
    await upstreamLogin(victim, 'victim');
    await victim.waitForURL(`${legit.redirectUri}?**`);
    const firstHit = legit.hits.at(-1) as Hit;
    assert.equal(firstHit.url.searchParams.get('state'), first.state);
    const firstTokens = await redeem(
      host,
      legitId,
      legit.redirectUri,
      firstHit.url.searchParams.get('code') as string,
      first.verifier,
    );
    assert.equal(firstTokens.status, 200, JSON.stringify(firstTokens.body));
    assert.doesNotMatch(
      firstHit.cookie,
      /skep_flow_/,
      'the flow cookie is gone before the client is reached',
    );

    // 2. Remembered: the same client and scopes again skip the page (302 straight to the upstream) ...
    const again = await authorizeLink(host, legitId, legit.redirectUri, 'openid profile');
    victimAuthorize.length = 0;
    await victim.goto(again.url);
    await victim.waitForURL(`${legit.redirectUri}?**`);
    assert.deepEqual(victimAuthorize, [302], 'no consent page for a remembered approval');
    assert.equal(legit.hits.at(-1)?.url.searchParams.get('state'), again.state);
    assert.ok(legit.hits.at(-1)?.url.searchParams.get('code'));
    // ... but a scope beyond the approval shows it again (and Deny answers access_denied).
    const wider = await authorizeLink(host, legitId, legit.redirectUri, SCOPE);
    victimAuthorize.length = 0;
    await victim.goto(wider.url);
    assert.deepEqual(victimAuthorize, [200], 'a wider scope asks again');
    assert.match((await victim.locator('#scopes').textContent()) ?? '', /email/);
    await victim.locator('button[value=deny]').click();
    await victim.waitForURL(`${legit.redirectUri}?**`);
    assert.equal(legit.hits.at(-1)?.url.searchParams.get('error'), 'access_denied');

    // 3. The attack: the victim opens the attacker's authorize link.
    const attack = await authorizeLink(host, attackerId, attacker.redirectUri, SCOPE);
    victimAuthorize.length = 0;
    problems.length = 0;
    requested.length = 0;
    const consent = await victim.goto(attack.url);
    assert.equal(consent?.status(), 200);
    assert.deepEqual(victimAuthorize, [200], 'another client is never covered by the remembered approval');
    assert.equal(new URL(victim.url()).origin, host.url, 'the browser stays on Skep');
    const headers = consent?.headers() ?? {};
    assert.match(headers['content-security-policy'] ?? '', /frame-ancestors 'none'/);
    assert.match(headers['content-security-policy'] ?? '', /default-src 'none'/);
    assert.equal(headers['x-frame-options'], 'DENY');
    assert.equal(headers['cache-control'], 'no-store');
    assert.equal(await victim.locator('#client-name').textContent(), attackerName, 'named, as text');
    assert.equal(await victim.locator('#client-name b').count(), 0, 'the registered name is not markup');
    assert.equal(
      await victim.locator('#redirect-host').textContent(),
      new URL(attacker.redirectUri).host,
      'the redirect host is shown',
    );
    assert.match((await victim.locator('#scopes').textContent()) ?? '', /openid[\s\S]*profile[\s\S]*email/);
    assert.equal((await victim.locator('#resources').textContent())?.trim(), host.resource);
    assert.deepEqual(requested, [attack.url], 'the consent page loads nothing else');
    assert.deepEqual(problems, [], 'no console errors or CSP violations on the consent page');
    // The barrier is the denial's redirect: a request the page made to the attacker while it
    // waited would have arrived before it.
    await victim.locator('button[value=deny]').click();
    await victim.waitForURL(`${attacker.redirectUri}?**`);
    assert.equal(attacker.hits.length, 1, 'nothing but the denial reached the attacker');
    const denied = attacker.hits[0] as Hit;
    assert.equal(denied.url.searchParams.get('error'), 'access_denied', 'RFC 6749 §4.1.2.1');
    assert.equal(denied.url.searchParams.get('state'), attack.state);
    assert.equal(denied.url.searchParams.get('iss'), host.url);
    assert.equal(denied.url.searchParams.get('code'), null);
    assert.doesNotMatch(
      denied.cookie,
      /skep_flow_/,
      'no live flow cookie reaches a listener on the same host',
    );

    // 4. The attacker runs its own flow in its own browser (an HTTP client with its own
    //    cookies: Chromium cannot stop a redirect chain midway), approving its client and
    //    logging in as itself, and replays the upstream's callback URL in the victim's browser.
    const callbackUrl = await browserLogin(
      (await authorizeLink(host, attackerId, attacker.redirectUri, SCOPE)).url,
      host.callbackUrl,
      'mallory',
    );
    assert.ok(callbackUrl.searchParams.get('code'), 'the attacker holds an upstream callback URL');
    const replayed = await victim.goto(callbackUrl.href);
    assert.equal(replayed?.status(), 400);
    assert.match(
      (await victim.locator('#error-description').textContent()) ?? '',
      /not started in this browser/,
    );
    // That refusal spent the flow: not even the attacker's own cookies can use it now.
    const ownReplay = await fetch(callbackUrl, { redirect: 'manual' });
    assert.equal(ownReplay.status, 400, 'single use');
    assert.equal(attacker.hits.length, 1, 'no code reached the attacker');

    // 5. The attacker approves its client in its own browser and hands the victim the
    //    upstream login link: the upstream lets the logged-in victim through at once, and
    //    Skep's callback refuses a browser without that flow's cookie.
    const own = await openConsentPage(
      (await authorizeLink(host, attackerId, attacker.redirectUri, SCOPE)).url,
    );
    const toUpstream = await decideConsent(own.form, own.jar, 'approve');
    assert.equal(toUpstream.status, 303);
    const upstreamLink = toUpstream.headers.get('location') as string;
    assert.ok(upstreamLink.startsWith(`${upstream.issuer}/`), upstreamLink);
    const viaUpstream = await victim.goto(upstreamLink);
    assert.equal(
      new URL(victim.url()).pathname,
      '/oauth/callback',
      'the upstream sent the victim back without a click',
    );
    assert.equal(viaUpstream?.status(), 400);
    assert.equal(attacker.hits.length, 1, 'still no code for the attacker');

    // 6. Control: only when the victim approves the attacker's client by name does a code
    //    reach that redirect URI (the listener and the link were able to receive one).
    const approved = await authorizeLink(host, attackerId, attacker.redirectUri, SCOPE);
    await victim.goto(approved.url);
    await victim.locator('button[value=approve]').click();
    await victim.waitForURL(`${attacker.redirectUri}?**`);
    assert.equal(attacker.hits.length, 2);
    const code = attacker.hits[1]?.url.searchParams.get('code') as string;
    const stolen = await redeem(host, attackerId, attacker.redirectUri, code, approved.verifier);
    assert.equal(stolen.status, 200);
  },
);
