/**
 * `remote-auth` (Skep; the reference does this in its transport): the remote server's own
 * credentials from `remote_auth_config` — a bearer token (a secret reference, a literal or a
 * file), or an OAuth 2.1 client that logs the user in once (browser, PKCE, dynamic client
 * registration) and keeps the tokens refreshed.
 */
import { definedOnly, SkepError } from '../../../shared/index.js';
import type { RunConfig } from '../../../workloads/index.js';
import type { Stage, StageFactory } from '../types.js';
import { paramsObject, runConfigBlock, stringParam } from './params.js';
import { readTokenFile, secretOrLiteral } from './secrets.js';

const TYPE = 'remote-auth';

type RemoteAuth = NonNullable<RunConfig['remote_auth_config']>;

/** Whether the block asks for an OAuth login (rather than a fixed token or nothing). */
export function wantsRemoteOAuth(remote: RemoteAuth): boolean {
  return (
    !remote.bearer_token &&
    !remote.bearer_token_file &&
    (remote.client_id !== undefined ||
      remote.issuer !== undefined ||
      remote.authorize_url !== undefined ||
      remote.token_url !== undefined ||
      remote.scopes !== undefined ||
      remote.use_pkce === true)
  );
}

export const remoteAuthStage: StageFactory = {
  type: TYPE,
  fromRunConfig(config) {
    const remote = config.remote_auth_config;
    if (remote === undefined) return undefined;
    if (!remote.bearer_token && !remote.bearer_token_file && !wantsRemoteOAuth(remote)) return undefined;
    return { remote_auth_config: remote, ...definedOnly({ target_url: config.remote_url }) };
  },
  async create(parameters, deps): Promise<Stage | undefined> {
    const params = paramsObject(TYPE, parameters);
    const remote = runConfigBlock(TYPE, params, 'remote_auth_config', 'remote_auth_config');
    if (remote === undefined)
      throw new SkepError('invalid_config', "middleware_configs: 'remote-auth' needs remote_auth_config");
    const lookup = deps.secretLookup;
    if (remote.bearer_token || remote.bearer_token_file) {
      const bearer = remote.bearer_token
        ? await secretOrLiteral(remote.bearer_token, lookup, 'remote_auth_config.bearer_token')
        : await readTokenFile(remote.bearer_token_file as string, 'remote_auth_config.bearer_token_file');
      const { createStaticHeadersMiddleware } = await import('../../middleware/auth/static-headers.js');
      return createStaticHeadersMiddleware(
        'bearer-token',
        { Authorization: `Bearer ${bearer}` },
        'remote_auth_config',
      );
    }
    const remoteUrl = stringParam(TYPE, params, 'target_url') ?? deps.config.remote_url;
    if (remoteUrl === undefined)
      throw new SkepError('invalid_config', 'remote_auth_config OAuth needs remote_url');
    let clientSecret: string | undefined;
    if (remote.client_secret)
      clientSecret = await secretOrLiteral(remote.client_secret, lookup, 'remote_auth_config.client_secret');
    else if (remote.client_secret_file)
      clientSecret = await readTokenFile(remote.client_secret_file, 'remote_auth_config.client_secret_file');
    const { createRemoteOAuthMiddleware, RemoteOAuthClient } =
      await import('../../middleware/auth/remote-oauth.js');
    const timeoutSec = remote.timeout === undefined ? undefined : Number.parseInt(remote.timeout, 10);
    const client = new RemoteOAuthClient(
      {
        workload: deps.config.name,
        remoteUrl,
        ...(remote.client_id ? { clientId: remote.client_id } : {}),
        ...definedOnly({ clientSecret }),
        ...(remote.scopes ? { scopes: remote.scopes } : {}),
        ...(remote.issuer ? { issuer: remote.issuer } : {}),
        ...(remote.authorize_url ? { authorizeUrl: remote.authorize_url } : {}),
        ...(remote.token_url ? { tokenUrl: remote.token_url } : {}),
        ...(remote.resource ? { resource: remote.resource } : {}),
        ...definedOnly({ callbackPort: remote.callback_port, skipBrowser: remote.skip_browser }),
        ...(remote.oauth_params ? { oauthParams: remote.oauth_params } : {}),
        ...(timeoutSec !== undefined && Number.isFinite(timeoutSec) && timeoutSec > 0
          ? { loginTimeoutMs: timeoutSec * 1000 }
          : {}),
      },
      {
        logger: deps.logger,
        ...definedOnly({
          fetch: deps.fetch,
          now: deps.now,
          openUrl: deps.openUrl,
          onLoginUrl: deps.onLoginUrl,
        }),
        secrets: deps.secrets,
      },
    );
    return Object.assign(createRemoteOAuthMiddleware(client, deps.logger), {
      start: () => client.start(),
      close: () => client.close(),
    });
  },
};
