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
 * tokens `upstream_swap_config` injects. The boot is the list of named steps in `boot.ts`,
 * run by `Steps`; this file runs them and then supervises the server.
 */

import { watchRemote } from '../middleware/auth/index.js';
import type { Pipeline } from '../pipeline/index.js';
import type { ProxyUpstream, RunningProxy, SessionStore } from '../proxy/index.js';
import { type Runtime, RuntimeSelector, type ServerExit, type ServerHandle } from '../runtime/index.js';
import {
  definedOnly,
  describeError,
  isSkepError,
  type Logger,
  sleepUnlessAborted,
  untilAborted,
} from '../../shared/index.js';
import type { RunConfig, StatusUpdate } from '../../workloads/index.js';
import type { VirtualMcpServer } from '../vmcp/index.js';
import {
  BOOT_STEPS,
  BootContext,
  BootRefused,
  type RestartPolicy,
  type RunnerOptions,
  serverSpec,
} from './boot.js';
import { StepFailedError, Steps } from './steps.js';
import type { ToolReport } from './tool-report.js';

export type { RestartPolicy, RunnerOptions } from './boot.js';
export {
  DEFAULT_RESTART_POLICY,
  PER_SESSION_IDLE_MS,
  PER_SESSION_MAX_CHILDREN,
  VMCP_MAX_SESSIONS,
} from './boot.js';

const sleep = sleepUnlessAborted;

/** Runs until stopped or until it gives up; returns the process exit code. */
export async function runWorkload(options: RunnerOptions): Promise<number> {
  const ctx = new BootContext(options);
  // Everything the boot starts is closed once, newest first (src/dataplane/runner/boot.ts has the steps).
  const steps = new Steps<BootContext>(options.logger, options.name);
  try {
    await steps.start(BOOT_STEPS, ctx);
    if (ctx.authServer !== undefined) {
      options.logger.info(
        { workload: options.name, issuer: ctx.authServer.issuer },
        'embedded authorization server mounted',
      );
    }
    return await serveWorkload(ctx);
  } catch (err) {
    // A step that refused has recorded why in the status and logged it.
    if (err instanceof StepFailedError && err.cause instanceof BootRefused) return err.cause.exitCode;
    throw err;
  } finally {
    await steps.close();
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
      (await new RuntimeSelector({ config: options.config, logger, engineMissLevel: 'debug' }).forImage(
        runConfig.image,
      ));
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
  await untilAborted(signal);
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
  await untilAborted(signal);
  // The proxy (closed by the caller) stops every session's server.
  setStatus({ status: 'stopped', context: '' });
  return 0;
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

/** How one run of the server ended: stopped (still running), failed (why), or given up (the exit code). */
type ServerRun = { stopping: ServerHandle } | { failure: string } | { exitCode: number };

/** Starts the server, re-attaches it after each crash with a capped backoff, gives up after too many. */
async function supervise(w: ServingWorkload, runtime: Runtime): Promise<number> {
  const { setStatus, signal } = w;
  const { logger, name } = w.options;
  const attached = { first: true };
  let failures = 0;
  let handle: ServerHandle | undefined;
  while (!signal.aborted) {
    const startedAt = Date.now();
    const run = await runServer(w, runtime, attached);
    if ('exitCode' in run) return run.exitCode;
    if ('stopping' in run) {
      handle = run.stopping;
      break;
    }
    if (signal.aborted) break;
    w.proxy.upstreamDown(run.failure);
    // A long healthy run means this is a fresh problem, not a crash loop.
    if (Date.now() - startedAt >= w.policy.healthyAfterMs) failures = 0;
    failures++;
    const delay = restartDelay(w, run.failure, failures);
    if (delay === undefined) return 1;
    await sleep(delay, signal);
  }
  // Stopping: the server first, then (in the caller) the proxy.
  if (handle !== undefined) await handle.stop();
  setStatus({ status: 'stopped', context: '' });
  logger.info({ workload: name }, 'stopped');
  return 0;
}

/** Starts the server, attaches it to the proxy and waits until it exits or the runner stops. */
async function runServer(
  w: ServingWorkload,
  runtime: Runtime,
  attached: { first: boolean },
): Promise<ServerRun> {
  const { runConfig, proxy, setStatus, signal } = w;
  const { logger } = w.options;
  let handle: ServerHandle | undefined;
  try {
    handle = await runtime.start({
      ...serverSpec(runConfig, w.env, w.logFile),
      onProgress: (message) => setStatus({ status: 'starting', context: message }),
    });
    await proxy.setUpstream(upstreamOf(handle, runConfig, w.sessions));
    // The image check's outcome (verified by whom, or the `warn` policy's warning) stays visible.
    setStatus({
      status: 'running',
      context: handle.imageVerification?.message ?? '',
      started: attached.first,
    });
    attached.first = false;
    // A restarted server may list other tools (an upgrade, a changed environment).
    w.tools?.refresh();
    logger.info({ workload: runConfig.name, server: handle.id }, 'server running');
    const outcome = await Promise.race([
      handle.exited,
      // A stop that came while the server started counts too.
      untilAborted(signal).then(() => 'stop' as const),
    ]);
    if (outcome === 'stop') return { stopping: handle };
    return { failure: `server exited (${describeExit(outcome)})` };
  } catch (err) {
    const failure = `server failed to start: ${describeError(err)}`;
    if (handle !== undefined) await handle.stop();
    // A program that is not installed will not appear by retrying, nor will a sandbox
    // that this machine cannot provide.
    const terminal =
      isSkepError(err) &&
      ['executable_not_found', 'sandbox_unavailable', 'image_verification_failed'].includes(err.code);
    if (terminal) {
      proxy.upstreamDown(failure);
      setStatus({ status: 'error', context: failure });
      logger.error({ workload: runConfig.name, failure, err }, 'giving up: the server cannot start here');
      return { exitCode: 1 };
    }
    // The status shows the message; the log keeps the error's stack and cause.
    logger.warn({ workload: runConfig.name, err }, 'the server failed to start');
    return { failure };
  }
}

/**
 * After the `failures`-th failure in a row: the capped exponential delay before the next
 * start, announced in the status and the log; `undefined` (recorded as `error`) after too many.
 */
function restartDelay(w: ServingWorkload, failure: string, failures: number): number | undefined {
  const { setStatus, policy } = w;
  const { logger, name } = w.options;
  if (failures > policy.maxRestarts) {
    setStatus({ status: 'error', context: `${failure}; gave up after ${policy.maxRestarts} restarts` });
    logger.error({ workload: name, failure }, 'giving up');
    return undefined;
  }
  const delay = Math.min(policy.initialDelayMs * 2 ** (failures - 1), policy.maxDelayMs);
  setStatus({
    status: 'starting',
    context: `${failure}; restarting in ${Math.round(delay / 1000)}s (attempt ${failures}/${policy.maxRestarts})`,
  });
  logger.warn({ workload: name, failure, delayMs: delay, attempt: failures }, 'restarting the server');
  return delay;
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
