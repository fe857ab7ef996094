/** Polling helpers for container tests (kept here so these tests do not depend on other suites' helpers). */
import type { ApiContext } from '../../../src/api/context.js';

export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last === undefined ? '' : `: ${String(last)}`}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export function waitForStatus(
  ctx: ApiContext,
  name: string,
  status: string,
  timeoutMs: number,
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
