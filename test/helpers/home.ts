/** A throw-away SKEP_HOME per test, removed when the test ends. */
import { mkdtempSync, rmSync } from 'node:fs';
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
  t.after(() => rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }));
  const env: NodeJS.ProcessEnv = { ...process.env, SKEP_HOME: dir };
  return { dir, env, config: loadConfig(env) };
}
