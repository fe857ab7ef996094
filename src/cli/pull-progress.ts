/**
 * `skep run` of a container image or a remote server: follows the workload's status while it
 * is `starting` and shows the runner's context on stderr (`pulling image x: NN%` as a
 * progress bar), until the workload runs, fails, or (remote) waits for the user to log in.
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

export interface FollowOptions {
  /** Give up waiting after this long, ms (default 10 min). */
  timeoutMs?: number;
  /** Stop early, without drawing it, at a status context this accepts. */
  stopAt?: (context: string) => boolean;
}

export async function followStart(
  ctx: ApiContext,
  name: string,
  out: NodeJS.WriteStream = process.stderr,
  options: FollowOptions = {},
): Promise<{ status: string; context: string }> {
  const deadline = Date.now() + (options.timeoutMs ?? 10 * 60_000);
  let shown = '';
  for (;;) {
    const { status, status_context: context } = ctx.workloads.status(name);
    const stop = status === 'starting' && options.stopAt?.(context) === true;
    if (status === 'starting' && context !== '' && context !== shown && !stop) {
      shown = context;
      const line = progressLine(context);
      if (out.isTTY) out.write(`\r\x1b[2K${line}`);
      else out.write(`${line}\n`);
    }
    if (status !== 'starting' || stop || Date.now() > deadline) {
      if (shown !== '' && out.isTTY) out.write('\n');
      return { status, context };
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}
