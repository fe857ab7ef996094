/**
 * The browser leg of the authorization code flow (RFC 6749 §4.1, OAuth 2.1, RFC 9700):
 * `/oauth/authorize` checks the client's request and shows the consent page (or, for an
 * approval this browser's user already gave, goes straight on); `/oauth/consent` takes the
 * page's decision; `/oauth/callback` takes the upstream login's answer and returns an
 * authorization code to the client.
 *
 * Consent per client (MCP security best practices, "Confused Deputy Problem"): any client may
 * register itself (RFC 7591), and the upstream may log a user in without a click, so
 * `/oauth/authorize` never goes to the upstream on its own. Only an approval POSTed from the
 * consent page — with its CSRF token, the browser's flow cookie and, when sent, this server's
 * Origin — stores the upstream `state` and sends the browser on. The callback then honours the
 * `state` only in the browser holding that flow's cookie, once.
 *
 * Login chain (several upstreams, as ToolHive's embedded server walks them for a vMCP): the
 * login starts at the first upstream, whose account is the user of the grant; each callback
 * then sends the browser to the next upstream (config order) that holds no usable token for
 * the session, as a new pending entry with the same checks, and the code is issued only after
 * the last leg. A later leg's account already linked to another user is refused, and a failed
 * later leg deletes the session's upstream tokens.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { definedOnly, normalizeOrigin, SkepError } from '../../shared/index.js';
import { AUTH_SERVER_DEFAULTS } from '../config.js';
import {
  approvalCovers,
  consentResources,
  htmlHeaders,
  mergeApproval,
  redirectTarget,
  renderConsentPage,
} from '../consent.js';
import { type AuthContext, audienceOf, storeUpstreamTokens } from '../context.js';
import { digest } from '../cookies.js';
import { OAuthError } from '../errors.js';
import { errorRedirectUrl, randomText, readForm, redirect, safeEqual, single } from '../http.js';
import type { ResolvedUpstream } from '../config.js';
import type { ChainUser, PendingAuthorization, UpstreamTokenRecord } from '../storage.js';
import type { UpstreamProvider } from '../upstream.js';

export async function authorize(
  ctx: AuthContext,
  req: IncomingMessage,
  q: URLSearchParams,
  res: ServerResponse,
): Promise<void> {
  const clientId = single(q, 'client_id');
  const redirectUri = single(q, 'redirect_uri');
  const client = clientId ? await ctx.storage.getClient(clientId) : undefined;
  // RFC 6749 §4.1.2.1: without a known client and an exact registered redirect URI, never redirect.
  if (!client) throw new OAuthError('invalid_client', 'unknown client_id', 400);
  if (!redirectUri || !client.redirect_uris.includes(redirectUri)) {
    throw new OAuthError('invalid_request', 'redirect_uri does not exactly match a registered redirect URI');
  }
  const clientState = single(q, 'state');
  const back = (err: OAuthError): void =>
    redirect(res, errorRedirectUrl(redirectUri, err, clientState, ctx.issuer));
  try {
    if (single(q, 'response_type') !== 'code')
      return back(new OAuthError('unsupported_response_type', 'response_type must be code'));
    const challenge = single(q, 'code_challenge');
    if (!challenge || !/^[A-Za-z0-9_-]{43}$/.test(challenge)) {
      return back(new OAuthError('invalid_request', 'PKCE is required: send a code_challenge (S256)'));
    }
    if (single(q, 'code_challenge_method') !== 'S256') {
      return back(new OAuthError('invalid_request', 'code_challenge_method must be S256'));
    }
    const requested = (single(q, 'scope') ?? client.scope.join(' ')).split(' ').filter(Boolean);
    const unknown = requested.filter((s) => !client.scope.includes(s));
    if (unknown.length)
      return back(
        new OAuthError('invalid_scope', `scope not registered for this client: ${unknown.join(' ')}`),
      );
    const audience = q.getAll('resource').length ? audienceOf(ctx, q.getAll('resource')) : [];
    // The login always starts at the first upstream: its account is the user of the grant;
    // the others follow in config order (`callback`, login chain).
    const firstName = ctx.cfg.upstreams[0]?.name;
    const upstream = firstName === undefined ? undefined : ctx.upstreams.get(firstName);
    if (!upstream) return back(new OAuthError('server_error', 'no upstream provider is configured'));

    const state = randomText(20);
    const pending: PendingAuthorization = {
      clientId: client.client_id,
      redirectUri,
      clientState,
      codeChallenge: challenge,
      scopes: [...new Set(requested)],
      audience,
      upstream: upstream.name,
      upstreamVerifier: randomText(32),
      nonce: randomText(20),
      sessionId: randomUUID(),
      createdAt: ctx.nowSec(),
      flowId: randomText(16),
      browserBinding: '',
    };
    const location = await upstream.authorizationUrl({
      state,
      codeVerifier: pending.upstreamVerifier,
      nonce: pending.nonce,
    });
    const resources = consentResources(pending, ctx.cfg.allowedAudiences);
    // OIDC Core §3.1.2.1: prompt=consent (or login) asks for the page even when remembered.
    const prompt = (single(q, 'prompt') ?? '').split(' ');
    const remembered =
      prompt.includes('consent') || prompt.includes('login')
        ? undefined
        : await rememberedApproval(ctx, req, pending, resources);
    if (remembered !== undefined) {
      ctx.log.info({ client_id: client.client_id }, 'consent: remembered approval, page skipped');
      return await toUpstream(
        ctx,
        req,
        res,
        { ...pending, rememberedUser: remembered },
        state,
        location,
        302,
      );
    }

    // The consent page. Its cookie binds the form to this browser; no upstream `state` is
    // stored until the user approves (best practices, "OAuth State Parameter Validation").
    const secret = randomText(32);
    const csrfToken = randomText(32);
    const ttl = AUTH_SERVER_DEFAULTS.pendingAuthorizationSec;
    await ctx.storage.saveConsentRequest(
      pending.flowId,
      { pending: { ...pending, browserBinding: digest(secret) }, state, location, csrfToken },
      ttl,
    );
    const html = renderConsentPage({
      clientId: client.client_id,
      clientName: client.client_name,
      registeredAt: client.client_id_issued_at,
      nowSec: ctx.nowSec(),
      redirectUri,
      scopes: pending.scopes,
      resources,
      upstreamHost: new URL(location).host,
      laterUpstreamHosts: ctx.cfg.upstreams.slice(1).map(upstreamHost),
      flowId: pending.flowId,
      csrfToken,
    });
    res.writeHead(200, {
      ...htmlHeaders([new URL(location).origin, redirectTarget(redirectUri).cspSource]),
      'set-cookie': ctx.cookies.withFlow(req, { id: pending.flowId, secret }, ttl),
    });
    res.end(html);
  } catch (err) {
    if (err instanceof OAuthError) return back(err);
    if (err instanceof SkepError && err.status >= 500) {
      ctx.log.warn({ err: err.message }, 'authorize: upstream or storage failure');
      return back(
        new OAuthError(
          'temporarily_unavailable',
          'the identity provider or storage is unavailable; try again',
        ),
      );
    }
    throw err;
  }
}

/** The user whose remembered approval covers this request in this browser, if any. */
async function rememberedApproval(
  ctx: AuthContext,
  req: IncomingMessage,
  pending: PendingAuthorization,
  resources: string[],
): Promise<string | undefined> {
  for (const id of ctx.cookies.rememberedIds(req)) {
    const userId = await ctx.storage.getRememberedBrowser(digest(id));
    if (userId === undefined) continue;
    const approval = await ctx.storage.getApproval(userId, pending.clientId);
    if (approval && approvalCovers(approval, pending, resources)) return userId;
  }
  return undefined;
}

/**
 * Stores the upstream `state` and sends the browser to the upstream login with a fresh
 * flow-cookie secret for this flow, set in the same response (best practices: the state
 * cookie is set immediately before the redirect, never before consent).
 */
async function toUpstream(
  ctx: AuthContext,
  req: IncomingMessage,
  res: ServerResponse,
  pending: PendingAuthorization,
  state: string,
  location: string,
  status: 302 | 303,
): Promise<void> {
  const secret = randomText(32);
  const ttl = AUTH_SERVER_DEFAULTS.pendingAuthorizationSec;
  // The upstream login gets its own window, however long the consent page stayed open.
  const started = { ...pending, browserBinding: digest(secret), createdAt: ctx.nowSec() };
  await ctx.storage.savePending(state, started, ttl);
  redirect(res, location, [ctx.cookies.withFlow(req, { id: pending.flowId, secret }, ttl)], status);
}

/**
 * The consent form's POST. Refused unless it carries the CSRF token of the page, comes
 * from the browser holding that page's flow cookie, and (when the browser says) from this
 * server's own origin. One decision per page.
 */
export async function consent(ctx: AuthContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const origin = req.headers.origin;
  if (origin !== undefined) {
    const normalized = normalizeOrigin(origin);
    if (normalized === undefined || !ctx.consentOrigins.has(normalized)) {
      throw new OAuthError(
        'access_denied',
        `the consent form must be sent from ${[...ctx.consentOrigins].join(' or ')}, not from ${origin}`,
        403,
      );
    }
  }
  const form = await readForm(req, 'the consent form');
  const flowId = single(form, 'flow') ?? '';
  const expired = new OAuthError(
    'invalid_request',
    'this consent page is unknown, expired or already answered; start again from your application',
  );
  const request = flowId ? await ctx.storage.getConsentRequest(flowId) : undefined;
  if (!request) throw expired;
  const secret = ctx.cookies.flowSecret(req, flowId);
  if (!secret || !safeEqual(digest(secret), request.pending.browserBinding)) {
    ctx.log.warn({ client_id: request.pending.clientId }, 'consent: refused, no flow cookie of this page');
    throw new OAuthError(
      'access_denied',
      'the consent must be given in the browser that opened the authorization request',
      403,
    );
  }
  if (!safeEqual(single(form, 'csrf_token') ?? '', request.csrfToken)) {
    ctx.log.warn({ client_id: request.pending.clientId }, 'consent: refused, wrong CSRF token');
    throw new OAuthError('access_denied', 'the consent form is not the one this server sent', 403);
  }
  const decision = single(form, 'decision');
  if (decision !== 'approve' && decision !== 'deny') {
    throw new OAuthError('invalid_request', 'decision must be approve or deny');
  }
  const taken = await ctx.storage.takeConsentRequest(flowId);
  if (!taken) throw expired;
  const { pending } = taken;
  ctx.log.info({ client_id: pending.clientId, decision }, 'consent: decided');
  if (decision === 'approve') {
    return toUpstream(ctx, req, res, pending, taken.state, taken.location, 303);
  }
  // RFC 6749 §4.1.2.1: the resource owner denied the request. The flow cookie goes first,
  // in this response, so the client's redirect URI never sees a live entry.
  const denied = new OAuthError('access_denied', 'the user denied the request');
  const ttl = AUTH_SERVER_DEFAULTS.pendingAuthorizationSec;
  redirect(
    res,
    errorRedirectUrl(pending.redirectUri, denied, pending.clientState, ctx.issuer),
    [ctx.cookies.withoutFlow(req, flowId, ttl)],
    303,
  );
}

export async function callback(
  ctx: AuthContext,
  req: IncomingMessage,
  q: URLSearchParams,
  res: ServerResponse,
): Promise<void> {
  const state = q.get('state');
  const upstreamError = q.get('error');
  if (!state) throw new OAuthError('invalid_request', 'missing state parameter');
  if (!upstreamError && !q.get('code')) throw new OAuthError('invalid_request', 'missing code parameter');
  // Single use: taken before anything else, so a refused callback cannot be tried again.
  const pending = await ctx.storage.takePending(state);
  if (!pending || ctx.nowSec() - pending.createdAt > AUTH_SERVER_DEFAULTS.pendingAuthorizationSec) {
    throw new OAuthError('invalid_request', 'authorization request not found or expired');
  }
  // The browser that approved (or was remembered) must be the one that comes back: a
  // callback URL replayed elsewhere, or an upstream login link handed to someone else,
  // carries no flow cookie of this flow (best practices, "OAuth State Parameter Validation").
  const secret = ctx.cookies.flowSecret(req, pending.flowId);
  if (!secret || !pending.browserBinding || !safeEqual(digest(secret), pending.browserBinding)) {
    ctx.log.warn({ client_id: pending.clientId }, 'callback: refused, not the browser that started the flow');
    throw new OAuthError(
      'invalid_request',
      'this sign-in was not started in this browser (its flow cookie is missing); start again from your application',
    );
  }
  const ttl = AUTH_SERVER_DEFAULTS.pendingAuthorizationSec;
  const cookies = [ctx.cookies.withoutFlow(req, pending.flowId, ttl)];
  const backWithError = (err: OAuthError): void =>
    redirect(res, errorRedirectUrl(pending.redirectUri, err, pending.clientState, ctx.issuer), cookies);
  // A later leg of a chain that fails leaves none of the earlier legs' upstream tokens behind.
  const abandon = async (): Promise<void> => {
    if (pending.chain !== undefined) await ctx.storage.revokeSession(pending.sessionId, ttl);
  };
  if (upstreamError) {
    await abandon();
    return backWithError(new OAuthError('access_denied', 'the identity provider refused the login'));
  }
  const upstream = ctx.upstreams.get(pending.upstream);
  if (!upstream) throw new OAuthError('invalid_request', 'authorization request not found or expired');
  let exchanged: Awaited<ReturnType<typeof upstream.exchangeCode>>;
  try {
    exchanged = await upstream.exchangeCode(q, {
      state,
      codeVerifier: pending.upstreamVerifier,
      nonce: pending.nonce,
    });
  } catch (err) {
    await abandon();
    throw err;
  }
  const { tokens, identity } = exchanged;
  let user: ChainUser;
  if (pending.chain === undefined) {
    const id = identity.synthetic
      ? identity.subject
      : await ctx.storage.resolveUser(upstream.name, identity.subject);
    if (pending.rememberedUser !== undefined && pending.rememberedUser !== id) {
      // The page was skipped for the user this browser remembered, but someone else logged in:
      // that person approved nothing. Forget the browser; the next attempt shows the page.
      ctx.log.warn({ client_id: pending.clientId }, 'callback: remembered approval belongs to another user');
      cookies.push(ctx.cookies.forget());
      return backWithError(
        new OAuthError(
          'access_denied',
          "the approval remembered in this browser is another account's; sign in again to approve",
        ),
      );
    }
    user = {
      id,
      synthetic: identity.synthetic,
      ...definedOnly({ name: identity.name, email: identity.email }),
    };
  } else {
    user = pending.chain.user;
    // A later leg's account is linked to the chain's user on first use; an account already
    // linked to someone else is refused, never merged (the reference's "identity
    // verification failed"). A token-derived first identity has no user row to link to.
    if (!identity.synthetic && !user.synthetic) {
      const linked = await ctx.storage.resolveUser(upstream.name, identity.subject, user.id);
      if (linked !== user.id) {
        ctx.log.warn(
          { client_id: pending.clientId, upstream: upstream.name },
          'callback: chain refused, the account belongs to another user',
        );
        await abandon();
        return backWithError(
          new OAuthError(
            'access_denied',
            `identity verification failed: the ${upstream.name} account you signed in with belongs to another user; sign in there with your own account`,
          ),
        );
      }
    }
  }
  await storeUpstreamTokens(ctx, pending.sessionId, upstream.name, tokens, {
    user_id: user.id,
    upstream_subject: identity.subject,
    client_id: pending.clientId,
    session_expires_at: ctx.nowSec() + ctx.cfg.refreshTokenLifespanSec,
  });

  const done = [...(pending.chain?.done ?? []), upstream.name];
  const next = await nextLeg(ctx, pending.sessionId, done);
  if (next !== undefined) {
    try {
      return await toNextLeg(ctx, req, res, pending, next, { done, user });
    } catch (err) {
      await ctx.storage.revokeSession(pending.sessionId, ttl);
      throw err;
    }
  }

  const { token: code, signature } = ctx.opaque.mint('skc');
  const record = {
    clientId: pending.clientId,
    redirectUri: pending.redirectUri,
    codeChallenge: pending.codeChallenge,
    scopes: pending.scopes,
    audience: pending.audience,
    sessionId: pending.sessionId,
    subject: user.id,
    ...definedOnly({ name: user.name, email: user.email }),
  };
  await ctx.storage.saveAuthCode(signature, record, ctx.cfg.authCodeLifespanSec);
  // A synthetic subject changes with every token: there is no one to remember.
  if (!user.synthetic) cookies.push(await rememberApproval(ctx, req, user.id, pending));
  // RFC 6749 §4.1.2 and RFC 9207 §2: the code, the client's state, and this issuer.
  const u = new URL(pending.redirectUri);
  u.searchParams.set('code', code);
  if (pending.clientState !== undefined) u.searchParams.set('state', pending.clientState);
  u.searchParams.set('iss', ctx.issuer);
  redirect(res, u.href, cookies);
}

/** The host a browser signs in at for an upstream (shown on the consent page). */
function upstreamHost(u: ResolvedUpstream): string {
  return new URL(u.oidc?.issuerUrl ?? u.oauth2?.authorizationEndpoint ?? '').host;
}

/** An upstream token the session can still use: current, or refreshable. */
function usable(rec: UpstreamTokenRecord | undefined, nowSec: number): boolean {
  if (rec?.access_token === undefined || rec.access_token === '') return false;
  return rec.expires_at === undefined || rec.expires_at > nowSec || rec.refresh_token !== undefined;
}

/**
 * Login chain (as ToolHive's embedded server walks it): the next upstream, in config order, that has
 * not been walked and holds no usable token for this session; none when the chain is done.
 */
async function nextLeg(
  ctx: AuthContext,
  sessionId: string,
  done: string[],
): Promise<UpstreamProvider | undefined> {
  for (const u of ctx.cfg.upstreams) {
    if (done.includes(u.name)) continue;
    if (usable(await ctx.storage.getUpstreamTokens(sessionId, u.name), ctx.nowSec())) continue;
    return ctx.upstreams.get(u.name);
  }
  return undefined;
}

/**
 * Sends the browser on to the next upstream of the chain: a new pending entry (fresh `state`,
 * PKCE verifier and nonce; same session, client request and user) bound to this browser by
 * a fresh flow-cookie secret, exactly as the first leg.
 */
async function toNextLeg(
  ctx: AuthContext,
  req: IncomingMessage,
  res: ServerResponse,
  previous: PendingAuthorization,
  next: UpstreamProvider,
  chain: NonNullable<PendingAuthorization['chain']>,
): Promise<void> {
  const state = randomText(20);
  const leg: PendingAuthorization = {
    clientId: previous.clientId,
    redirectUri: previous.redirectUri,
    clientState: previous.clientState,
    codeChallenge: previous.codeChallenge,
    scopes: previous.scopes,
    audience: previous.audience,
    upstream: next.name,
    upstreamVerifier: randomText(32),
    nonce: randomText(20),
    sessionId: previous.sessionId,
    createdAt: ctx.nowSec(),
    flowId: previous.flowId,
    browserBinding: '',
    chain,
  };
  const location = await next.authorizationUrl({
    state,
    codeVerifier: leg.upstreamVerifier,
    nonce: leg.nonce,
  });
  ctx.log.info({ client_id: leg.clientId, upstream: next.name }, 'callback: login chain goes on');
  await toUpstream(ctx, req, res, leg, state, location, 302);
}

/** Records the approval for (user, client) and returns the browser's "remembered" cookie. */
async function rememberApproval(
  ctx: AuthContext,
  req: IncomingMessage,
  userId: string,
  pending: PendingAuthorization,
): Promise<string> {
  const keep = AUTH_SERVER_DEFAULTS.consentRememberSec;
  const resources = consentResources(pending, ctx.cfg.allowedAudiences);
  const previous = await ctx.storage.getApproval(userId, pending.clientId);
  await ctx.storage.saveApproval(userId, pending.clientId, mergeApproval(previous, pending, resources), keep);
  let id: string | undefined;
  for (const presented of ctx.cookies.rememberedIds(req)) {
    if ((await ctx.storage.getRememberedBrowser(digest(presented))) === userId) id = presented;
  }
  id ??= randomText(32);
  await ctx.storage.saveRememberedBrowser(digest(id), userId, keep);
  return ctx.cookies.remember(id, keep);
}
