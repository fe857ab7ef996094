/**
 * Starting, finding and stopping the detached `skep runner <name>` process of a workload.
 * The runner is spawned with the same Node binary and flags as the current process, so it
 * works from `src/` under tsx and from `dist/`; it gets its own session (process group), so
 * it outlives `skep serve` and one group signal also reaches the server it started.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { SkepConfig } from '../config/index.js';
import { runnerLogPath } from './log-files.js';
import { type RunnerKind, runnerV8Flags } from './runner-flags.js';

/** Environment variable carrying the spawner's config to the runner (paths, limits; no secrets). */
export const RUNNER_CONFIG_ENV = 'SKEP_RUNNER_CONFIG';

/**
 * The CLI entry for this code: the bundle itself (`dist/skep.mjs`), `src/control/cli/main.ts` under
 * tsx, or `dist/control/cli/main.js` from the plain compiled tree.
 */
export function cliEntry(): string {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.mjs')) return join(bundleDir(here), 'skep.mjs');
  const ext = here.endsWith('.ts') ? '.ts' : '.js';
  return join(dirname(here), '..', 'control', 'cli', `main${ext}`);
}

/**
 * The runner's own entry, which loads far less than the CLI: `dist/runner.mjs` beside the
 * bundle, `src/dataplane/runner/entry.ts` under tsx, or `dist/dataplane/runner/entry.js` from the compiled tree.
 */
export function runnerEntry(): string {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.mjs')) return join(bundleDir(here), 'runner.mjs');
  const ext = here.endsWith('.ts') ? '.ts' : '.js';
  return join(dirname(here), '..', 'dataplane', 'runner', `entry${ext}`);
}

/** `dist/` for code bundled into an entry file or into one of its `dist/chunks/`. */
function bundleDir(file: string): string {
  const dir = dirname(file);
  return basename(dir) === 'chunks' ? dirname(dir) : dir;
}

const MODULE_FLAGS = new Set(['--import', '--require', '-r', '--loader', '--experimental-loader']);

/**
 * Node flags worth passing on (loaders such as tsx); test-runner and inspector flags are
 * not. Module specifiers are made absolute, because the runner starts in another directory.
 */
function inheritedExecArgv(): string[] {
  const out: string[] = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg.startsWith('--test') || arg.startsWith('--inspect') || arg.startsWith('--experimental-test'))
      continue;
    const eq = arg.indexOf('=');
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    if (MODULE_FLAGS.has(flag)) {
      const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
      if (value === undefined) continue;
      out.push(flag, absoluteSpecifier(value));
      continue;
    }
    out.push(arg);
  }
  return out;
}

function absoluteSpecifier(spec: string): string {
  if (/^(file|data|node):/.test(spec) || isAbsolute(spec)) return spec;
  if (spec.startsWith('.')) return pathToFileURL(resolve(spec)).href;
  try {
    return import.meta.resolve(spec);
  } catch {
    return spec;
  }
}

export type SpawnRunner = (name: string, config: SkepConfig, kind: RunnerKind) => number;

/**
 * Spawns `skep runner <name>` detached, with the V8 flags of its kind; returns its pid. Its
 * stdout/stderr go to the runner log.
 */
export const spawnRunner: SpawnRunner = (name, config, kind) => {
  const logFile = runnerLogPath(config.paths.logsDir, name);
  mkdirSync(dirname(logFile), { recursive: true, mode: 0o700 });
  mkdirSync(config.paths.dataDir, { recursive: true, mode: 0o700 });
  const out = openSync(logFile, 'a', 0o600);
  try {
    const env: NodeJS.ProcessEnv = { ...process.env, [RUNNER_CONFIG_ENV]: JSON.stringify(config) };
    delete env['NODE_TEST_CONTEXT'];
    delete env['NODE_OPTIONS'];
    const child = spawn(
      process.execPath,
      [...runnerV8Flags(kind), ...inheritedExecArgv(), runnerEntry(), 'runner', name],
      {
        detached: true,
        cwd: config.paths.dataDir,
        env,
        stdio: ['ignore', out, out],
      },
    );
    if (child.pid === undefined) throw new Error('the runner process could not be started');
    child.unref();
    return child.pid;
  } finally {
    closeSync(out);
  }
};

/**
 * True when `pid` is alive and, where /proc tells, is the runner of `name` (so a recycled
 * pid is not mistaken for it, and never signalled).
 */
export function runnerAlive(pid: number | undefined, name: string): boolean {
  if (pid === undefined || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const proc = `/proc/${pid}`;
  if (!existsSync('/proc/self')) return true;
  try {
    const stat = readFileSync(`${proc}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state === 'Z' || state === 'X') return false;
    const args = readFileSync(`${proc}/cmdline`, 'utf8').split('\0');
    const at = args.indexOf('runner');
    return at >= 0 && args[at + 1] === name;
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Stops a runner: SIGTERM (it stops its server and records `stopped`), then SIGKILL to its
 * whole process group after `graceMs`. Also kills what is left of the group afterwards, so a
 * server orphaned by a killed runner does not linger.
 */
export async function stopRunner(pid: number | undefined, name: string, graceMs = 15_000): Promise<void> {
  if (pid === undefined) return;
  if (runnerAlive(pid, name)) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // already gone
    }
    const deadline = Date.now() + graceMs;
    while (runnerAlive(pid, name) && Date.now() < deadline) await sleep(50);
  }
  killGroup(pid);
  const deadline = Date.now() + 5000;
  while (runnerAlive(pid, name) && Date.now() < deadline) await sleep(50);
}

/** SIGKILL to the process group led by `pid` (the runner's session); a missing group is fine. */
export function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // no such group: nothing left
  }
}
