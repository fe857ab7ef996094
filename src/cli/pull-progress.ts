/**
 * `skep run` of a container image: follows the workload's status while it is `starting`
 * and draws the runner's `pulling image x: NN%` context as a progress bar on stderr, until
 * the workload runs (or fails, which is reported).
 */
import type { ApiContext } from '../api/context.js';

const BAR_WIDTH = 30;

/** `pulling image x: 40%` → a one-line bar; other contexts are shown as they are. */
export function progressLine(context: string): string {
  const match = /^pulling image (.+): (\d+)%$/.exec(context);
  if (match === null) return context;
  const percent = Math.max(0, Math.min(100, Number(match[2])));
  const filled = Math.round((percent / 100) * BAR_WIDTH);
  return `pulling ${match[1]} [${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${percent}%`;
}

export async function followStart(
  ctx: ApiContext,
  name: string,
  out: NodeJS.WriteStream = process.stderr,
  timeoutMs = 10 * 60_000,
): Promise<{ status: string; context: string }> {
  const deadline = Date.now() + timeoutMs;
  let shown = '';
  for (;;) {
    const { status, status_context: context } = ctx.workloads.status(name);
    if (status === 'starting' && context !== '' && context !== shown) {
      shown = context;
      const line = progressLine(context);
      if (out.isTTY) out.write(`\r\x1b[2K${line}`);
      else out.write(`${line}\n`);
    }
    if (status !== 'starting' || Date.now() > deadline) {
      if (shown !== '' && out.isTTY) out.write('\n');
      return { status, context };
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}
