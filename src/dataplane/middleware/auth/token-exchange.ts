/**
 * `tokenExchange` (RFC 8693): the caller's token is exchanged at `token_url` for one meant
 * for the remote service (audience, scopes), which goes out in `Authorization` or in
 * `external_token_header_name`. Exchanged tokens are cached per (SHA-256 of the subject
 * token, audience, scopes) until shortly before they — or the subject token — expire, so
 * a session's requests cost one exchange, not one each. A failed exchange is a 401.
 */
import { OAuthResponseError, type TokenResponse, tokenExchangeGrant } from '../../../protocol/oauth/index.js';
import type { ProxyMiddleware, ProxyRequestContext } from '../../proxy/index.js';
import { type Logger, outboundFetch, SkepError } from '../../../shared/index.js';
import { ExpiringCache } from './expiring-cache.js';
import {
  bearerFrom,
  challenge,
  configuredEndpointsPolicy,
  type FetchLike,
  sha256Hex,
  tokenHeader,
} from './http.js';

const TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:';
const ACCESS_TOKEN_TYPE = `${TOKEN_TYPE}access_token`;

export interface TokenExchangeOptions {
  tokenUrl: string;
  clientId?: string;
  clientSecret?: string;
  audience?: string;
  scopes?: string[];
  /** RFC 8693 §3 token type URN (short forms `access_token`, `id_token`, `jwt` accepted). */
  subjectTokenType?: string;
  /** Send the exchanged token in this header instead of `Authorization`. */
  headerName?: string;
}

export interface ExchangeDeps {
  fetch?: FetchLike;
  now?: () => number;
  logger: Logger;
  /** Cached tokens are dropped this long before they expire, ms (default 30 s). */
  expirySkewMs?: number;
  /** Lifetime assumed when the server sends no `expires_in`, ms (default 60 s). */
  defaultLifetimeMs?: number;
  maxEntries?: number;
}

/** Why an exchange failed, without the server's body (it may echo the token). */
/**
 * An exchange that gave no token: `unauthorized` when the token endpoint refused the subject
 * token or the client, `bad_gateway` when it could not be reached or its answer is unusable.
 */
export class TokenExchangeError extends SkepError {
  override readonly name = 'TokenExchangeError';
}

export function normalizeTokenType(value: string | undefined): string {
  if (value === undefined || value === '') return ACCESS_TOKEN_TYPE;
  if (['access_token', 'id_token', 'jwt'].includes(value)) return TOKEN_TYPE + value;
  if (/^urn:ietf:params:oauth:token-type:(access_token|id_token|jwt)$/.test(value)) return value;
  throw new SkepError(
    'invalid_config',
    `token_exchange_config.subject_token_type: unsupported token type "${value}"`,
  );
}

export class TokenExchanger {
  readonly #options: TokenExchangeOptions;
  readonly #subjectType: string;
  readonly #scope: string;
  readonly #cache: ExpiringCache<string>;
  readonly #fetch: FetchLike;
  readonly #now: () => number;
  readonly #skew: number;
  readonly #defaultLifetime: number;
  /** Round trips to the token endpoint (cache misses), for the benchmark and tests. */
  exchanges = 0;

  constructor(options: TokenExchangeOptions, deps: ExchangeDeps) {
    let url: URL;
    try {
      url = new URL(options.tokenUrl);
    } catch {
      throw new SkepError(
        'invalid_config',
        `token_exchange_config.token_url: "${options.tokenUrl}" is not a URL`,
      );
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw new SkepError('invalid_config', 'token_exchange_config.token_url: use an http(s) URL');
    if (options.clientSecret !== undefined && options.clientId === undefined)
      throw new SkepError('invalid_config', 'token_exchange_config: client_secret needs client_id');
    this.#options = options;
    this.#subjectType = normalizeTokenType(options.subjectTokenType);
    this.#scope = [...new Set(options.scopes ?? [])].sort().join(' ');
    this.#now = deps.now ?? Date.now;
    // The configured token endpoint may be private or loopback; never link-local (`src/shared/net`).
    this.#fetch =
      deps.fetch ??
      outboundFetch(
        configuredEndpointsPolicy([options.tokenUrl], {
          hint: 'only the host of token_url may be private or loopback',
        }),
      );
    this.#skew = deps.expirySkewMs ?? 30_000;
    this.#defaultLifetime = deps.defaultLifetimeMs ?? 60_000;
    this.#cache = new ExpiringCache({ maxEntries: deps.maxEntries ?? 10_000, now: this.#now });
  }

  /**
   * The exchanged token for `subjectToken`; `subjectExpiresAt` (epoch ms, from the subject's
   * `exp`) bounds how long the result is reused.
   */
  exchange(subjectToken: string, subjectExpiresAt?: number): Promise<string> {
    const key = `${sha256Hex(subjectToken)}\u0000${this.#options.audience ?? ''}\u0000${this.#scope}`;
    return this.#cache.getOrLoad(key, async () => {
      const loaded = await this.#request(subjectToken);
      const expiresAt = Math.min(loaded.expiresAt, subjectExpiresAt ?? Number.POSITIVE_INFINITY) - this.#skew;
      return { value: loaded.token, expiresAt };
    });
  }

  async #request(subjectToken: string): Promise<{ token: string; expiresAt: number }> {
    this.exchanges++;
    const o = this.#options;
    // RFC 8693 §2.1 request parameters.
    const params: Record<string, string> = {
      subject_token: subjectToken,
      subject_token_type: this.#subjectType,
      requested_token_type: ACCESS_TOKEN_TYPE,
    };
    if (o.audience) params['audience'] = o.audience;
    if (this.#scope) params['scope'] = this.#scope;
    const client =
      o.clientId === undefined
        ? undefined
        : { clientId: o.clientId, ...(o.clientSecret === undefined ? {} : { clientSecret: o.clientSecret }) };
    let answer: TokenResponse;
    try {
      answer = await tokenExchangeGrant(o.tokenUrl, client, params, this.#fetch);
    } catch (err) {
      if (!(err instanceof OAuthResponseError))
        throw new TokenExchangeError('bad_gateway', `token endpoint unreachable: ${(err as Error).message}`, {
          cause: err,
        });
      // RFC 8693 §2.2.1: access_token and token_type are REQUIRED.
      if (err.field === 'access_token' || err.field === 'token_type')
        throw new TokenExchangeError('bad_gateway', `response has no ${err.field}`, { cause: err });
      const code = err.error === undefined ? '' : ` (${err.error})`;
      throw new TokenExchangeError(
        err.code === 'unauthorized' ? 'unauthorized' : 'bad_gateway',
        `token endpoint answered ${err.status}${code}`,
        { cause: err },
      );
    }
    // RFC 8693 §2.2.1: issued_token_type is REQUIRED as well.
    if (answer.issuedTokenType === undefined || answer.issuedTokenType === '')
      throw new TokenExchangeError('bad_gateway', 'response has no issued_token_type');
    const expiresIn = answer.expiresIn ?? Number.NaN;
    const lifetime = Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn * 1000 : this.#defaultLifetime;
    return { token: answer.accessToken, expiresAt: this.#now() + lifetime };
  }
}

/** The `tokenexchange` middleware. Subject: the token a previous stage put out, else the caller's. */
export function createTokenExchangeMiddleware(
  options: TokenExchangeOptions,
  deps: ExchangeDeps,
): ProxyMiddleware & { readonly exchanger: TokenExchanger } {
  const exchanger = new TokenExchanger(options, deps);
  const header = tokenHeader(options.headerName, 'token_exchange_config.external_token_header_name');
  return {
    name: 'tokenexchange',
    exchanger,
    async handle(ctx: ProxyRequestContext) {
      const subject = bearerFrom(ctx.outboundHeaders['authorization']) ?? ctx.identity.token;
      // Nobody authenticated (no inbound auth configured): nothing to exchange.
      if (subject === undefined) return undefined;
      const exp = ctx.identity.token === subject ? ctx.identity.claims?.['exp'] : undefined;
      let token: string;
      try {
        token = await exchanger.exchange(subject, typeof exp === 'number' ? exp * 1000 : undefined);
      } catch (err) {
        deps.logger.warn({ reason: (err as Error).message }, 'token exchange failed');
        return challenge(
          401,
          { error: 'invalid_token', error_description: 'token exchange failed' },
          'Token exchange failed',
        );
      }
      // With a custom header the remote still sees the caller's token in Authorization.
      if (header !== 'authorization') ctx.outboundHeaders['authorization'] ??= `Bearer ${subject}`;
      ctx.outboundHeaders[header] = `Bearer ${token}`;
      return undefined;
    },
  };
}
