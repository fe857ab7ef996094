/**
 * Helpers for workload tests with real runners: the server-everything stdio entry (run as
 * `cmd://<node> <entry> stdio`, no network), polling, child-process lookup, and clean-up
 * that removes every workload of a context and checks that no runner survives.
 */
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { TestContext } from 'node:test';
import type { SkepApp } from '../../../src/control/api/app.js';
import { type ApiContext, createContext } from '../../../src/control/app/index.js';
import { type RestartPolicy, runWorkload } from '../../../src/dataplane/runner/index.js';
import type { SecretLookup } from '../../../src/secrets/index.js';
import { silentLogger } from '../../../src/shared/index.js';
import {
  type CreateWorkloadRequest,
  proxyUrlOf,
  runnerAlive,
  WorkloadManager,
} from '../../../src/workloads/index.js';
import { buildTestApp } from '../../helpers/api.js';
import { type TempHome, tempHome } from '../../helpers/home.js';
import { waitFor } from '../../helpers/wait.js';

const require = createRequire(import.meta.url);

/** The stdio entry of @modelcontextprotocol/server-everything in node_modules. */
export const EVERYTHING_ENTRY = join(
  dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')),
  'dist',
  'index.js',
);

export const everythingBody = (name: string) => ({
  name,
  image: `cmd://${process.execPath}`,
  cmd_arguments: [EVERYTHING_ENTRY, 'stdio'],
});

export { START_TIMEOUT_MS, waitFor, waitForStatus } from '../../helpers/wait.js';

/** Above Linux's pid_max (2^22): never a live process or process group. */
const IMPOSSIBLE_PID = 99_999_999;

/**
 * A manager over `home` (default: a fresh one) whose runners the test runs in-process (`runInProcess`):
 * spawning one only records a pid that no process has.
 */
export function inProcessManager(
  t: TestContext,
  home: TempHome = tempHome(t),
): { ctx: ApiContext; manager: WorkloadManager } {
  const ctx = createContext(home.config);
  const manager = new WorkloadManager({
    store: ctx.store,
    config: home.config,
    groups: ctx.groups,
    secretLookup: async () => undefined,
    spawnRunner: () => IMPOSSIBLE_PID,
  });
  ctx.groups.attachMembers(manager);
  t.after(async () => {
    await manager.close();
    await ctx.close();
  });
  return { ctx, manager };
}

/**
 * Runs the runner of `name` (created through `inProcessManager`) in this process, until `signal` or it gives up.
 * `secretLookup` defaults to a store with no secrets.
 */
export function runInProcess(
  ctx: ApiContext,
  name: string,
  signal: AbortSignal,
  policy?: Partial<RestartPolicy>,
  secretLookup: SecretLookup = async () => undefined,
): Promise<number> {
  return runWorkload({
    name,
    store: ctx.store,
    config: ctx.config,
    secretLookup,
    logger: silentLogger,
    pid: IMPOSSIBLE_PID,
    signal,
    ...(policy === undefined ? {} : { policy }),
  });
}

/**
 * Creates `<name>-base` from `base`, then workload `name` from that one's exported
 * configuration with `extra(home folder)` on top, on a fresh home, and runs its runner in this
 * process (`secretLookup` answers its secrets) until it is running: the proxy's working URL at
 * `path`, the home folder, and `stop`, which ends the runner (the test's end stops it too,
 * before the context closes).
 */
export async function runConfiguredInProcess(
  t: TestContext,
  name: string,
  base: Omit<CreateWorkloadRequest, 'name'>,
  extra: (dir: string) => Record<string, unknown>,
  options: { secretLookup?: SecretLookup; path?: string } = {},
): Promise<{ url: string; dir: string; stop: () => Promise<void> }> {
  const home = tempHome(t);
  const ctx = createContext(home.config);
  const secretLookup = options.secretLookup ?? (async () => undefined);
  const manager = new WorkloadManager({
    store: ctx.store,
    config: home.config,
    groups: ctx.groups,
    secretLookup,
    spawnRunner: () => IMPOSSIBLE_PID,
  });
  ctx.groups.attachMembers(manager);
  await manager.create({ name: `${name}-base`, ...base });
  await manager.createFromConfig({ ...manager.exportConfig(`${name}-base`), ...extra(home.dir) }, { name });
  const controller = new AbortController();
  const done = runInProcess(ctx, name, controller.signal, undefined, secretLookup);
  const stop = async (): Promise<void> => {
    if (controller.signal.aborted) return;
    controller.abort();
    await done;
  };
  // One hook, in this order: `t.after` hooks run in the order they were registered.
  t.after(async () => {
    await stop();
    await manager.close();
    await ctx.close();
  });
  await waitFor(`${name} to be running`, () => {
    const row = manager.rows.get(name);
    if (row?.status === 'error') throw new Error(`${name}: ${row.statusContext}`);
    return row?.status === 'running' ? true : undefined;
  });
  return { url: workloadEndpoint(manager, name, options.path), dir: home.dir, stop };
}

/**
 * The working URL of a workload's proxy endpoint `path` (`/mcp` by default, `/sse`, or any other
 * path of the proxy): what a client is given, so it carries the workload's access token
 * (`?skep_token=`) when the proxy asks for one (not for a workload with inbound auth of its own).
 */
export function workloadEndpoint(
  source: Pick<ApiContext, 'workloads'> | WorkloadManager,
  name: string,
  path = '/mcp',
): string {
  const rows = 'rows' in source ? source.rows : source.workloads.rows;
  const row = rows.get(name);
  if (row === undefined) throw new Error(`no workload ${name}`);
  const url = new URL(proxyUrlOf(row, 'streamable-http'));
  url.pathname = path;
  return url.href;
}

/** Direct children of `pid` (Linux `ps`). */
export function childPids(pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .map((l) => Number(l.trim()))
      .filter((n) => Number.isInteger(n) && n > 0);
  } catch {
    return [];
  }
}

export function runnerPidOf(ctx: ApiContext, name: string): number {
  const pid = ctx.workloads.rows.get(name)?.runnerPid;
  if (pid === undefined) throw new Error(`${name} has no runner pid`);
  return pid;
}

/** Deletes every workload of the context (stopping runners) and checks that no runner survived. */
export async function removeAllWorkloads(ctx: ApiContext): Promise<void> {
  await ctx.workloads.settled();
  const rows = ctx.workloads.rows.list();
  await Promise.all(rows.map((r) => ctx.workloads.deleteNow(r.name)));
  for (const row of rows) {
    if (runnerAlive(row.runnerPid, row.name))
      throw new Error(`runner of ${row.name} (${row.runnerPid}) survived clean-up`);
  }
}

/**
 * A management API app on a temp home whose clean-up first removes every workload (killing
 * runners), then closes the app and the context.
 */
/** A temporary Skep home and its context; the test's end removes every workload, then closes. */
export function workloadHome(
  t: TestContext,
  beforeClose?: () => Promise<void>,
): { ctx: ApiContext; home: TempHome } {
  const home = tempHome(t);
  const ctx = createContext(home.config);
  t.after(async () => {
    try {
      await removeAllWorkloads(ctx);
    } finally {
      await beforeClose?.();
      await ctx.close();
    }
  });
  return { ctx, home };
}

export async function workloadApp(
  t: TestContext,
): Promise<{ app: SkepApp; ctx: ApiContext; home: TempHome }> {
  const built: { app?: SkepApp } = {};
  const { ctx, home } = workloadHome(t, async () => built.app?.close());
  const app = await buildTestApp(ctx);
  built.app = app;
  return { app, ctx, home };
}
