/**
 * Tests that need a system service (Podman, Redis, an OCI registry...) call
 * `requireService`. Locally a missing service skips the test with a loud reason; in CI
 * (`CI=true`) it fails the test, because CI must prove everything.
 */

import { spawnSync } from 'node:child_process';
import type { TestContext } from 'node:test';

export function hasCommand(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

/** Returns true when the test may go on; otherwise skips it (or throws in CI). */
export function requireService(t: TestContext, name: string, available: boolean, hint: string): boolean {
  if (available) return true;
  const reason = `${name} is not available here (${hint})`;
  if (process.env['CI'] === 'true') throw new Error(`CI requires ${reason}`);
  process.stderr.write(`\n!!! SKIPPING: ${reason}\n`);
  t.skip(reason);
  return false;
}
