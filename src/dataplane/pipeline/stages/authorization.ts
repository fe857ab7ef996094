/**
 * The `authorization` stage (`authz_config`, `authz_config_path`; ToolHive's authz middleware):
 * every MCP request is judged by the workload's authorizer before it reaches the server, following
 * the reference's method table: calls, prompt gets and resource reads are authorized; `tools/list`,
 * `prompts/list` and `resources/list` answers are filtered down to what the caller may use; a short
 * list of protocol methods always passes; every other method is denied. A denial is HTTP 403 with
 * JSON-RPC error 403 "Unauthorized" (ToolHive's answer); why is logged at WARN, never sent, and
 * never with claim or argument values.
 *
 * Deliberate differences from the reference:
 * - `authz_config_path` alone enables the stage (the reference ignores it on this path).
 * - A client's JSON-RPC *response* (its answer to a server's sampling, elicitation or roots
 *   request) passes: the reference refuses it with 400, which breaks those features behind
 *   any policy. Anything else that is not one JSON-RPC request is refused, as there.
 * - The tool-annotation cache is replaced by a first `tools/list` page and extended by later
 *   pages (the reference replaces it on every page, forgetting the earlier ones).
 */
import {
  type AuthzConfig,
  claimProvider,
  loadAuthzConfigFile,
  parseAuthzConfig,
} from '../../middleware/authz/index.js';
import { definedOnly, isRecord, SkepError } from '../../../shared/index.js';
import type { StageFactory } from '../types.js';

export interface AuthorizationParameters {
  config_path?: string;
  config_data?: unknown;
}

function parseParameters(parameters: unknown): AuthorizationParameters {
  if (!isRecord(parameters))
    throw new SkepError(
      'invalid_config',
      'authorization parameters must be an object with config_data or config_path',
    );
  const unknown = Object.keys(parameters).filter((k) => k !== 'config_path' && k !== 'config_data');
  if (unknown.length > 0)
    throw new SkepError(
      'invalid_config',
      `authorization parameters: unknown keys ${unknown.map((k) => `'${k}'`).join(', ')} (allowed: config_data, config_path)`,
    );
  const path = parameters['config_path'];
  if (path !== undefined && typeof path !== 'string')
    throw new SkepError('invalid_config', 'authorization parameters: config_path must be a string');
  return definedOnly({
    config_path: path === '' ? undefined : path,
    config_data: parameters['config_data'],
  });
}

/** The authorizer configuration the parameters give (inline wins over a file). */
function configOf(parameters: unknown): AuthzConfig {
  const p = parseParameters(parameters);
  if (p.config_data !== undefined) return parseAuthzConfig(p.config_data, 'authz_config');
  if (p.config_path !== undefined) return loadAuthzConfigFile(p.config_path, 'authz_config_path').config;
  throw new SkepError('invalid_config', 'authorization parameters: set config_data or config_path');
}

export const authorizationStage: StageFactory = {
  type: 'authorization',

  fromRunConfig(config) {
    if (config.authz_config !== undefined) return { config_data: config.authz_config };
    if (config.authz_config_path !== undefined && config.authz_config_path !== '')
      return { config_path: config.authz_config_path };
    return undefined;
  },

  check(parameters, runConfig) {
    claimProvider(configOf(parameters), runConfig);
  },

  async create(parameters, deps) {
    const config = configOf(parameters);
    const provider = claimProvider(config, deps.config);
    if (provider !== '' && deps.authServer === undefined)
      throw new SkepError(
        'invalid_config',
        `authz_config: claims from upstream provider "${provider}" need the embedded authorization server, which is not running`,
      );
    // Loaded here, so that a workload without a policy never loads the authorizer (runner footprint).
    const [{ createAuthorizer }, { AuthorizationStage }] = await Promise.all([
      import('../../middleware/authz/runtime.js'),
      import('./authorization-stage.js'),
    ]);
    return new AuthorizationStage(createAuthorizer(config, deps.config.name), provider, deps);
  },
};
