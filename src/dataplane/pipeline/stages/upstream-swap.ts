/**
 * `upstreamswap`: the embedded authorization server's upstream token for the caller (the
 * identity provider's token it obtained at login) replaces `Authorization`, or goes in a
 * custom header (`upstream_swap_config`).
 */
import { SkepError } from '../../../shared/index.js';
import type { StageFactory } from '../types.js';
import { paramsObject, runConfigBlock } from './params.js';

const TYPE = 'upstreamswap';

export const upstreamSwapStage: StageFactory = {
  type: TYPE,
  fromRunConfig: (config) =>
    config.upstream_swap_config === undefined ? undefined : { config: config.upstream_swap_config },
  async create(parameters, deps) {
    const swap = runConfigBlock(TYPE, paramsObject(TYPE, parameters), 'config', 'upstream_swap_config') ?? {};
    const custom = swap.header_strategy === 'custom';
    if (custom && !swap.custom_header_name)
      throw new SkepError(
        'invalid_config',
        "upstream_swap_config.custom_header_name must be set when header_strategy is 'custom'",
      );
    const { createUpstreamInjectMiddleware } = await import('../../middleware/auth/upstream-inject.js');
    return createUpstreamInjectMiddleware(
      { providerName: swap.provider_name ?? '', ...(custom ? { headerName: swap.custom_header_name } : {}) },
      { source: deps.authServer, logger: deps.logger },
    );
  },
};
