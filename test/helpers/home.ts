/** A throw-away SKEP_HOME per test, removed when the test ends. */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { loadConfig, type SkepConfig } from '../../src/config/index.js';

export interface TempHome {
  dir: string;
  env: NodeJS.ProcessEnv;
  config: SkepConfig;
}

export function tempHome(t: TestContext, prefix = 'skep-test-'): TempHome {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  // Retried: a sandboxed process of a removed workload may still write for a moment.
  t.after(() => {
    stopLeftProcesses(dir);
    rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  });
  const env: NodeJS.ProcessEnv = { ...process.env, SKEP_HOME: dir };
  return { dir, env, config: loadConfig(env) };
}

/**
 * Sends SIGTERM to the processes a test left running under `dir`: detached runners (their
 * environment carries the home, as `SKEP_HOME` or in the runner's configuration) and `skep
 * serve` processes. `t.after` hooks run in the order they were registered, so this hook, which
 * `tempHome` registers first, runs before a test's own clean-up could stop them; a runner whose
 * home is gone would otherwise live on for the rest of the run. Only homes where a runner
 * wrote its log are searched (a scan of /proc costs a few milliseconds).
 */
function stopLeftProcesses(dir: string): void {
  if (!existsSync(join(dir, 'data', 'logs')) || !existsSync('/proc/self')) return;
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    let environ: string;
    try {
      environ = readFileSync(`/proc/${entry}/environ`, 'latin1');
    } catch {
      continue;
    }
    if (!environ.includes(`${dir}/`) && !environ.includes(`${dir}\0`) && !environ.includes(`${dir}"`))
      continue;
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // gone already
    }
  }
}
