/**
 * Outgoing auth per backend (ToolHive's vMCP `outgoingAuth`). A backend's strategy is
 * `outgoingAuth.backends[name]`, else (source `discovered`) the backend workload's own
 * outgoing auth from its run configuration, else `outgoingAuth.default`, else none. Each
 * strategy becomes the same auth middlewares a workload's pipeline uses (`src/dataplane/middleware/auth/`, through
 * the pipeline's stage factories for discovered configurations), run against the caller's
 * identity for every request to that backend; the headers they set go to the backend.
 *
 * A backend whose strategy cannot be built is left out (the caller records why); it never
 * falls back to the default identity (nor does ToolHive's).
 */
import type { ProxyIdentity, ProxyMiddleware, ProxyRequestContext } from '../proxy/index.js';
import type { EmbeddedAuthServerHandle, StageDeps } from '../pipeline/index.js';
import type { SecretLookup } from '../../secrets/index.js';
import { type Logger, SkepError } from '../../shared/index.js';
import type { RunConfig } from '../../workloads/index.js';
import { BackendHttpError } from './backend-client.js';
import type { BackendAuthStrategy, ResolvedVmcpConfig } from './config.js';

export interface BackendAuth {
  /**
   * Headers for one request to the backend on behalf of `identity`, a fresh object each call
   * (a promise when the strategy has work to do); throws BackendHttpError(401) when refused.
   */
  headers(identity: ProxyIdentity): Record<string, string> | Promise<Record<string, string>>;
  /** The strategy's type, for the status. */
  readonly type: string;
  close(): Promise<void>;
}

export interface AuthDeps {
  logger: Logger;
  secretLookup: SecretLookup;
  /** Where `*Env` values are read (the runner's environment plus the workload's env and secrets). */
  env: Record<string, string | undefined>;
  authServer: EmbeddedAuthServerHandle | undefined;
  /** Upstream provider names of the embedded authorization server, in config order. */
  upstreamNames: readonly string[];
}

const NONE: BackendAuth = {
  type: 'unauthenticated',
  headers: () => ({}),
  close: async () => undefined,
};

/** Builds a backend's outgoing auth; throws (with a message for the status) when it cannot. */
export async function buildBackendAuth(
  backend: string,
  backendRunConfig: unknown,
  config: ResolvedVmcpConfig,
  deps: AuthDeps,
): Promise<BackendAuth> {
  const explicit = config.outgoingAuth.backends[backend];
  if (explicit !== undefined && explicit.type !== 'discovered') return fromStrategy(backend, explicit, deps);
  if (
    backendRunConfig !== undefined &&
    (explicit?.type === 'discovered' || config.outgoingAuth.source === 'discovered')
  ) {
    const discovered = await fromRunConfig(backend, backendRunConfig as RunConfig, deps);
    if (discovered !== undefined) return discovered;
  }
  const fallback = config.outgoingAuth.default;
  if (fallback !== undefined && fallback.type !== 'discovered') return fromStrategy(backend, fallback, deps);
  return NONE;
}

function chain(type: string, middlewares: ProxyMiddleware[]): BackendAuth {
  if (middlewares.length === 0) return NONE;
  return {
    type,
    async headers(identity) {
      // The auth middlewares read `identity` and write `outboundHeaders`, nothing else.
      const ctx = {
        identity,
        outboundHeaders: {} as Record<string, string>,
      } as unknown as ProxyRequestContext;
      for (const m of middlewares) {
        const refused = await m.handle(ctx);
        if (refused !== undefined) throw new BackendHttpError(refused.status);
      }
      return ctx.outboundHeaders;
    },
    async close() {
      await Promise.allSettled(middlewares.map((m) => m.close?.()));
    },
  };
}

function envValue(name: string, field: string, deps: AuthDeps): string {
  const value = deps.env[name];
  if (value === undefined || value === '')
    throw new SkepError('invalid_config', `${field}: environment variable ${name} is not set`);
  return value;
}

async function fromStrategy(backend: string, s: BackendAuthStrategy, deps: AuthDeps): Promise<BackendAuth> {
  const field = `vmcp.outgoingAuth for ${backend}`;
  switch (s.type) {
    case 'unauthenticated':
      return NONE;
    case 'header_injection': {
      const h = s.headerInjection!;
      const value =
        h.headerValue ?? envValue(h.headerValueEnv!, `${field}.headerInjection.headerValueEnv`, deps);
      const { createStaticHeadersMiddleware } = await import('../middleware/auth/static-headers.js');
      return chain(s.type, [
        createStaticHeadersMiddleware(
          'header-injection',
          { [h.headerName]: value },
          `${field}.headerInjection`,
        ),
      ]);
    }
    case 'upstream_inject':
      return chain(s.type, [
        await upstreamInject(s.upstreamInject!.providerName, `${field}.upstreamInject.providerName`, deps),
      ]);
    case 'token_exchange': {
      const te = s.tokenExchange!;
      const middlewares: ProxyMiddleware[] = [];
      // As in ToolHive's vMCP, the subject is the named upstream's token (default: the first
      // upstream) when the embedded authorization server runs, else the caller's own token.
      const provider = te.subjectProviderName ?? deps.upstreamNames[0];
      if (deps.authServer !== undefined && provider !== undefined) {
        middlewares.push(await upstreamInject(provider, `${field}.tokenExchange.subjectProviderName`, deps));
      } else if (te.subjectProviderName !== undefined) {
        throw new SkepError(
          'invalid_config',
          `${field}.tokenExchange.subjectProviderName needs the embedded authorization server`,
        );
      }
      const secret =
        te.clientSecret ??
        (te.clientSecretEnv === undefined
          ? undefined
          : envValue(te.clientSecretEnv, `${field}.tokenExchange.clientSecretEnv`, deps));
      const { createTokenExchangeMiddleware } = await import('../middleware/auth/token-exchange.js');
      const options: Parameters<typeof createTokenExchangeMiddleware>[0] = { tokenUrl: te.tokenUrl };
      if (te.clientId !== undefined) options.clientId = te.clientId;
      if (secret !== undefined) options.clientSecret = secret;
      if (te.audience !== undefined) options.audience = te.audience;
      if (te.scopes !== undefined) options.scopes = te.scopes;
      if (te.subjectTokenType !== undefined) options.subjectTokenType = te.subjectTokenType;
      middlewares.push(createTokenExchangeMiddleware(options, { logger: deps.logger }));
      return chain(s.type, middlewares);
    }
    default:
      throw new SkepError('unsupported_field', `${field}: strategy "${s.type}" is not supported`);
  }
}

async function upstreamInject(provider: string, field: string, deps: AuthDeps): Promise<ProxyMiddleware> {
  if (deps.authServer === undefined)
    throw new SkepError(
      'invalid_config',
      `${field} needs the embedded authorization server (embedded_auth_server_config)`,
    );
  if (!deps.upstreamNames.includes(provider)) {
    throw new SkepError(
      'invalid_config',
      `${field}: "${provider}" is not an upstream provider of the embedded authorization server (${deps.upstreamNames.join(', ') || 'none'})`,
    );
  }
  const { createUpstreamInjectMiddleware } = await import('../middleware/auth/upstream-inject.js');
  return createUpstreamInjectMiddleware(
    { providerName: provider },
    { source: deps.authServer, logger: deps.logger },
  );
}

/** Discovered: the backend workload's own outgoing auth, built by the pipeline's stage factories. */
async function fromRunConfig(
  backend: string,
  rc: RunConfig,
  deps: AuthDeps,
): Promise<BackendAuth | undefined> {
  if (rc.aws_sts_config !== undefined) {
    throw new SkepError(
      'unsupported_field',
      `${backend}: its aws_sts_config cannot be used for the virtual endpoint's calls (requests are not SigV4-signed here)`,
    );
  }
  const { STAGES } = await import('../pipeline/index.js');
  const stageDeps: StageDeps = { config: rc, logger: deps.logger, secretLookup: deps.secretLookup };
  if (deps.authServer !== undefined) stageDeps.authServer = deps.authServer;
  const middlewares: ProxyMiddleware[] = [];
  const types: string[] = [];
  for (const factory of STAGES) {
    if (!['upstreamswap', 'tokenexchange', 'header-forward'].includes(factory.type)) continue;
    const params = factory.fromRunConfig?.(rc);
    if (params === undefined) continue;
    const stage = await factory.create(params, stageDeps);
    if (stage !== undefined) {
      middlewares.push(stage);
      types.push(factory.type);
    }
  }
  return middlewares.length === 0 ? undefined : chain(`discovered:${types.join('+')}`, middlewares);
}
