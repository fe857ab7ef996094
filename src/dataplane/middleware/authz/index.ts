/**
 * Authorization at the proxy (`authz_config`, `authz_config_path`; as ToolHive's authz middleware
 * has them): the configuration parser and file loader, the claim source check, and the two
 * authorizers — Cedar in-process (`cedarv1`) and an external decision point (`httpv1`). The
 * pipeline stage that applies them to MCP requests is `src/dataplane/pipeline/stages/authorization.ts`. What
 * only a running proxy needs is also exported by `runtime.ts`, which the stage imports on demand,
 * so that a workload without a policy never loads the authorizers.
 */
import { SkepError } from '../../../shared/index.js';
import type { RunConfig } from '../../../workloads/index.js';
import type { AuthzConfig } from './config.js';

export type { AuthzDecision, AuthzFeature, AuthzRequest, Authorizer, ToolAnnotations } from './authorizer.js';
export type { AuthzConfig, CedarAuthzConfig, HttpAuthzConfig } from './config.js';
export { AUTHZ_DEFAULTS, loadAuthzConfigFile, parseAuthzConfig } from './config.js';
export { annotationsOf } from './authorizer.js';
export { decodeUpstreamClaims, type UpstreamClaims } from './upstream-claims.js';
// The authorizers (Cedar, httpv1) and what the stage reads from tools and tokens:
// `./runtime.js`, imported on demand by the authorization stage.

/**
 * The upstream provider whose token's claims policies judge (ToolHive's claim source): the
 * configured `primary_upstream_provider`, or — as the reference does — the first upstream of the
 * embedded authorization server; '' when claims come from the request's own token. Throws
 * `invalid_config` when the name is set without the embedded authorization server or names none of its
 * upstreams.
 */
export function claimProvider(
  config: AuthzConfig,
  run: Pick<RunConfig, 'embedded_auth_server_config'>,
): string {
  if (config.type !== 'cedarv1') return '';
  const named = config.cedar.primary_upstream_provider;
  const embedded = run.embedded_auth_server_config;
  if (embedded === undefined) {
    if (named !== '')
      throw new SkepError(
        'invalid_config',
        'authz_config.cedar.primary_upstream_provider needs the embedded authorization server (embedded_auth_server_config)',
      );
    return '';
  }
  const upstreams = (embedded.upstreams ?? []).map((u) => u.name);
  if (named === '') return upstreams[0] ?? '';
  if (!upstreams.includes(named))
    throw new SkepError(
      'invalid_config',
      `authz_config.cedar.primary_upstream_provider: "${named}" is not an upstream of embedded_auth_server_config (${upstreams.join(', ') || 'none configured'})`,
    );
  return named;
}
