/**
 * Builds a workload's auth middleware chain from its run configuration. Order, outermost
 * first (each stage sees what the previous ones established):
 *
 *  1. `auth`          inbound: `oidc_config` (JWT/JWKS or introspection) or the embedded
 *                     authorization server's tokens → `ctx.identity`, else 401 + challenge;
 *  2. `upstreamswap`  `upstream_swap_config`: the embedded AS's upstream token → Authorization;
 *  3. `tokenexchange` `token_exchange_config`: RFC 8693 exchange of the token so far;
 *  4. `awssts`        `aws_sts_config`: role → STS credentials; SigV4 at the signing stage;
 *  5. `remote-auth` / `bearer-token`  `remote_auth_config`: the remote server's own token;
 *  6. `header-forward`    `header_forward.add_plaintext_headers`;
 *  7. `header-injection`  `header_forward.add_headers_from_secret` (values from secrets).
 *
 * `unauthenticated` is the empty chain. Every secret is resolved here, once, when the
 * workload starts; configuration mistakes are `bad_request` errors naming the field, thrown
 * before anything is served. Combinations that would fight over `Authorization` are refused.
 * A stage's module, and the libraries behind it (jose, the AWS SDK, cel-js, oauth4webapi),
 * loads only when the configuration uses it, so a plain workload's runner stays small.
 */
import { readFile } from 'node:fs/promises';
import type { ProxyMiddleware } from '../proxy/index.js';
import type { SecretLookup } from '../secrets/index.js';
import { definedOnly, type Logger, SkepError } from '../shared/index.js';
import type { RunConfig } from '../workloads/index.js';
import type { AssumeRole } from './aws-sts.js';
import type { FetchLike } from './http.js';
import type { TokenVerifier } from './inbound.js';
import type { RemoteOAuthClient, SecretStore } from './remote-oauth.js';
import { createStaticHeadersMiddleware } from './static-headers.js';
import { createUpstreamInjectMiddleware, type UpstreamTokenSource } from './upstream-inject.js';

export interface EmbeddedAuthServerHandle extends UpstreamTokenSource {
  readonly issuer: string;
  verifyAccessToken(token: string, expectedAudience: string): Promise<Record<string, unknown>>;
}

export interface AuthChainDeps {
  logger: Logger;
  secretLookup: SecretLookup;
  /** Persists the remote OAuth client's registration and refresh token (SecretsService fits). */
  secrets?: SecretStore;
  /** The embedded authorization server, when the workload runs one. */
  authServer?: EmbeddedAuthServerHandle;
  /** The workload's public MCP URL: the RFC 9728 resource unless `oidc_config.resourceURL` says otherwise. */
  resourceUrl?: string;
  fetch?: FetchLike;
  now?: () => number;
  /** STS endpoint override (a local stand-in in tests); default the regional AWS endpoint. */
  stsEndpoint?: string;
  /** Replaces the SDK STS call entirely (benchmarks). */
  assumeRole?: AssumeRole;
  /** Shows the remote login URL (tests drive the login over HTTP with it). */
  openUrl?: (url: string) => Promise<void> | void;
  /** Told the remote login URL whenever a login starts (the runner publishes it in the status). */
  onLoginUrl?: (url: string) => void;
}

export interface AuthChain {
  readonly middlewares: ProxyMiddleware[];
  /** Middleware names in order, for logs and status. */
  readonly names: string[];
  /** Interactive parts (the remote OAuth login); call once the remote server is reachable. Idempotent. */
  start(): Promise<void>;
  close(): Promise<void>;
}

const REFERENCE = /^([^,]+),target=(.+)$/;

/** A `"<name>,target=<x>"` reference is looked up in the secrets provider; anything else is the value. */
async function secretOrLiteral(value: string, lookup: SecretLookup, field: string): Promise<string> {
  const ref = REFERENCE.exec(value);
  if (ref === null) return value;
  return requireSecret(ref[1] as string, lookup, field);
}

async function requireSecret(name: string, lookup: SecretLookup, field: string): Promise<string> {
  const v = await lookup(name);
  if (v === undefined || v === '')
    throw new SkepError('secret_not_found', `${field}: secret "${name}" not found in the secrets provider`);
  return v;
}

async function readTokenFile(path: string, field: string): Promise<string> {
  try {
    const text = (await readFile(path, 'utf8')).trim();
    if (text === '') throw new Error('empty');
    return text;
  } catch (err) {
    throw new SkepError('bad_request', `${field}: cannot read a token from ${path}`, { cause: err });
  }
}

export async function buildAuthChain(config: RunConfig, deps: AuthChainDeps): Promise<AuthChain> {
  const { logger, secretLookup } = deps;
  const middlewares: ProxyMiddleware[] = [];
  const closers: Array<() => void | Promise<void>> = [];
  let remoteClient: RemoteOAuthClient | undefined;
  const common = {
    logger,
    ...(deps.fetch ? { fetch: deps.fetch } : {}),
    ...(deps.now ? { now: deps.now } : {}),
  };

  // 1. inbound
  const oidc = config.oidc_config;
  const resourceUrl = oidc?.resourceURL ?? deps.resourceUrl;
  let verify: TokenVerifier | undefined;
  let authorizationServers: string[] = [];
  if (config.embedded_auth_server_config !== undefined) {
    // The runner creates the server from the same block and mounts it on the proxy; without
    // it the workload would silently run unprotected.
    const as = deps.authServer;
    if (as === undefined)
      throw new Error(
        'embedded_auth_server_config is set but no authorization server was passed (deps.authServer)',
      );
    if (resourceUrl === undefined)
      throw new SkepError('bad_request', 'the embedded authorization server needs a resource URL');
    verify = (token) => as.verifyAccessToken(token, resourceUrl);
    authorizationServers = [as.issuer];
  } else if (oidc !== undefined && (oidc.issuer || oidc.jwksurl || oidc.introspectionURL)) {
    const clientSecret =
      oidc.clientSecret === undefined
        ? undefined
        : await secretOrLiteral(oidc.clientSecret, secretLookup, 'oidc_config.clientSecret');
    const { createOidcVerifier } = await import('./inbound.js');
    verify = createOidcVerifier(
      {
        ...(oidc.issuer ? { issuer: oidc.issuer } : {}),
        ...(oidc.audience ? { audience: oidc.audience } : {}),
        ...(oidc.jwksurl ? { jwksUrl: oidc.jwksurl } : {}),
        ...(oidc.introspectionURL ? { introspectionUrl: oidc.introspectionURL } : {}),
        ...(oidc.clientID ? { clientId: oidc.clientID } : {}),
        ...definedOnly({ clientSecret }),
        allowHttp: oidc.insecureAllowHTTP === true,
        allowPrivateIP: oidc.allowPrivateIP === true,
      },
      common,
    );
    authorizationServers = oidc.issuer ? [oidc.issuer] : [];
  }
  if (verify !== undefined) {
    const { createInboundAuthMiddleware } = await import('./inbound.js');
    middlewares.push(
      createInboundAuthMiddleware({
        verify,
        authorizationServers,
        logger,
        ...definedOnly({ resourceUrl }),
        ...(oidc?.scopes ? { scopes: oidc.scopes } : {}),
      }),
    );
  }

  // 2. upstream swap
  const swap = config.upstream_swap_config;
  if (swap !== undefined) {
    const custom = swap.header_strategy === 'custom';
    if (custom && !swap.custom_header_name)
      throw new SkepError(
        'bad_request',
        "upstream_swap_config.custom_header_name must be set when header_strategy is 'custom'",
      );
    middlewares.push(
      createUpstreamInjectMiddleware(
        {
          providerName: swap.provider_name ?? '',
          ...(custom ? { headerName: swap.custom_header_name } : {}),
        },
        { source: deps.authServer, logger },
      ),
    );
  }

  // 3. token exchange
  const te = config.token_exchange_config;
  let exchangeReplaces = false;
  if (te !== undefined) {
    if (!te.token_url) throw new SkepError('bad_request', 'token_exchange_config.token_url is required');
    const strategy = te.header_strategy ?? (te.external_token_header_name ? 'custom' : 'replace');
    if (strategy !== 'replace' && strategy !== 'custom')
      throw new SkepError(
        'bad_request',
        `token_exchange_config.header_strategy: "${strategy}" (use 'replace' or 'custom')`,
      );
    if (strategy === 'custom' && !te.external_token_header_name)
      throw new SkepError(
        'bad_request',
        "token_exchange_config.external_token_header_name must be set when header_strategy is 'custom'",
      );
    exchangeReplaces = strategy === 'replace';
    const secret =
      te.client_secret === undefined
        ? undefined
        : await secretOrLiteral(te.client_secret, secretLookup, 'token_exchange_config.client_secret');
    const { createTokenExchangeMiddleware } = await import('./token-exchange.js');
    middlewares.push(
      createTokenExchangeMiddleware(
        {
          tokenUrl: te.token_url,
          ...(te.client_id ? { clientId: te.client_id } : {}),
          ...definedOnly({ clientSecret: secret }),
          ...(te.audience ? { audience: te.audience } : {}),
          ...(te.scopes ? { scopes: te.scopes } : {}),
          ...(te.subject_token_type ? { subjectTokenType: te.subject_token_type } : {}),
          ...(strategy === 'custom' ? { headerName: te.external_token_header_name } : {}),
        },
        common,
      ),
    );
  }

  // 4. AWS STS + SigV4
  const sts = config.aws_sts_config;
  if (sts !== undefined) {
    if (config.remote_url === undefined)
      throw new SkepError('bad_request', 'aws_sts_config signs requests to a remote server: set remote_url');
    const { createAwsStsMiddleware, sdkAssumeRole } = await import('./aws-sts.js');
    let assumeRole = deps.assumeRole;
    if (assumeRole === undefined) {
      const client = sdkAssumeRole(sts.region ?? '', deps.stsEndpoint);
      closers.push(() => client.close());
      assumeRole = client.assumeRole;
    }
    middlewares.push(
      createAwsStsMiddleware(
        {
          region: sts.region ?? '',
          ...(sts.service ? { service: sts.service } : {}),
          ...(sts.fallback_role_arn ? { fallbackRoleArn: sts.fallback_role_arn } : {}),
          ...(sts.role_claim ? { roleClaim: sts.role_claim } : {}),
          ...definedOnly({ sessionDuration: sts.session_duration }),
          ...(sts.session_name_claim ? { sessionNameClaim: sts.session_name_claim } : {}),
          ...(sts.role_mappings
            ? {
                roleMappings: sts.role_mappings.map((m) => ({
                  roleArn: m.role_arn ?? '',
                  ...definedOnly({ claim: m.claim, matcher: m.matcher, priority: m.priority }),
                })),
              }
            : {}),
        },
        { logger, assumeRole, ...(deps.now ? { now: deps.now } : {}) },
      ),
    );
  }

  // 5. the remote server's own credentials
  const remote = config.remote_auth_config;
  if (remote !== undefined) {
    let bearer: string | undefined;
    if (remote.bearer_token)
      bearer = await secretOrLiteral(remote.bearer_token, secretLookup, 'remote_auth_config.bearer_token');
    else if (remote.bearer_token_file)
      bearer = await readTokenFile(remote.bearer_token_file, 'remote_auth_config.bearer_token_file');
    const wantsOAuth =
      bearer === undefined &&
      (remote.client_id !== undefined ||
        remote.issuer !== undefined ||
        remote.authorize_url !== undefined ||
        remote.token_url !== undefined ||
        remote.scopes !== undefined ||
        remote.use_pkce === true);
    if (
      (bearer !== undefined || wantsOAuth) &&
      (exchangeReplaces || swap !== undefined || sts !== undefined)
    ) {
      throw new SkepError(
        'bad_request',
        'remote_auth_config cannot be combined with token exchange, upstream token injection or AWS STS: each sets the Authorization header',
      );
    }
    if (bearer !== undefined) {
      middlewares.push(
        createStaticHeadersMiddleware(
          'bearer-token',
          { Authorization: `Bearer ${bearer}` },
          'remote_auth_config',
        ),
      );
    } else if (wantsOAuth) {
      if (config.remote_url === undefined)
        throw new SkepError('bad_request', 'remote_auth_config OAuth needs remote_url');
      let clientSecret: string | undefined;
      if (remote.client_secret)
        clientSecret = await secretOrLiteral(
          remote.client_secret,
          secretLookup,
          'remote_auth_config.client_secret',
        );
      else if (remote.client_secret_file)
        clientSecret = await readTokenFile(
          remote.client_secret_file,
          'remote_auth_config.client_secret_file',
        );
      const { createRemoteOAuthMiddleware, RemoteOAuthClient } = await import('./remote-oauth.js');
      const timeoutSec = remote.timeout === undefined ? undefined : Number.parseInt(remote.timeout, 10);
      remoteClient = new RemoteOAuthClient(
        {
          workload: config.name,
          remoteUrl: config.remote_url,
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
          ...common,
          secrets: deps.secrets,
          ...(deps.openUrl ? { openUrl: deps.openUrl } : {}),
          ...(deps.onLoginUrl ? { onLoginUrl: deps.onLoginUrl } : {}),
        },
      );
      const client = remoteClient;
      closers.push(() => client.close());
      middlewares.push(createRemoteOAuthMiddleware(client, logger));
    }
  }

  // 6–7. fixed headers
  const hf = config.header_forward;
  if (hf?.add_plaintext_headers && Object.keys(hf.add_plaintext_headers).length > 0)
    middlewares.push(
      createStaticHeadersMiddleware(
        'header-forward',
        hf.add_plaintext_headers,
        'header_forward.add_plaintext_headers',
      ),
    );
  if (hf?.add_headers_from_secret && Object.keys(hf.add_headers_from_secret).length > 0) {
    const values: Record<string, string> = {};
    for (const [header, ref] of Object.entries(hf.add_headers_from_secret)) {
      const field = `header_forward.add_headers_from_secret.${header}`;
      const m = REFERENCE.exec(ref);
      values[header] = await requireSecret(m === null ? ref : (m[1] as string), secretLookup, field);
    }
    middlewares.push(
      createStaticHeadersMiddleware('header-injection', values, 'header_forward.add_headers_from_secret'),
    );
  }

  let started: Promise<void> | undefined;
  let closed = false;
  return {
    middlewares,
    names: middlewares.map((m) => m.name),
    start() {
      started ??= (remoteClient?.start() ?? Promise.resolve()).catch((err: unknown) => {
        started = undefined;
        throw err;
      });
      return started;
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const c of closers) await c();
    },
  };
}
