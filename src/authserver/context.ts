/**
 * What every endpoint module of the authorization server works with: the resolved
 * configuration, keys, storage, upstream providers and limiters of one server, plus the two
 * rules more than one endpoint applies (the RFC 8707 audience and storing upstream tokens).
 */
import type { Logger } from '../shared/index.js';
import type { ResolvedAuthServerConfig } from './config.js';
import type { BrowserCookies } from './cookies.js';
import { OAuthError } from './errors.js';
import type { KeySet } from './keys.js';
import type { OpaqueTokens } from './opaque-token.js';
import type { RateLimiter } from './rate-limit.js';
import type { AuthStorage, UpstreamTokenRecord } from './storage.js';
import type { UpstreamProvider, UpstreamTokens } from './upstream.js';

export interface AuthContext {
  readonly issuer: string;
  readonly cfg: ResolvedAuthServerConfig;
  readonly keys: KeySet;
  readonly opaque: OpaqueTokens;
  readonly storage: AuthStorage;
  readonly upstreams: ReadonlyMap<string, UpstreamProvider>;
  readonly log: Logger;
  readonly tokenLimiter: RateLimiter;
  readonly registerLimiter: RateLimiter;
  readonly cookies: BrowserCookies;
  /** Origins a consent POST may come from: the issuer's and the authorization endpoint's. */
  readonly consentOrigins: ReadonlySet<string>;
  nowSec(): number;
}

/** How long a dynamically registered client lives without being used (RFC 7591 clients). */
export const DCR_CLIENT_TTL_SEC = 30 * 24 * 3600;

/** RFC 8707 §2: the audience of the tokens; must be one of `allowed_audiences`. */
export function audienceOf(ctx: AuthContext, resources: string[], bound?: string[]): string[] {
  if (resources.length > 1)
    throw new OAuthError('invalid_target', 'Multiple resource parameters are not supported');
  const r = resources[0];
  if (r === undefined || r === '') {
    if (bound?.length) return bound;
    if (ctx.cfg.allowedAudiences.length === 1) return [...ctx.cfg.allowedAudiences];
    throw new OAuthError(
      'invalid_target',
      'the resource parameter is required (several audiences are allowed)',
    );
  }
  let url: URL;
  try {
    url = new URL(r);
  } catch {
    throw new OAuthError('invalid_target', `Resource "${r}" is not an absolute URI`);
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.hash || r.includes('#')) {
    throw new OAuthError('invalid_target', `Resource "${r}" must be an http(s) URI without a fragment`);
  }
  if (!ctx.cfg.allowedAudiences.includes(r)) {
    throw new OAuthError('invalid_target', `Resource "${r}" is not a registered audience`);
  }
  if (bound?.length && !bound.includes(r)) {
    throw new OAuthError('invalid_target', `Resource "${r}" was not part of the authorization`);
  }
  return [r];
}

/** Stores a session's upstream tokens, kept as long as the session may still be refreshed. */
export async function storeUpstreamTokens(
  ctx: AuthContext,
  sessionId: string,
  provider: string,
  tokens: UpstreamTokens,
  meta: Pick<UpstreamTokenRecord, 'user_id' | 'upstream_subject' | 'client_id' | 'session_expires_at'>,
): Promise<void> {
  const record: UpstreamTokenRecord = {
    provider_id: provider,
    access_token: tokens.accessToken,
    user_id: meta.user_id,
    upstream_subject: meta.upstream_subject,
    client_id: meta.client_id,
    session_expires_at: meta.session_expires_at,
  };
  if (tokens.refreshToken) record.refresh_token = tokens.refreshToken;
  if (tokens.idToken) record.id_token = tokens.idToken;
  if (tokens.expiresAt !== undefined) record.expires_at = tokens.expiresAt;
  const ttl = Math.max(1, record.session_expires_at - ctx.nowSec());
  await ctx.storage.saveUpstreamTokens(sessionId, record, ttl);
}
