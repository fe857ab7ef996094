/**
 * `auth`: inbound authentication. `oidc_config` (JWT/JWKS or RFC 7662 introspection) or the
 * embedded authorization server's own tokens establish `ctx.identity`; a request without a
 * valid token gets 401 and an RFC 6750 challenge pointing at the RFC 9728 metadata. Without
 * either, there is no stage: later stages see the local user (`../identity.ts`).
 */
import { definedOnly, SkepError } from '../../../shared/index.js';
import type { RunConfig } from '../../../schemas/index.js';
import type { StageFactory } from '../types.js';
import { paramsObject, runConfigBlock } from './params.js';
import { optionalSecret } from './secrets.js';

const TYPE = 'auth';

/**
 * The bearer-token file for discovery and the JWKS: `oidc_config.authTokenFile`, else the
 * run configuration's top-level `jwks_auth_token_file` (the reference's older name for the same
 * file; its CLI writes both). When both are set they name the same file: import refuses two.
 */
function authTokenFileOf(
  oidc: NonNullable<RunConfig['oidc_config']>,
  config: RunConfig,
): { authTokenFile?: string; authTokenField?: string } {
  if (oidc.authTokenFile) return { authTokenFile: oidc.authTokenFile };
  if (config.jwks_auth_token_file)
    return { authTokenFile: config.jwks_auth_token_file, authTokenField: 'jwks_auth_token_file' };
  return {};
}

export const authStage: StageFactory = {
  type: TYPE,
  fromRunConfig(config) {
    if (config.embedded_auth_server_config !== undefined) return { embedded_auth_server: true };
    const oidc = config.oidc_config;
    if (oidc !== undefined && (oidc.issuer || oidc.jwksurl || oidc.introspectionURL))
      return { oidc_config: oidc };
    return undefined;
  },
  async create(parameters, deps) {
    const params = paramsObject(TYPE, parameters);
    const oidc = runConfigBlock(TYPE, params, 'oidc_config', 'oidc_config');
    const { createInboundAuthMiddleware, createOidcVerifier } =
      await import('../../middleware/auth/inbound.js');
    const resourceUrl = oidc?.resourceURL ?? deps.resourceUrl;
    if (params['embedded_auth_server'] === true) {
      // The runner creates the server from the same block and mounts it on the proxy; without
      // it the workload would silently run unprotected.
      const as = deps.authServer;
      if (as === undefined)
        throw new Error('embedded_auth_server_config is set but no authorization server was passed');
      if (resourceUrl === undefined)
        throw new SkepError('invalid_config', 'the embedded authorization server needs a resource URL');
      return createInboundAuthMiddleware({
        verify: (token) => as.verifyAccessToken(token, resourceUrl),
        authorizationServers: [as.issuer],
        logger: deps.logger,
        resourceUrl,
        ...(oidc?.scopes ? { scopes: oidc.scopes } : {}),
      });
    }
    if (oidc === undefined || !(oidc.issuer || oidc.jwksurl || oidc.introspectionURL))
      throw new SkepError(
        'invalid_config',
        "middleware_configs: 'auth' needs oidc_config with an issuer, jwksurl or introspectionURL",
      );
    const clientSecret = await optionalSecret(
      oidc.clientSecret,
      deps.secretLookup,
      'oidc_config.clientSecret',
    );
    const verify = createOidcVerifier(
      {
        allowHttp: oidc.insecureAllowHTTP === true,
        allowPrivateIP: oidc.allowPrivateIP === true,
        ...(oidc.issuer ? { issuer: oidc.issuer } : {}),
        ...(oidc.audience ? { audience: oidc.audience } : {}),
        ...(oidc.jwksurl ? { jwksUrl: oidc.jwksurl } : {}),
        ...(oidc.introspectionURL ? { introspectionUrl: oidc.introspectionURL } : {}),
        ...(oidc.clientID ? { clientId: oidc.clientID } : {}),
        ...(oidc.cacertPath ? { caCertPath: oidc.cacertPath } : {}),
        ...authTokenFileOf(oidc, deps.config),
        ...definedOnly({ clientSecret, serviceAccount: oidc.kubernetesServiceAccount }),
      },
      definedOnly({ fetch: deps.fetch, now: deps.now }),
    );
    return createInboundAuthMiddleware({
      verify,
      authorizationServers: oidc.issuer ? [oidc.issuer] : [],
      logger: deps.logger,
      // The runner's own URL (not a configured resourceURL) is named as each client reaches it.
      resourceFollowsView: !oidc.resourceURL,
      ...definedOnly({ resourceUrl }),
      ...(oidc.scopes ? { scopes: oidc.scopes } : {}),
    });
  },
};
