/**
 * `tokenexchange`: RFC 8693 exchange of the caller's token for one the server accepts
 * (`token_exchange_config`), replacing `Authorization` or set in a custom header.
 */
import { definedOnly, SkepError } from '../../../shared/index.js';
import type { StageFactory } from '../types.js';
import { paramsObject, runConfigBlock } from './params.js';
import { optionalSecret } from './secrets.js';

const TYPE = 'tokenexchange';

/** Where the exchanged token goes: 'replace' (Authorization) or 'custom' (a named header). */
export function tokenExchangeStrategy(te: {
  header_strategy?: string;
  external_token_header_name?: string;
}): string {
  return te.header_strategy ?? (te.external_token_header_name ? 'custom' : 'replace');
}

export const tokenExchangeStage: StageFactory = {
  type: TYPE,
  fromRunConfig: (config) =>
    config.token_exchange_config === undefined
      ? undefined
      : { token_exchange_config: config.token_exchange_config },
  async create(parameters, deps) {
    const te = runConfigBlock(
      TYPE,
      paramsObject(TYPE, parameters),
      'token_exchange_config',
      'token_exchange_config',
    );
    if (te === undefined)
      throw new SkepError(
        'invalid_config',
        "middleware_configs: 'tokenexchange' needs token_exchange_config",
      );
    if (!te.token_url) throw new SkepError('invalid_config', 'token_exchange_config.token_url is required');
    const strategy = tokenExchangeStrategy(te);
    if (strategy !== 'replace' && strategy !== 'custom')
      throw new SkepError(
        'invalid_config',
        `token_exchange_config.header_strategy: "${strategy}" (use 'replace' or 'custom')`,
      );
    if (strategy === 'custom' && !te.external_token_header_name)
      throw new SkepError(
        'invalid_config',
        "token_exchange_config.external_token_header_name must be set when header_strategy is 'custom'",
      );
    const secret = await optionalSecret(
      te.client_secret,
      deps.secretLookup,
      'token_exchange_config.client_secret',
    );
    const { createTokenExchangeMiddleware } = await import('../../middleware/auth/token-exchange.js');
    return createTokenExchangeMiddleware(
      {
        tokenUrl: te.token_url,
        ...(te.client_id ? { clientId: te.client_id } : {}),
        ...definedOnly({ clientSecret: secret }),
        ...(te.audience ? { audience: te.audience } : {}),
        ...(te.scopes ? { scopes: te.scopes } : {}),
        ...(te.subject_token_type ? { subjectTokenType: te.subject_token_type } : {}),
        ...(strategy === 'custom' ? { headerName: te.external_token_header_name } : {}),
      },
      { logger: deps.logger, ...definedOnly({ fetch: deps.fetch, now: deps.now }) },
    );
  },
};
