/**
 * `upstreamInject` (`upstream_swap_config`): the embedded authorization server keeps, per
 * login session (`tsid` claim of its access tokens), the tokens of the upstream identity
 * provider; this middleware sends the named provider's access token to the remote server
 * (refreshed by the authorization server when needed). A session whose upstream token is
 * gone gets 401 `invalid_token`, so the client logs in again.
 */
import type { ProxyMiddleware } from '../../proxy/index.js';
import { type Logger, SkepError } from '../../../shared/index.js';
import { challenge, tokenHeader } from './http.js';

export interface UpstreamTokenSource {
  upstreamToken(sessionId: string, providerName: string): Promise<string>;
}

export interface UpstreamInjectOptions {
  providerName: string;
  /** Header for the token instead of `Authorization` (`header_strategy: custom`). */
  headerName?: string;
}

export function createUpstreamInjectMiddleware(
  options: UpstreamInjectOptions,
  deps: { source: UpstreamTokenSource | undefined; logger: Logger },
): ProxyMiddleware {
  if (options.providerName === '')
    throw new SkepError('invalid_config', 'upstream_swap_config.provider_name is required');
  const source = deps.source;
  if (source === undefined)
    throw new SkepError(
      'invalid_config',
      'upstream_swap_config needs the embedded authorization server (embedded_auth_server_config)',
    );
  const header = tokenHeader(options.headerName, 'upstream_swap_config.custom_header_name');
  return {
    name: 'upstreamswap',
    async handle(ctx) {
      const sessionId = ctx.identity.claims?.['tsid'];
      if (typeof sessionId !== 'string') return undefined;
      try {
        const token = await source.upstreamToken(sessionId, options.providerName);
        ctx.outboundHeaders[header] = `Bearer ${token}`;
        return undefined;
      } catch (err) {
        deps.logger.info(
          { provider: options.providerName, reason: (err as Error).message },
          'no upstream token',
        );
        return challenge(
          401,
          {
            error: 'invalid_token',
            error_description: 'upstream token is no longer valid; re-authentication required',
          },
          'upstream authentication required',
        );
      }
    },
  };
}
