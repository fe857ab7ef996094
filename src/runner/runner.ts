/**
 * The per-workload supervisor (`skep runner <name>`, spawned detached by the manager). It
 * reads the run configuration from the store, serves the proxy on the workload's port,
 * starts the server through the runtime and keeps it alive: when the server dies the proxy
 * is told (`upstreamDown`), the server is restarted after a capped exponential backoff and
 * re-attached (`setUpstream`); a long-enough healthy run resets the backoff; after too many
 * failures in a row the runner gives up and records `error`. Status, `status_context` and
 * its own pid live in the store. SIGTERM stops everything cleanly. With
 * `embedded_auth_server_config` it also runs the OAuth 2.1 authorization server, mounted on
 * the proxy (`ProxyOptions.handlers`), whose tokens the auth chain accepts and whose upstream
 * tokens `upstream_swap_config` injects.
 */

import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { type SecretStore, watchRemote } from '../auth/index.js';
import type { AuthServer, EmbeddedAuthServerConfig } from '../authserver/index.js';
import type { SkepConfig } from '../config/index.js';
import { buildPipeline, type Pipeline } from '../pipeline/index.js';
import {
  openSessionStore,
  type PerSessionOptions,
  type ProxyUpstream,
  type RunningProxy,
  type SessionStore,
  startProxy,
} from '../proxy/index.js';
import {
  type Runtime,
  RuntimeSelector,
  type ServerExit,
  type ServerHandle,
  type ServerSpec,
} from '../runtime/index.js';
import {
  definedOnly,
  describeError,
  isSkepError,
  type Logger,
  SkepError,
  sleepUnlessAborted,
} from '../shared/index.js';
import type { Store } from '../store/index.js';
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
} from '../workloads/index.js';
import type { VirtualMcpServer } from '../vmcp/index.js';
import { Closers } from './closers.js';
import { watchRecord } from './record-watch.js';
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

const sleep = sleepUnlessAborted;

/** How often a runner checks that its workload record still names it. */
const RECORD_CHECK_INTERVAL_MS = 2000;

/** `session_mode: per-session`: most concurrent server processes, and their idle timeout. */
export const PER_SESSION_MAX_CHILDREN = 16;
export const PER_SESSION_IDLE_MS = 30 * 60_000;
/** `vmcp`: most live client sessions of a virtual MCP server (the reference's per-pod LRU size). */
export const VMCP_MAX_SESSIONS = 1000;

/** Runs until stopped or until it gives up; returns the process exit code. */
export async function runWorkload(options: RunnerOptions): Promise<number> {
  // Everything the setup starts is registered here and torn down once, newest first.
  const closers = new Closers(options.logger, options.name);
  try {
    const serving = await setUp(options, closers);
    return typeof serving === 'number' ? serving : await serveWorkload(serving);
  } finally {
    await closers.closeAll();
  }
}

/** A workload whose proxy is listening: what supervision needs to run (or reach) its server. */
interface ServingWorkload {
  options: RunnerOptions;
  runConfig: RunConfig;
  env: Record<string, string>;
  proxy: RunningProxy;
  chain: Pipeline;
  setStatus: (u: StatusUpdate) => boolean;
  /** Aborted on a stop request or when the record is lost. */
  signal: AbortSignal;
  policy: RestartPolicy;
  logFile: string;
  perSession: boolean;
  /** Hands the runtime (or `undefined`: none) to per-session spawns waiting for it. */
  runtimeChosen: (runtime: Runtime | undefined) => void;
  /** Where a streamable-HTTP server's sessions are kept (memory or `session_redis`). */
  sessions: SessionStore | undefined;
  /** A virtual MCP server (`vmcp`): serves the group's workloads instead of a server of its own. */
  virtual: VirtualMcpServer | undefined;
  /** Lists the tools clients see, for the store; told each time the server is attached. */
  tools: ToolReport | undefined;
}

/**
 * Checks the record, resolves secrets, starts the authorization server, the auth chain and
 * the proxy, registering each in `closers`. Returns the exit code when one of them fails (the
 * status says why).
 */
async function setUp(options: RunnerOptions, closers: Closers): Promise<ServingWorkload | number> {
  const { name, config, logger } = options;
  // Stop on request, and also when this runner is no longer the workload's registered runner
  // or its state is gone (the workload was removed behind our back, or SKEP_HOME deleted):
  // a runner never outlives the record that justifies it.
  const stopper = new AbortController();
  const signal = stopper.signal;
  options.signal.addEventListener('abort', () => stopper.abort(), { once: true });
  if (options.signal.aborted) stopper.abort();
  const pid = options.pid ?? process.pid;
  const policy: RestartPolicy = { ...DEFAULT_RESTART_POLICY, ...options.policy };
  const rows = new WorkloadStore(options.store);
  const setStatus = (update: StatusUpdate) => rows.setStatusFromRunner(name, pid, update);
  /** Records `error` with `<what>: <the error>` (what the user sees) and logs `message` with the error. */
  const failed = (what: string, message: string, err: unknown): number => {
    setStatus({ status: 'error', context: `${what}: ${describeError(err)}` });
    logger.error({ workload: name, err }, message);
    return 1;
  };

  const row = await claimRecord(rows, name, pid, signal);
  if (row === undefined) {
    logger.warn({ workload: name }, 'this runner is not the registered runner of the workload; exiting');
    return 1;
  }
  const runConfig = row.config;
  // The manager refuses this at create/update/import; a record written before that rule (or
  // by hand) is refused here, before anything binds (issue 16: beyond loopback needs auth).
  const exposure = hostExposureProblem(runConfig);
  if (exposure !== undefined && options.exposureAccepted !== undefined) {
    logger.warn({ workload: name, host: runConfig.host, why: options.exposureAccepted }, exposure);
  } else if (exposure !== undefined) {
    setStatus({ status: 'error', context: exposure });
    logger.error({ workload: name, host: runConfig.host }, 'refusing an unauthenticated non-loopback bind');
    return 1;
  }
  // Create, update and import refuse fields this build would ignore; a record written before
  // that rule (or by hand) is refused here rather than run with a policy silently dropped.
  const [unsupported] = unsupportedFields(runConfig, config);
  if (unsupported !== undefined) {
    setStatus({ status: 'error', context: unsupported.message });
    logger.error(
      { workload: name, field: unsupported.field },
      'refusing a run configuration field this build ignores',
    );
    return 1;
  }
  const perSession = runConfig.session_mode === 'per-session' || runConfig.vmcp !== undefined;
  if (
    perSession &&
    runConfig.vmcp === undefined &&
    (runConfig.transport !== 'stdio' || runConfig.remote_url !== undefined)
  ) {
    setStatus({
      status: 'error',
      context:
        'session_mode per-session needs a stdio server (set transport stdio, or use session_mode shared)',
    });
    return 1;
  }
  const stopWatch = watchRecord({
    workload: name,
    isOurs: () => existsSync(config.paths.databaseFile) && rows.get(name)?.runnerPid === pid,
    onLost: () => stopper.abort(),
    logger,
    intervalMs: RECORD_CHECK_INTERVAL_MS,
  });
  closers.add('record watch', stopWatch);
  signal.addEventListener('abort', stopWatch, { once: true });

  let env: Record<string, string>;
  try {
    env = {
      ...runConfig.env_vars,
      ...(await resolveSecretReferences(runConfig.secrets, options.secretLookup)),
    };
  } catch (err) {
    return failed('cannot resolve secrets', 'cannot resolve secrets', err);
  }

  // The proxy's public origin (`http://host:port`; a wildcard bind is reached on loopback).
  const host = runConfig.host === '0.0.0.0' || runConfig.host === '' ? '127.0.0.1' : runConfig.host;
  const proxyOrigin =
    runConfig.port > 0 ? `http://${host.includes(':') ? `[${host}]` : host}:${runConfig.port}` : undefined;
  const resourceUrl = runConfig.oidc_config?.resourceURL ?? (proxyOrigin && `${proxyOrigin}/mcp`);

  // The embedded OAuth 2.1 authorization server, mounted on the proxy (external-auth.md §3.8).
  let authServer: AuthServer | undefined;
  const eas = runConfig.embedded_auth_server_config;
  if (eas !== undefined) {
    try {
      // Loaded only by the runners that mount it (runners stay small; see src/runner/main.ts).
      const { createAuthServer } = await import('../authserver/index.js');
      authServer = await createAuthServer(embeddedAuthServerConfig(eas, proxyOrigin, resourceUrl), {
        logger,
        // `*_env_var` secrets may come from the runner's environment or the workload's own
        // env_vars and secrets (so a Skep secret can hold the upstream client secret).
        env: { ...process.env, ...env },
      });
    } catch (err) {
      return failed(
        'cannot start the embedded authorization server',
        'cannot start the embedded authorization server',
        err,
      );
    }
    const started = authServer;
    closers.add('authorization server', () => started.close());
  }

  // The middleware pipeline (src/pipeline/stages/index.ts has the order); bad config stops here.
  let chain: Pipeline;
  try {
    chain = await buildPipeline(runConfig, {
      logger,
      secretLookup: options.secretLookup,
      ...definedOnly({ secrets: options.secrets, authServer }),
      ...(proxyOrigin === undefined ? {} : { resourceUrl: `${proxyOrigin}/mcp` }),
      // A remote login needs the user: publish its URL in the status, where `skep run`,
      // `skep list` and the API show it (the runner log has it too).
      onLoginUrl: (url) => {
        const running = rows.get(name)?.status === 'running';
        setStatus({ status: running ? 'running' : 'starting', context: `${AUTHORIZATION_PENDING}${url}` });
      },
    });
  } catch (err) {
    return failed('invalid middleware configuration', 'cannot build the middleware pipeline', err);
  }
  const builtChain = chain;
  closers.add('middleware pipeline', () => builtChain.close());
  if (chain.names.length > 0)
    logger.info({ workload: name, middlewares: chain.names }, 'middleware pipeline');
  // A stop must not wait for an interactive login (the remote OAuth client waits minutes for
  // the user): closing the chain aborts it. Closing twice is harmless.
  signal.addEventListener('abort', () => void builtChain.close(), { once: true });

  // A streamable-HTTP server's sessions: in memory, or in Redis shared with the workload's other proxies.
  let sessions: SessionStore | undefined;
  try {
    const storage = sessionStorageOf(runConfig);
    sessions = storage === undefined ? undefined : await openSessionStore(storage);
  } catch (err) {
    return failed('session storage', 'cannot open the session store', err);
  }
  const openedSessions = sessions;
  if (openedSessions !== undefined) closers.add('session store', () => openedSessions.close());

  // Per-session mode: the proxy starts one server per client session through the runtime,
  // which is chosen after the proxy listens; spawns wait for it.
  let runtimeChosen: (runtime: Runtime | undefined) => void = () => {};
  const runtimeForSessions = new Promise<Runtime | undefined>((resolve) => {
    runtimeChosen = resolve;
  });
  const logFile = serverLogPath(config.paths.logsDir, name);
  let virtual: VirtualMcpServer | undefined;
  if (runConfig.vmcp !== undefined) {
    try {
      virtual = await startVirtual(options, runConfig, env, authServer, rows, setStatus);
    } catch (err) {
      return failed('invalid vmcp configuration', 'cannot start the virtual MCP server', err);
    }
    const started = virtual;
    closers.add('virtual MCP server', () => started.close());
  }
  // Only the owner's clients may call it, unless it authenticates callers itself or its
  // owner opened it; in a Kubernetes pod the Service and NetworkPolicies decide instead.
  const callerToken =
    options.exposureAccepted === undefined && endpointAccessOf(runConfig) === 'owner'
      ? row.accessToken
      : undefined;
  // The runner's own credential at its proxy (its tool report), made here and never stored.
  const selfToken = randomBytes(32).toString('hex');
  const identityStage = virtual?.identityMiddleware();
  const callToolStage = virtual?.callToolMiddleware();
  let proxy: RunningProxy;
  try {
    proxy = await startProxy({
      ...(perSession
        ? {
            perSession: {
              spawn:
                virtual?.spawn ??
                sessionServerSpawner(runtimeForSessions, serverSpec(runConfig, env, logFile)),
              // A virtual session is in-process and cheap: as many as the reference keeps live (§1.8).
              maxChildren: virtual === undefined ? PER_SESSION_MAX_CHILDREN : VMCP_MAX_SESSIONS,
              idleMs: PER_SESSION_IDLE_MS,
            },
          }
        : {}),
      host: runConfig.host,
      port: runConfig.port,
      // Seed PermissionProfile network.inbound.allow_host: the Host/Origin names clients may
      // use besides loopback names; enforced here, in front of every runtime and transport.
      allowedHosts: runConfig.permission_profile?.network?.inbound?.allow_host ?? [],
      // Browser origins besides the proxy's own, exact (validated by the manager).
      allowedOrigins: [...(runConfig.allowed_origins ?? []), ...(chain.proxy.allowedOrigins ?? [])],
      ...(callerToken === undefined ? {} : { callerToken }),
      selfToken,
      logger,
      serverName: name,
      transport: runConfig.transport,
      // vMCP: call_tool becomes the inner call before any stage; the caller's identity is passed on last.
      middlewares: [
        ...(callToolStage === undefined ? [] : [callToolStage]),
        ...chain.middlewares,
        ...(identityStage === undefined ? [] : [identityStage]),
      ],
      // The embedded authorization server's endpoints, then the stages' own (telemetry's /metrics).
      handlers: [
        ...(authServer === undefined ? [] : [authServer.handle.bind(authServer)]),
        ...chain.handlers,
      ],
      ...definedOnly({
        toolsFilter: chain.proxy.toolsFilter ?? runConfig.tools_filter,
        toolsOverride: chain.proxy.toolsOverride ?? runConfig.tools_override,
      }),
      ...(chain.proxy.maxBodyBytes === undefined
        ? {}
        : { limits: { maxBodyBytes: chain.proxy.maxBodyBytes } }),
    });
  } catch (err) {
    return failed(
      `cannot serve the proxy on ${runConfig.host}:${runConfig.port}`,
      'cannot start the proxy',
      err,
    );
  }
  const listening = proxy;
  closers.add('proxy', () => listening.close());
  // Before the proxy closes, spawns still waiting for a runtime learn there is none.
  closers.add('per-session runtime wait', () => runtimeChosen(undefined));
  logger.info({ workload: name, url: proxy.url }, 'proxy listening');
  // The runner lists the tools as a client of its own proxy, holding the owner's token. A
  // workload that authenticates its callers itself admits no such client: it reports nothing.
  let tools: ToolReport | undefined;
  if (endpointAccessOf(runConfig) !== 'inbound-auth') {
    const report = new ToolReport({
      url: `http://${host.includes(':') ? `[${host}]` : host}:${proxy.port}/mcp`,
      // The proxy admits it and strips it: it never reaches the server, nor audit or limits.
      accessToken: selfToken,
      // A per-session server process per session: list once, then end it (a virtual one is cheap).
      watch: runConfig.vmcp !== undefined || runConfig.session_mode !== 'per-session',
      record: (names) => rows.setToolsFromRunner(name, pid, names),
      logger,
      workload: name,
      signal,
    });
    tools = report;
    closers.add('tool report', () => report.close());
  }
  if (authServer !== undefined)
    logger.info({ workload: name, issuer: authServer.issuer }, 'embedded authorization server mounted');
  return {
    options,
    runConfig,
    env,
    proxy,
    chain,
    setStatus,
    signal,
    policy,
    logFile,
    perSession,
    runtimeChosen,
    sessions,
    virtual,
    tools,
  };
}

/**
 * `vmcp`: the virtual MCP server over the other running workloads of the group (`groupRef`,
 * default the workload's own), loaded only by the runners that serve one.
 */
async function startVirtual(
  options: RunnerOptions,
  runConfig: RunConfig,
  env: Record<string, string>,
  authServer: AuthServer | undefined,
  rows: WorkloadStore,
  setStatus: (u: StatusUpdate) => boolean,
): Promise<VirtualMcpServer> {
  const { parseVmcpConfig, VirtualMcpServer: Server } = await import('../vmcp/index.js');
  const vmcp = parseVmcpConfig(runConfig.vmcp);
  const group = vmcp.groupRef ?? runConfig.group;
  // The config's static `backends[]` (a Kubernetes pod: the operator resolved the group), or
  // the other running workloads of the group, read from the store.
  const listed = vmcp.staticBackends?.map((b) => ({
    name: b.name,
    url: b.url,
    runConfig: undefined,
    probe: b.type === 'entry' ? ('reachable' as const) : ('health' as const),
  }));
  const staticList = listed === undefined ? undefined : () => listed;
  const fromGroup = () =>
    rows
      .list(group)
      .filter((r) => r.name !== runConfig.name && r.config.vmcp === undefined && r.status === 'running')
      .map((r) => ({
        name: r.name,
        url: proxyUrlOf(r, 'streamable-http'),
        runConfig: r.config,
      }));
  const server = new Server({
    name: runConfig.name,
    config: vmcp,
    logger: options.logger,
    discover: staticList ?? fromGroup,
    auth: {
      logger: options.logger,
      secretLookup: options.secretLookup,
      env: Object.assign({}, process.env, env),
      authServer,
      upstreamNames: (runConfig.embedded_auth_server_config?.upstreams ?? []).map((u) => u.name),
    },
    onStatus: (summary) => {
      if (rows.get(runConfig.name)?.status === 'running') setStatus({ status: 'running', context: summary });
    },
  });
  await server.start();
  return server;
}

/**
 * The manager records our pid right after spawning us; waits for it (15 s at most), so that
 * a runner that lost a race (the workload was stopped or replaced meanwhile) just leaves.
 * Returns the record when it names this runner.
 */
async function claimRecord(
  rows: WorkloadStore,
  name: string,
  pid: number,
  signal: AbortSignal,
): Promise<WorkloadRow | undefined> {
  const deadline = Date.now() + 15_000;
  let row = rows.get(name);
  while (row !== undefined && row.runnerPid !== pid && Date.now() < deadline && !signal.aborted) {
    await sleep(50, signal);
    row = rows.get(name);
  }
  return row?.runnerPid === pid ? row : undefined;
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

/**
 * Supervision, once the proxy listens: a remote server is probed; a local one is started
 * through the runtime and restarted when it dies (or, per session, started by the proxy).
 */
async function serveWorkload(w: ServingWorkload): Promise<number> {
  const { options, runConfig, proxy, setStatus, signal } = w;
  const { name, logger } = options;
  if (runConfig.remote_url !== undefined)
    return serveRemote(runConfig, proxy, w.chain, setStatus, logger, signal, w.sessions, w.tools);
  if (w.virtual !== undefined) return serveVirtual(w, w.virtual);
  let runtime: Runtime;
  try {
    runtime =
      options.runtime ??
      (await new RuntimeSelector({ config: options.config, logger }).forImage(runConfig.image));
  } catch (err) {
    setStatus({ status: 'error', context: describeError(err) });
    logger.error({ workload: name, err }, 'no runtime can run this workload');
    return 1;
  }
  if (w.perSession) return servePerSession(w, runtime);
  return supervise(w, runtime);
}

/** A virtual MCP server: the proxy opens one in-process session per client; this waits for the stop. */
async function serveVirtual(w: ServingWorkload, virtual: VirtualMcpServer): Promise<number> {
  const { setStatus, signal } = w;
  const { served } = virtual.describe();
  // The summary names left-out backends too; `onStatus` skips it while not yet running.
  setStatus({ status: 'running', context: virtual.summary(), started: true });
  w.tools?.refresh();
  w.options.logger.info({ workload: w.options.name, backends: served }, 'serving a virtual MCP server');
  await new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
  setStatus({ status: 'stopped', context: '' });
  return 0;
}

/** Per-session mode: the proxy starts each session's server; this only waits for the stop. */
async function servePerSession(w: ServingWorkload, runtime: Runtime): Promise<number> {
  const { setStatus, signal } = w;
  if (runtime.name !== 'process') {
    setStatus({
      status: 'error',
      context: `session_mode per-session runs on the process runtime only, not ${runtime.name}`,
    });
    return 1;
  }
  w.runtimeChosen(runtime);
  setStatus({ status: 'running', context: '', started: true });
  w.tools?.refresh();
  w.options.logger.info({ workload: w.options.name }, 'serving one server process per client session');
  await new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
  // The proxy (closed by the caller) stops every session's server.
  setStatus({ status: 'stopped', context: '' });
  return 0;
}

/**
 * `embedded_auth_server_config` with the run-time defaults filled in: the issuer defaults to
 * the workload's proxy origin (`http://<host>:<port>`, where the server is mounted) and
 * `allowed_audiences` to the workload's resource URL (`<origin>/mcp`, or
 * `oidc_config.resourceURL`), as the operator sets them (external-auth.md §3.8). Set
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
      'bad_request',
      'embedded_auth_server_config.issuer: set it, or give the workload a fixed proxy port (the default issuer is the proxy URL)',
    );
  const audiences = eas.allowed_audiences?.length ? eas.allowed_audiences : resourceUrl ? [resourceUrl] : [];
  return { ...eas, issuer, allowed_audiences: audiences };
}

/**
 * A remote server cannot be restarted from here: it is probed instead, with a capped
 * backoff while it is unreachable (never giving up) and a steady interval once healthy.
 */
async function serveRemote(
  runConfig: RunConfig,
  proxy: RunningProxy,
  chain: Pipeline,
  setStatus: (u: StatusUpdate) => boolean,
  logger: Logger,
  signal: AbortSignal,
  sessions: SessionStore | undefined,
  tools: ToolReport | undefined,
): Promise<number> {
  const transport = runConfig.transport === 'sse' ? 'sse' : 'streamable-http';
  const url = runConfig.remote_url as string;
  let first = true;
  // The probe carries the headers the proxy adds to every request for this server
  // (header_forward, header injection, a fixed bearer token), taken from the built stages, so
  // it reaches the server as the proxied requests do. Not a cheaper TCP/TLS connect: that
  // cannot tell a working server from a gateway answering 5xx. Not an unauthenticated request:
  // the server or its gateway would log a failed login per probe (every 30 s), and may lock
  // out or rate-limit unauthenticated traffic. Per-user credentials stay out (no user here).
  const headers: Record<string, string> = Object.assign({}, ...chain.middlewares.map((m) => m.staticHeaders));
  await watchRemote({
    url,
    transport,
    headers,
    signal,
    async onHealthy() {
      // The remote OAuth login (if any) runs once, when the server is first reachable.
      await chain.start();
      await proxy.setUpstream({ kind: 'http', url, transport, ...definedOnly({ sessions }) });
      setStatus({ status: 'running', context: '', started: first });
      first = false;
      tools?.refresh();
      logger.info({ workload: runConfig.name }, 'proxying a remote server');
    },
    onUnhealthy(reason, retryInMs, failures) {
      proxy.upstreamDown(reason);
      setStatus({
        status: first ? 'starting' : 'unhealthy',
        context: `${reason}; retrying in ${Math.round(retryInMs / 1000)}s (attempt ${failures})`,
      });
      logger.warn({ workload: runConfig.name, reason, retryInMs }, 'remote server not usable');
    },
  });
  setStatus({ status: 'stopped', context: '' });
  return 0;
}

/** Starts the server, re-attaches it after each crash with a capped backoff, gives up after too many. */
async function supervise(w: ServingWorkload, runtime: Runtime): Promise<number> {
  const { runConfig, proxy, setStatus, signal, policy } = w;
  const { logger } = w.options;
  const name = runConfig.name;
  let failures = 0;
  let first = true;
  let handle: ServerHandle | undefined;
  while (!signal.aborted) {
    const startedAt = Date.now();
    handle = undefined;
    let failure: string;
    try {
      handle = await runtime.start({
        ...serverSpec(runConfig, w.env, w.logFile),
        onProgress: (message) => setStatus({ status: 'starting', context: message }),
      });
      await proxy.setUpstream(upstreamOf(handle, runConfig, w.sessions));
      setStatus({ status: 'running', context: '', started: first });
      first = false;
      // A restarted server may list other tools (an upgrade, a changed environment).
      w.tools?.refresh();
      logger.info({ workload: name, server: handle.id }, 'server running');
      const outcome = await Promise.race([
        handle.exited,
        new Promise<'stop'>((resolve) =>
          signal.addEventListener('abort', () => resolve('stop'), { once: true }),
        ),
      ]);
      if (outcome === 'stop') break;
      failure = `server exited (${describeExit(outcome)})`;
    } catch (err) {
      failure = `server failed to start: ${describeError(err)}`;
      if (handle !== undefined) await handle.stop();
      // A program that is not installed will not appear by retrying, nor will a sandbox
      // that this machine cannot provide.
      const terminal = isSkepError(err) && ['executable_not_found', 'sandbox_unavailable'].includes(err.code);
      if (terminal) {
        proxy.upstreamDown(failure);
        setStatus({ status: 'error', context: failure });
        logger.error({ workload: name, failure, err }, 'giving up: the server cannot start here');
        return 1;
      }
      // The status shows the message; the log keeps the error's stack and cause.
      logger.warn({ workload: name, err }, 'the server failed to start');
    }
    handle = undefined;
    if (signal.aborted) break;
    proxy.upstreamDown(failure);
    // A long healthy run means this is a fresh problem, not a crash loop.
    if (Date.now() - startedAt >= policy.healthyAfterMs) failures = 0;
    failures++;
    if (failures > policy.maxRestarts) {
      setStatus({ status: 'error', context: `${failure}; gave up after ${policy.maxRestarts} restarts` });
      logger.error({ workload: name, failure }, 'giving up');
      return 1;
    }
    const delay = Math.min(policy.initialDelayMs * 2 ** (failures - 1), policy.maxDelayMs);
    setStatus({
      status: 'starting',
      context: `${failure}; restarting in ${Math.round(delay / 1000)}s (attempt ${failures}/${policy.maxRestarts})`,
    });
    logger.warn({ workload: name, failure, delayMs: delay, attempt: failures }, 'restarting the server');
    await sleep(delay, signal);
  }
  // Stopping: the server first, then (in the caller) the proxy.
  if (handle !== undefined) await handle.stop();
  setStatus({ status: 'stopped', context: '' });
  logger.info({ workload: name }, 'stopped');
  return 0;
}

/** What the runtime needs to start the workload's server. */
function serverSpec(runConfig: RunConfig, env: Record<string, string>, logFile: string): ServerSpec {
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
    }),
    volumes: runConfig.volumes,
    labels: runConfig.container_labels,
  };
}

function upstreamOf(
  handle: ServerHandle,
  runConfig: RunConfig,
  sessions: SessionStore | undefined,
): ProxyUpstream {
  if (handle.stdio !== undefined)
    return { kind: 'stdio', stdin: handle.stdio.stdin, stdout: handle.stdio.stdout };
  if (handle.url !== undefined) {
    return {
      kind: 'http',
      url: handle.url,
      transport: runConfig.transport === 'sse' ? 'sse' : 'streamable-http',
      ...definedOnly({ sessions }),
    };
  }
  throw new Error('the runtime returned neither stdio nor a URL');
}

function describeExit(exit: ServerExit): string {
  if (exit.signal !== null) return `signal ${exit.signal}`;
  return `code ${exit.code ?? 'unknown'}`;
}
