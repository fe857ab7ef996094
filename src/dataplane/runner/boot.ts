/**
 * What a runner starts before it supervises its server, as an ordered list of named steps
 * (`BOOT_STEPS`, run by `Steps`): claim the workload's record, refuse a run configuration this
 * runner must not serve, watch the record, resolve secrets, start the embedded authorization
 * server, build the middleware pipeline, open the session store, start a virtual MCP server,
 * serve the proxy, and report the tools. Each step reads what earlier ones left in the
 * `BootContext`. A step that cannot start records `error` with the reason in the store, logs
 * it, and throws `BootRefused`: the runner then exits with its code.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { SecretStore } from '../middleware/auth/index.js';
import type { AuthServer, EmbeddedAuthServerConfig } from '../../authserver/index.js';
import type { SkepConfig } from '../../config/index.js';
import { buildPipeline, type Pipeline } from '../pipeline/index.js';
import {
  openSessionStore,
  type PerSessionOptions,
  type ProxyOptions,
  type RunningProxy,
  type SessionStore,
  startProxy,
} from '../proxy/index.js';
import type { Runtime, ServerSpec } from '../runtime/index.js';
import {
  definedOnly,
  describeError,
  errorCodeOf,
  type Logger,
  SkepError,
  sleepUnlessAborted,
} from '../../shared/index.js';
import type { Store } from '../../store/index.js';
import {
  AUTHORIZATION_PENDING,
  endpointAccessOf,
  hostExposureProblem,
  proxyUrlOf,
  type RunConfig,
  resolveSecretReferences,
  type SecretLookup,
  type StatusUpdate,
  serverLogPath,
  sessionStorageOf,
  unsupportedFields,
  type WorkloadRow,
  WorkloadStore,
} from '../../workloads/index.js';
import type { VirtualMcpServer } from '../vmcp/index.js';
import { watchRecord } from './record-watch.js';
import type { Close, Step } from './steps.js';
import { ToolReport } from './tool-report.js';

export interface RestartPolicy {
  /** First delay after a crash, ms; doubles per consecutive crash. */
  initialDelayMs: number;
  maxDelayMs: number;
  /** A run at least this long counts as healthy and resets the backoff, ms. */
  healthyAfterMs: number;
  /** Consecutive failed starts or crashes before giving up. */
  maxRestarts: number;
}

export const DEFAULT_RESTART_POLICY: Readonly<RestartPolicy> = Object.freeze({
  initialDelayMs: 1000,
  maxDelayMs: 30_000,
  healthyAfterMs: 30_000,
  maxRestarts: 10,
});

export interface RunnerOptions {
  name: string;
  store: Store;
  config: SkepConfig;
  secretLookup: SecretLookup;
  /** Where the remote OAuth client keeps its registration and refresh token (the secrets service). */
  secrets?: SecretStore;
  logger: Logger;
  runtime?: Runtime;
  policy?: Partial<RestartPolicy>;
  /** The runner's identity in the store; the default is this process's pid. */
  pid?: number;
  /** Aborting stops the workload (SIGTERM handler). */
  signal: AbortSignal;
  /**
   * Why a non-loopback bind without inbound auth is accepted (the Kubernetes pod runner:
   * the pod network decides who reaches it); logged as a warning. Unset: refused.
   */
  exposureAccepted?: string;
}

/** How often a runner checks that its workload record still names it. */
const RECORD_CHECK_INTERVAL_MS = 2000;

/** `session_mode: per-session`: most concurrent server processes, and their idle timeout. */
export const PER_SESSION_MAX_CHILDREN = 16;
export const PER_SESSION_IDLE_MS = 30 * 60_000;
/** `vmcp`: most live client sessions of a virtual MCP server (the reference's per-pod LRU size). */
export const VMCP_MAX_SESSIONS = 1000;

/**
 * A boot step refused to go on: it recorded why in the status; the runner exits with `exitCode`.
 * Its code says why: the failed part's own code (`internal_error` when it has none), or
 * `conflict`, `invalid_config`, `unsupported_field` for a record this runner must not serve.
 */
export class BootRefused extends SkepError {
  override readonly name = 'BootRefused';
  readonly exitCode = 1;
}

/** Thrown by a getter read before the step that sets it: a mistake in the order of `BOOT_STEPS`. */
function notYet(what: string): never {
  throw new Error(`the runner read the ${what} before the step that sets it`);
}

/**
 * What the boot steps share, and what supervision needs once the proxy listens. The values a
 * step sets are read through getters that throw when read too early.
 */
export class BootContext {
  readonly options: RunnerOptions;
  /** Aborted on a stop request or when the record is lost. */
  readonly signal: AbortSignal;
  readonly pid: number;
  readonly policy: RestartPolicy;
  readonly rows: WorkloadStore;
  readonly logFile: string;
  /** Per-session spawns wait for the runtime, which is chosen after the proxy listens. */
  readonly runtimeForSessions: Promise<Runtime | undefined>;
  /** Hands the runtime (or `undefined`: none) to per-session spawns waiting for it. */
  readonly runtimeChosen: (runtime: Runtime | undefined) => void;
  /** The runner's own credential at its proxy (its tool report), made here and never stored. */
  readonly selfToken = randomBytes(32).toString('hex');
  readonly #stopper = new AbortController();
  #row: WorkloadRow | undefined;
  #env: Record<string, string> | undefined;
  #chain: Pipeline | undefined;
  #proxy: RunningProxy | undefined;
  authServer: AuthServer | undefined;
  /** Where a streamable-HTTP server's sessions are kept (memory or `session_redis`). */
  sessions: SessionStore | undefined;
  /** A virtual MCP server (`vmcp`): serves the group's workloads instead of a server of its own. */
  virtual: VirtualMcpServer | undefined;
  /** Lists the tools clients see, for the store; told each time the server is attached. */
  tools: ToolReport | undefined;

  constructor(options: RunnerOptions) {
    this.options = options;
    // Stop on request, and also when this runner is no longer the workload's registered runner
    // or its state is gone (the workload was removed behind our back, or SKEP_HOME deleted):
    // a runner never outlives the record that justifies it.
    this.signal = this.#stopper.signal;
    options.signal.addEventListener('abort', () => this.#stopper.abort(), { once: true });
    if (options.signal.aborted) this.#stopper.abort();
    this.pid = options.pid ?? process.pid;
    this.policy = { ...DEFAULT_RESTART_POLICY, ...options.policy };
    this.rows = new WorkloadStore(options.store);
    this.logFile = serverLogPath(options.config.paths.logsDir, options.name);
    let chosen: (runtime: Runtime | undefined) => void = () => {};
    this.runtimeForSessions = new Promise((resolve) => {
      chosen = resolve;
    });
    this.runtimeChosen = chosen;
  }

  get row(): WorkloadRow {
    return this.#row ?? notYet('workload record');
  }
  set row(row: WorkloadRow) {
    this.#row = row;
  }
  get runConfig(): RunConfig {
    return this.row.config;
  }
  get env(): Record<string, string> {
    return this.#env ?? notYet('server environment');
  }
  set env(env: Record<string, string>) {
    this.#env = env;
  }
  get chain(): Pipeline {
    return this.#chain ?? notYet('middleware pipeline');
  }
  set chain(chain: Pipeline) {
    this.#chain = chain;
  }
  get proxy(): RunningProxy {
    return this.#proxy ?? notYet('proxy');
  }
  set proxy(proxy: RunningProxy) {
    this.#proxy = proxy;
  }
  /** One server per client session: `session_mode: per-session`, and every virtual MCP server. */
  get perSession(): boolean {
    return this.runConfig.session_mode === 'per-session' || this.runConfig.vmcp !== undefined;
  }

  /** Records a status as this runner (ignored once the record names another runner). */
  readonly setStatus = (update: StatusUpdate): boolean =>
    this.rows.setStatusFromRunner(this.options.name, this.pid, update);

  /** Stops the workload (the record is lost). */
  stop(): void {
    this.#stopper.abort();
  }

  /** Records `error` with `<what>: <the error>` (what the user sees), logs `message` with the error, and refuses. */
  fail(what: string, message: string, err: unknown): never {
    this.setStatus({ status: 'error', context: `${what}: ${describeError(err)}` });
    this.options.logger.error({ workload: this.options.name, err }, message);
    throw new BootRefused(errorCodeOf(err) ?? 'internal_error', `${what}: ${describeError(err)}`, {
      cause: err,
    });
  }
}

/** The proxy's host as clients reach it: a wildcard bind is reached on loopback. */
function reachableHost(runConfig: RunConfig): string {
  const host = runConfig.host === '0.0.0.0' || runConfig.host === '' ? '127.0.0.1' : runConfig.host;
  return host.includes(':') ? `[${host}]` : host;
}

/** The proxy's public origin (`http://host:port`), unknown while the port is not fixed. */
function proxyOriginOf(runConfig: RunConfig): string | undefined {
  return runConfig.port > 0 ? `http://${reachableHost(runConfig)}:${runConfig.port}` : undefined;
}

/**
 * The manager records our pid right after spawning us; waits for it (15 s at most), so that
 * a runner that lost a race (the workload was stopped or replaced meanwhile) just leaves.
 */
async function claimRecord(ctx: BootContext): Promise<void> {
  const { rows, pid, signal, options } = ctx;
  const deadline = Date.now() + 15_000;
  let row = rows.get(options.name);
  while (row !== undefined && row.runnerPid !== pid && Date.now() < deadline && !signal.aborted) {
    await sleepUnlessAborted(50, signal);
    row = rows.get(options.name);
  }
  if (row?.runnerPid !== pid) {
    options.logger.warn(
      { workload: options.name },
      'this runner is not the registered runner of the workload; exiting',
    );
    throw new BootRefused('conflict', 'this runner is not the registered runner of the workload');
  }
  ctx.row = row;
}

/** Refuses, before anything binds, a record this runner must not serve. */
async function checkRunConfig(ctx: BootContext): Promise<void> {
  const { runConfig, options, setStatus } = ctx;
  const { name, logger } = options;
  // The manager refuses this at create/update/import; a record written before that rule (or
  // by hand) is refused here, before anything binds: beyond loopback needs inbound auth.
  const exposure = hostExposureProblem(runConfig);
  if (exposure !== undefined && options.exposureAccepted !== undefined) {
    logger.warn({ workload: name, host: runConfig.host, why: options.exposureAccepted }, exposure);
  } else if (exposure !== undefined) {
    setStatus({ status: 'error', context: exposure });
    logger.error({ workload: name, host: runConfig.host }, 'refusing an unauthenticated non-loopback bind');
    throw new BootRefused('invalid_config', exposure);
  }
  // Create, update and import refuse fields this build would ignore; a record written before
  // that rule (or by hand) is refused here rather than run with a policy silently dropped.
  const [unsupported] = unsupportedFields(runConfig, options.config);
  if (unsupported !== undefined) {
    setStatus({ status: 'error', context: unsupported.message });
    logger.error(
      { workload: name, field: unsupported.field },
      'refusing a run configuration field this build ignores',
    );
    throw new BootRefused('unsupported_field', unsupported.message);
  }
  if (
    ctx.perSession &&
    runConfig.vmcp === undefined &&
    (runConfig.transport !== 'stdio' || runConfig.remote_url !== undefined)
  ) {
    const context =
      'session_mode per-session needs a stdio server (set transport stdio, or use session_mode shared)';
    setStatus({ status: 'error', context });
    throw new BootRefused('unsupported_field', context);
  }
}

/** Stops the runner when its record is gone or names another runner. */
async function startRecordWatch(ctx: BootContext): Promise<Close> {
  const { options, rows, pid } = ctx;
  const stopWatch = watchRecord({
    workload: options.name,
    isOurs: () => existsSync(options.config.paths.databaseFile) && rows.get(options.name)?.runnerPid === pid,
    onLost: () => ctx.stop(),
    logger: options.logger,
    intervalMs: RECORD_CHECK_INTERVAL_MS,
  });
  ctx.signal.addEventListener('abort', stopWatch, { once: true });
  return async () => stopWatch();
}

/** The server's environment: `env_vars`, then the resolved `secrets`. */
async function resolveEnv(ctx: BootContext): Promise<void> {
  const { runConfig, options } = ctx;
  try {
    ctx.env = {
      ...runConfig.env_vars,
      ...(await resolveSecretReferences(runConfig.secrets, options.secretLookup)),
    };
  } catch (err) {
    ctx.fail('cannot resolve secrets', 'cannot resolve secrets', err);
  }
}

/** The embedded OAuth 2.1 authorization server, mounted on the proxy (as the reference's operator mounts it). */
async function startAuthServer(ctx: BootContext): Promise<Close | void> {
  const { runConfig, options } = ctx;
  const eas = runConfig.embedded_auth_server_config;
  if (eas === undefined) return;
  const proxyOrigin = proxyOriginOf(runConfig);
  const resourceUrl = runConfig.oidc_config?.resourceURL ?? (proxyOrigin && `${proxyOrigin}/mcp`);
  let authServer: AuthServer;
  try {
    // Loaded only by the runners that mount it (runners stay small; see src/dataplane/runner/main.ts).
    const { createAuthServer } = await import('../../authserver/index.js');
    authServer = await createAuthServer(embeddedAuthServerConfig(eas, proxyOrigin, resourceUrl), {
      logger: options.logger,
      // `*_env_var` secrets may come from the runner's environment or the workload's own
      // env_vars and secrets (so a Skep secret can hold the upstream client secret).
      env: { ...process.env, ...ctx.env },
    });
  } catch (err) {
    return ctx.fail(
      'cannot start the embedded authorization server',
      'cannot start the embedded authorization server',
      err,
    );
  }
  ctx.authServer = authServer;
  return () => authServer.close();
}

/**
 * `embedded_auth_server_config` with the run-time defaults filled in: the issuer defaults to
 * the workload's proxy origin (`http://<host>:<port>`, where the server is mounted) and
 * `allowed_audiences` to the workload's resource URL (`<origin>/mcp`, or
 * `oidc_config.resourceURL`), as the reference's operator sets them. Set
 * `issuer` explicitly when clients reach the proxy under another name (a wildcard bind, a
 * reverse proxy). Everything else is validated by `createAuthServer`.
 */
function embeddedAuthServerConfig(
  eas: NonNullable<RunConfig['embedded_auth_server_config']>,
  proxyOrigin: string | undefined,
  resourceUrl: string | undefined,
): EmbeddedAuthServerConfig {
  const issuer = eas.issuer || proxyOrigin;
  if (issuer === undefined)
    throw new SkepError(
      'invalid_config',
      'embedded_auth_server_config.issuer: set it, or give the workload a fixed proxy port (the default issuer is the proxy URL)',
    );
  const audiences = eas.allowed_audiences?.length ? eas.allowed_audiences : resourceUrl ? [resourceUrl] : [];
  return { ...eas, issuer, allowed_audiences: audiences };
}

/** The middleware pipeline (src/dataplane/pipeline/stages/index.ts has the order); bad config stops here. */
async function startPipeline(ctx: BootContext): Promise<Close> {
  const { runConfig, options, rows, setStatus } = ctx;
  const { name, logger } = options;
  const proxyOrigin = proxyOriginOf(runConfig);
  let chain: Pipeline;
  try {
    chain = await buildPipeline(runConfig, {
      logger,
      secretLookup: options.secretLookup,
      ...definedOnly({ secrets: options.secrets, authServer: ctx.authServer }),
      ...(proxyOrigin === undefined ? {} : { resourceUrl: `${proxyOrigin}/mcp` }),
      // A remote login needs the user: publish its URL in the status, where `skep run`,
      // `skep list` and the API show it (the runner log has it too).
      onLoginUrl: (url) => {
        const running = rows.get(name)?.status === 'running';
        setStatus({ status: running ? 'running' : 'starting', context: `${AUTHORIZATION_PENDING}${url}` });
      },
    });
  } catch (err) {
    return ctx.fail('invalid middleware configuration', 'cannot build the middleware pipeline', err);
  }
  ctx.chain = chain;
  if (chain.names.length > 0)
    logger.info({ workload: name, middlewares: chain.names }, 'middleware pipeline');
  // A stop must not wait for an interactive login (the remote OAuth client waits minutes for
  // the user): closing the chain aborts it. Closing twice is harmless.
  ctx.signal.addEventListener('abort', () => void chain.close(), { once: true });
  return () => chain.close();
}

/** A streamable-HTTP server's sessions: in memory, or in Redis shared with the workload's other proxies. */
async function openSessions(ctx: BootContext): Promise<Close | void> {
  let sessions: SessionStore | undefined;
  try {
    const storage = sessionStorageOf(ctx.runConfig);
    sessions = storage === undefined ? undefined : await openSessionStore(storage);
  } catch (err) {
    return ctx.fail('session storage', 'cannot open the session store', err);
  }
  ctx.sessions = sessions;
  if (sessions !== undefined) return () => sessions.close();
}

/** `vmcp`: the virtual MCP server, serving the group's workloads instead of a server of its own. */
async function startVirtualStep(ctx: BootContext): Promise<Close | void> {
  if (ctx.runConfig.vmcp === undefined) return;
  let virtual: VirtualMcpServer;
  try {
    virtual = await startVirtual(ctx);
  } catch (err) {
    return ctx.fail('invalid vmcp configuration', 'cannot start the virtual MCP server', err);
  }
  ctx.virtual = virtual;
  return () => virtual.close();
}

/**
 * `vmcp`: the virtual MCP server over the other running workloads of the group (`groupRef`,
 * default the workload's own), loaded only by the runners that serve one.
 */
async function startVirtual(ctx: BootContext): Promise<VirtualMcpServer> {
  const { options, runConfig, env, authServer, setStatus } = ctx;
  const { parseVmcpConfig, VirtualMcpServer: Server } = await import('../vmcp/index.js');
  const vmcp = parseVmcpConfig(runConfig.vmcp);
  // The config's static `backends[]` (a Kubernetes pod: the operator resolved the group), or
  // the other running workloads of the group, read from the store.
  const listed = vmcp.staticBackends?.map((b) => ({
    name: b.name,
    url: b.url,
    runConfig: undefined,
    probe: b.type === 'entry' ? ('reachable' as const) : ('health' as const),
  }));
  const staticList = listed === undefined ? undefined : () => listed;
  const server = new Server({
    name: runConfig.name,
    config: vmcp,
    logger: options.logger,
    discover: staticList ?? groupBackends(ctx.rows, runConfig, vmcp.groupRef ?? runConfig.group),
    auth: {
      logger: options.logger,
      secretLookup: options.secretLookup,
      env: Object.assign({}, process.env, env),
      authServer,
      upstreamNames: (runConfig.embedded_auth_server_config?.upstreams ?? []).map((u) => u.name),
    },
    onStatus: (summary) => {
      if (ctx.rows.get(runConfig.name)?.status === 'running')
        setStatus({ status: 'running', context: summary });
    },
  });
  await server.start();
  return server;
}

/** The other running (non-virtual) workloads of `group`, read from the store on each call. */
function groupBackends(rows: WorkloadStore, runConfig: RunConfig, group: string | undefined) {
  return () =>
    rows
      .list(group)
      .filter((r) => r.name !== runConfig.name && r.config.vmcp === undefined && r.status === 'running')
      .map((r) => ({
        name: r.name,
        url: proxyUrlOf(r, 'streamable-http'),
        runConfig: r.config,
      }));
}

/** Serves the proxy on the workload's host and port, in front of the pipeline's stages. */
async function startProxyStep(ctx: BootContext): Promise<Close> {
  const { runConfig } = ctx;
  let proxy: RunningProxy;
  try {
    proxy = await startProxy(proxyOptions(ctx));
  } catch (err) {
    return ctx.fail(
      `cannot serve the proxy on ${runConfig.host}:${runConfig.port}`,
      'cannot start the proxy',
      err,
    );
  }
  ctx.proxy = proxy;
  ctx.options.logger.info({ workload: ctx.options.name, url: proxy.url }, 'proxy listening');
  return () => proxy.close();
}

function proxyOptions(ctx: BootContext): ProxyOptions {
  const { runConfig, chain, authServer, virtual, options } = ctx;
  // Only the owner's clients may call it, unless it authenticates callers itself or its
  // owner opened it; in a Kubernetes pod the Service and NetworkPolicies decide instead.
  const callerToken =
    options.exposureAccepted === undefined && endpointAccessOf(runConfig) === 'owner'
      ? ctx.row.accessToken
      : undefined;
  const identityStage = virtual?.identityMiddleware();
  const callToolStage = virtual?.callToolMiddleware();
  // Composite tools: each inner call passes the same pipeline as a direct call.
  virtual?.useInnerChain(chain.middlewares);
  return {
    ...(ctx.perSession ? { perSession: perSessionOptions(ctx) } : {}),
    host: runConfig.host,
    port: runConfig.port,
    // ToolHive's PermissionProfile network.inbound.allow_host: the Host/Origin names clients may
    // use besides loopback names; enforced here, in front of every runtime and transport.
    allowedHosts: runConfig.permission_profile?.network?.inbound?.allow_host ?? [],
    // Browser origins besides the proxy's own, exact (validated by the manager).
    allowedOrigins: [...(runConfig.allowed_origins ?? []), ...(chain.proxy.allowedOrigins ?? [])],
    // URLs handed out (the SSE endpoint event, RFC 9728 metadata) follow X-Forwarded-* only when trusted.
    trustProxyHeaders: runConfig.trust_proxy_headers === true,
    ...(callerToken === undefined ? {} : { callerToken }),
    selfToken: ctx.selfToken,
    logger: options.logger,
    serverName: options.name,
    transport: runConfig.transport,
    // vMCP: call_tool becomes the inner call before any stage; the caller's identity is passed on last.
    middlewares: [
      ...(callToolStage === undefined ? [] : [callToolStage]),
      ...chain.middlewares,
      ...(identityStage === undefined ? [] : [identityStage]),
    ],
    // The embedded authorization server's endpoints, then the stages' own (telemetry's /metrics).
    handlers: [...(authServer === undefined ? [] : [authServer.handle.bind(authServer)]), ...chain.handlers],
    ...definedOnly({
      toolsFilter: chain.proxy.toolsFilter ?? runConfig.tools_filter,
      toolsOverride: chain.proxy.toolsOverride ?? runConfig.tools_override,
      endpointPrefix: runConfig.endpoint_prefix,
    }),
    ...(chain.proxy.maxBodyBytes === undefined ? {} : { limits: { maxBodyBytes: chain.proxy.maxBodyBytes } }),
  };
}

/** Per-session mode: the proxy starts one server per client session (a virtual one is in-process). */
function perSessionOptions(ctx: BootContext): NonNullable<ProxyOptions['perSession']> {
  const { virtual } = ctx;
  return {
    spawn:
      virtual?.spawn ??
      sessionServerSpawner(ctx.runtimeForSessions, serverSpec(ctx.runConfig, ctx.env, ctx.logFile)),
    // A virtual session is in-process and cheap: as many as the reference keeps live.
    maxChildren: virtual === undefined ? PER_SESSION_MAX_CHILDREN : VMCP_MAX_SESSIONS,
    idleMs: PER_SESSION_IDLE_MS,
  };
}

/** Per-session mode: starts one session's server once the runtime is chosen (after the proxy listens). */
function sessionServerSpawner(
  runtimeForSessions: Promise<Runtime | undefined>,
  spec: ServerSpec,
): PerSessionOptions['spawn'] {
  return async () => {
    const runtime = await runtimeForSessions;
    if (runtime === undefined) throw new Error('no runtime can run this workload');
    const handle = await runtime.start(spec);
    if (handle.stdio === undefined) {
      await handle.stop();
      throw new Error('the runtime did not attach to the server’s stdio');
    }
    return {
      stdin: handle.stdio.stdin,
      stdout: handle.stdio.stdout,
      stop: () => handle.stop(),
      exited: handle.exited,
    };
  };
}

/** What the runtime needs to start the workload's server. */
export function serverSpec(runConfig: RunConfig, env: Record<string, string>, logFile: string): ServerSpec {
  return {
    name: runConfig.name,
    image: runConfig.image,
    args: runConfig.cmd_args,
    env,
    transport: runConfig.transport,
    logFile,
    permissionProfile: runConfig.permission_profile,
    isolateNetwork: runConfig.isolate_network !== false,
    ...definedOnly({
      targetPort: runConfig.target_port,
      permissionProfileName: runConfig.permission_profile_name_or_path,
      sandbox: runConfig.sandbox,
      imageVerification: runConfig.image_verification,
    }),
    volumes: runConfig.volumes,
    labels: runConfig.container_labels,
  };
}

/** Before the proxy closes, spawns still waiting for a runtime learn there is none. */
async function releaseSessionWaits(ctx: BootContext): Promise<Close> {
  return async () => ctx.runtimeChosen(undefined);
}

/**
 * The runner lists the tools as a client of its own proxy, holding its own token. A workload
 * that authenticates its callers itself admits no such client: it reports nothing.
 */
async function startToolReport(ctx: BootContext): Promise<Close | void> {
  const { runConfig, options, rows, pid } = ctx;
  if (endpointAccessOf(runConfig) === 'inbound-auth') return;
  const report = new ToolReport({
    url: `http://${reachableHost(runConfig)}:${ctx.proxy.port}/mcp`,
    // The proxy admits it and strips it: it never reaches the server, nor audit or limits.
    accessToken: ctx.selfToken,
    // A per-session server process per session: list once, then end it (a virtual one is cheap).
    watch: runConfig.vmcp !== undefined || runConfig.session_mode !== 'per-session',
    record: (names) => rows.setToolsFromRunner(options.name, pid, names),
    logger: options.logger,
    workload: options.name,
    signal: ctx.signal,
  });
  ctx.tools = report;
  return () => report.close();
}

/**
 * The runner's boot, in order. A step's name also names its close in the log; closing runs
 * newest first: the tool report before the proxy it calls, the proxy before the auth chain it
 * calls, the chain before the authorization server it trusts.
 */
export const BOOT_STEPS: readonly Step<BootContext>[] = Object.freeze([
  { name: 'record', start: claimRecord },
  { name: 'run configuration', start: checkRunConfig },
  { name: 'record watch', start: startRecordWatch },
  { name: 'secrets', start: resolveEnv },
  { name: 'authorization server', start: startAuthServer },
  { name: 'middleware pipeline', start: startPipeline },
  { name: 'session store', start: openSessions },
  { name: 'virtual MCP server', start: startVirtualStep },
  { name: 'proxy', start: startProxyStep },
  { name: 'per-session runtime wait', start: releaseSessionWaits },
  { name: 'tool report', start: startToolReport },
]);
