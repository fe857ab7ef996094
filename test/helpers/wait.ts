/** Polling helpers for tests that wait on real processes (workloads, containers, runners). */
import type { ApiContext } from '../../src/control/app/index.js';

/** Generous: a runner starts Node + tsx + the server; CI machines have 2 cores. */
export const START_TIMEOUT_MS = 90_000;

export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs = START_TIMEOUT_MS,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last === undefined ? '' : `: ${String(last)}`}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export function waitForStatus(
  ctx: ApiContext,
  name: string,
  status: string,
  timeoutMs = START_TIMEOUT_MS,
): Promise<true> {
  return waitFor(
    `${name} to be ${status}`,
    () => {
      const s = ctx.workloads.status(name);
      if (s.status === 'error' && status !== 'error')
        throw new Error(`workload ${name} is in error: ${s.status_context}`);
      return s.status === status ? true : undefined;
    },
    timeoutMs,
  );
}
