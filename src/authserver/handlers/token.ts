/**
 * The token endpoint (RFC 6749 §3.2, OAuth 2.1 §3.2): `authorization_code` grants with PKCE
 * (RFC 7636) and `refresh_token` grants with rotation and reuse detection (RFC 9700 §4.14),
 * for public clients only. Access tokens are JWTs (RFC 9068) whose audience is the resource
 * (RFC 8707); refresh tokens are opaque and single-use. Rate-limited per client address.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SignJWT } from 'jose';
import { type AuthContext, audienceOf, DCR_CLIENT_TTL_SEC } from '../context.js';
import { OAuthError } from '../errors.js';
import { NO_STORE, readForm, s256, safeEqual, sendJson, single } from '../http.js';
import type { ClientRecord, GrantRecord } from '../storage.js';

/** How long a used authorization code is remembered, to detect its replay. */
const INVALIDATED_CODE_REMEMBER_SEC = 30 * 60;
/** RFC 7636 §4.1: 43-128 unreserved characters. */
const VERIFIER_RE = /^[A-Za-z0-9\-._~]{43,128}$/;

export async function token(ctx: AuthContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const wait = ctx.tokenLimiter.take(req.socket.remoteAddress ?? 'unknown');
  if (wait > 0) {
    throw new OAuthError('temporarily_unavailable', 'too many token requests; slow down', 429, {
      'retry-after': String(wait),
    });
  }
  const form = await readForm(req, 'the token request');
  const clientId = clientIdOf(req, form);
  const client = await ctx.storage.getClient(clientId);
  if (!client) throw new OAuthError('invalid_client', 'unknown client', 401);
  const grantType = single(form, 'grant_type');
  if (!grantType || !client.grant_types.includes(grantType)) {
    throw new OAuthError(
      'unauthorized_client',
      `grant_type ${grantType ?? '(missing)'} is not allowed for this client`,
    );
  }
  const grant = GRANTS.get(grantType);
  if (grant === undefined)
    throw new OAuthError('unsupported_grant_type', `grant_type ${grantType} is not supported`);
  const body = await grant(ctx, client, form);
  await ctx.storage.touchClient(client.client_id, DCR_CLIENT_TTL_SEC);
  sendJson(res, 200, body, NO_STORE);
}

/** One grant type's exchange (RFC 6749 §4.x): checks the form for `client`, returns the token response. */
type GrantHandler = (
  ctx: AuthContext,
  client: ClientRecord,
  form: URLSearchParams,
) => Promise<Record<string, unknown>>;

/** Public clients identify themselves with `client_id` (in the body, or as Basic user with no secret). */
function clientIdOf(req: IncomingMessage, form: URLSearchParams): string {
  const fromBody = single(form, 'client_id');
  const auth = req.headers.authorization;
  if (auth?.startsWith('Basic ')) {
    const decoded = Buffer.from(auth.slice(6), 'base64').toString('utf8');
    const user = decodeURIComponent(decoded.split(':')[0] ?? '');
    if (fromBody && fromBody !== user)
      throw new OAuthError('invalid_request', 'client_id differs between header and body');
    return user;
  }
  if (!fromBody) throw new OAuthError('invalid_client', 'client_id is required', 401);
  return fromBody;
}

/*
 * Ordering for durability (see redis-storage.ts): the new refresh token is stored (and, in
 * Sentinel mode, replicated) BEFORE the code or old refresh token is consumed. A storage
 * failure therefore leaves the presented credential unused, and the client may simply
 * retry; consuming first would burn it and turn the retry into a "replay".
 */
const codeGrant: GrantHandler = async (ctx, client, form) => {
  const code = single(form, 'code') ?? '';
  const verifier = single(form, 'code_verifier');
  const signature = ctx.opaque.verify('skc', code);
  if (!signature) throw new OAuthError('invalid_grant', 'the authorization code is invalid or expired');
  const rec = await ctx.storage.getAuthCode(signature);
  if (!rec) throw new OAuthError('invalid_grant', 'the authorization code is invalid or expired');
  if (!safeEqual(rec.clientId, client.client_id)) {
    throw new OAuthError('invalid_grant', 'the code was issued to another client');
  }
  if (single(form, 'redirect_uri') !== rec.redirectUri) {
    throw new OAuthError('invalid_grant', 'redirect_uri does not match the authorization request');
  }
  if (!verifier || !VERIFIER_RE.test(verifier)) {
    throw new OAuthError('invalid_grant', 'code_verifier is required (43-128 unreserved characters)');
  }
  if (!safeEqual(s256(verifier), rec.codeChallenge)) {
    throw new OAuthError('invalid_grant', 'PKCE verification failed');
  }
  const audience = audienceOf(ctx, form.getAll('resource'), rec.audience);
  const body = await issue(ctx, { ...rec, audience });
  // OAuth 2.1 §4.1.3 / RFC 9700 §4.5: a replayed code revokes every token issued from it.
  await checkConsumed(ctx, rec, await ctx.storage.consumeAuthCode(signature, INVALIDATED_CODE_REMEMBER_SEC), {
    invalid: 'the authorization code is invalid or expired',
    reuseLog: 'authorization code replay: grant revoked',
    reused: 'the authorization code was already used; its tokens are revoked',
  });
  return body;
};

const refreshGrant: GrantHandler = async (ctx, client, form) => {
  const signature = ctx.opaque.verify('skr', single(form, 'refresh_token') ?? '');
  if (!signature) throw new OAuthError('invalid_grant', 'the refresh token is invalid or expired');
  const rec = await ctx.storage.getRefreshToken(signature);
  if (!rec) throw new OAuthError('invalid_grant', 'the refresh token is invalid or expired');
  if (!safeEqual(rec.clientId, client.client_id)) {
    throw new OAuthError('invalid_grant', 'the refresh token was issued to another client');
  }
  if (await ctx.storage.isSessionRevoked(rec.sessionId)) {
    throw new OAuthError('invalid_grant', 'the refresh token has been revoked');
  }
  const scopeParam = single(form, 'scope');
  let scopes = rec.scopes;
  if (scopeParam !== undefined) {
    const asked = scopeParam.split(' ').filter(Boolean);
    const extra = asked.filter((s) => !rec.scopes.includes(s));
    if (extra.length) {
      throw new OAuthError('invalid_scope', `scope beyond the original grant: ${extra.join(' ')}`);
    }
    scopes = asked;
  }
  const audience = audienceOf(ctx, form.getAll('resource'), rec.audience);
  const body = await issue(ctx, { ...rec, scopes, audience }, rec.scopes);
  // RFC 9700 §4.14.2: a rotated refresh token presented again means it leaked; end the grant.
  await checkConsumed(ctx, rec, await ctx.storage.consumeRefreshToken(signature), {
    invalid: 'the refresh token is invalid or expired',
    reuseLog: 'refresh token reuse: grant revoked',
    reused: 'the refresh token was already used; the grant is revoked',
  });
  return body;
};

/** The grant types this server issues tokens for. */
const GRANTS = new Map<string, GrantHandler>([
  ['authorization_code', codeGrant],
  ['refresh_token', refreshGrant],
]);

/**
 * What consuming the presented code or refresh token found (after the new tokens are stored,
 * see above). Nothing: it expired or another request used it first, `invalid_grant`. Already
 * used: it leaked, so the grant ends — every token of its session is revoked and the user's
 * approval of the client is forgotten, so the next login asks again — and the answer is
 * `invalid_grant` with `messages.reused` (`messages.reuseLog` goes to the log).
 */
async function checkConsumed(
  ctx: AuthContext,
  rec: GrantRecord,
  consumed: { reused: boolean } | undefined,
  messages: { invalid: string; reuseLog: string; reused: string },
): Promise<void> {
  if (!consumed) throw new OAuthError('invalid_grant', messages.invalid);
  if (!consumed.reused) return;
  await ctx.storage.revokeSession(rec.sessionId, ctx.cfg.refreshTokenLifespanSec);
  await ctx.storage.deleteApproval(rec.subject, rec.clientId);
  ctx.log.warn({ client_id: rec.clientId }, messages.reuseLog);
  throw new OAuthError('invalid_grant', messages.reused);
}

/** Mints the access token and, when offline access was granted, a rotated refresh token. */
async function issue(
  ctx: AuthContext,
  grant: GrantRecord,
  grantedScopes: string[] = grant.scopes,
): Promise<Record<string, unknown>> {
  const now = ctx.nowSec();
  const key = ctx.keys.current;
  const claims: Record<string, unknown> = {
    scp: grant.scopes,
    client_id: grant.clientId,
    tsid: grant.sessionId,
  };
  if (grant.name !== undefined) claims['name'] = grant.name;
  if (grant.email !== undefined) claims['email'] = grant.email;
  const accessToken = await new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })
    .setIssuer(ctx.issuer)
    .setSubject(grant.subject)
    .setAudience(grant.audience)
    .setIssuedAt(now)
    .setNotBefore(now)
    .setExpirationTime(now + ctx.cfg.accessTokenLifespanSec)
    .setJti(randomUUID())
    .sign(key.privateKey);
  const body: Record<string, unknown> = {
    access_token: accessToken,
    token_type: 'Bearer',
    expires_in: ctx.cfg.accessTokenLifespanSec,
    scope: grant.scopes.join(' '),
  };
  if (grantedScopes.includes('offline_access') || grantedScopes.includes('offline')) {
    const { token, signature } = ctx.opaque.mint('skr');
    // The refresh token keeps the scopes of the original grant, so a narrowed refresh can widen back.
    await ctx.storage.saveRefreshToken(
      signature,
      { ...grant, scopes: grantedScopes },
      ctx.cfg.refreshTokenLifespanSec,
    );
    body['refresh_token'] = token;
  }
  return body;
}
