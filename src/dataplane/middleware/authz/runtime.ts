/**
 * The half of authorization that only a running proxy needs: the authorizers and what the
 * stage reads from tools and tokens. The pipeline stage imports this module on demand (the
 * index re-exports it too), so a workload without a policy never loads Cedar's bindings.
 */
import type { Authorizer } from './authorizer.js';
import { CedarAuthorizer } from './cedar.js';
import type { AuthzConfig } from './config.js';
import { HttpPdpAuthorizer } from './http-pdp.js';

export { annotationsOf } from './authorizer.js';
export { CedarAuthorizer } from './cedar.js';
export { HttpPdpAuthorizer } from './http-pdp.js';
export { decodeUpstreamClaims } from './upstream-claims.js';

/** Builds the authorizer a configuration names, for the workload `serverName`. */
export function createAuthorizer(config: AuthzConfig, serverName: string): Authorizer {
  return config.type === 'cedarv1'
    ? new CedarAuthorizer(config, serverName)
    : new HttpPdpAuthorizer(config, serverName);
}
