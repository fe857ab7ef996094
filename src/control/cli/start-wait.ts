/**
 * `skep run` and `skep restart` wait for a workload the same way: until its server answers
 * (status `running`), clearly fails (status `error`, or the runner's first failed attempt:
 * a server that never worked is not retried for minutes), asks the user to log in (a remote
 * server's OAuth), or a bound passes. Meanwhile stderr shows progress: a live line on a
 * terminal (with the runner's context, e.g. an image pull's bar), plain lines otherwise
 * once the wait gets slow.
 */
import type { ApiContext } from '../app/index.js';
import { terminalSafe } from '../../shared/index.js';
import { AUTHORIZATION_PENDING, type RunConfig, tailFile } from '../../workloads/index.js';
import { progressLine } from './pull-progress.js';
import { explainStartFailure, isFailedAttempt, type StartFailure } from './start-failure.js';

export type StartOutcome =
  | { kind: 'running' }
  | { kind: 'authorization'; url: string }
  | { kind: 'failed'; failure: StartFailure; context: string }
  | { kind: 'timeout'; context: string };

/** How long to wait by default, ms: an image may need a pull, npx a download. */
export function defaultWaitMs(config: RunConfig): number {
  if (config.remote_url !== undefined) return 60_000;
  if (config.image !== '' && !/^[a-z]+:\/\//.test(config.image)) return 600_000;
  return 120_000;
}

export interface WaitOptions {
  timeoutMs: number;
  /** Where progress goes (stderr). */
  out: NodeJS.WriteStream;
  /** Without a terminal, the first progress line comes after this long, ms. */
  slowAfterMs?: number;
  /** Poll interval, ms. */
  pollMs?: number;
}

/** Non-terminal output: a line when slow, then every 30 s, and each new runner context. */
const REPEAT_SLOW_MS = 30_000;

export async function waitForStart(
  ctx: ApiContext,
  name: string,
  options: WaitOptions,
): Promise<StartOutcome> {
  const { out } = options;
  const started = Date.now();
  const deadline = started + options.timeoutMs;
  const slowAfter = options.slowAfterMs ?? 5_000;
  let nextSlowNote = started + slowAfter;
  let shownContext = '';
  let shownLive = '';
  let liveLine = false;
  const remote = ctx.workloads.exportConfig(name).remote_url !== undefined;
  const clearLive = () => {
    if (liveLine) out.write('\r\x1b[2K');
    liveLine = false;
  };
  try {
    for (;;) {
      const { status, status_context: context } = ctx.workloads.status(name);
      if (status === 'running') return { kind: 'running' };
      if (context.startsWith(AUTHORIZATION_PENDING))
        return { kind: 'authorization', url: context.slice(AUTHORIZATION_PENDING.length) };
      if (status === 'error' || status === 'unhealthy' || (status === 'starting' && isFailedAttempt(context)))
        return { kind: 'failed', failure: explainFailure(ctx, name, context, remote), context };
      if (status !== 'starting')
        return {
          kind: 'failed',
          failure: {
            summary: `it is ${status} now (stopped or removed while it was starting)`,
            evidence: [],
            hint: undefined,
          },
          context,
        };
      const now = Date.now();
      if (now > deadline) return { kind: 'timeout', context };
      const seconds = Math.floor((now - started) / 1000);
      if (out.isTTY) {
        // The context may quote the server; only Skep's own line control reaches the terminal.
        const detail =
          context === ''
            ? 'waiting for the server to answer'
            : terminalSafe(progressLine(context).replace(/\s*\n\s*/g, ' '));
        const live = `starting ${name} (${seconds}s): ${detail}`;
        if (live !== shownLive) out.write(`\r\x1b[2K${live}`);
        shownLive = live;
        liveLine = true;
      } else if (context !== '' && context !== shownContext) {
        shownContext = context;
        out.write(`${name}: ${terminalSafe(progressLine(context))}\n`);
        nextSlowNote = now + REPEAT_SLOW_MS;
      } else if (now >= nextSlowNote) {
        out.write(`${name}: still starting after ${seconds}s (waiting for the server to answer)\n`);
        nextSlowNote = now + REPEAT_SLOW_MS;
      }
      await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 250));
    }
  } finally {
    clearLive();
  }
}

function explainFailure(ctx: ApiContext, name: string, context: string, remote: boolean): StartFailure {
  const log = remote ? '' : tailFile(ctx.workloads.logFile(name, 'server'), 200);
  return explainStartFailure(context, log, remote);
}

/**
 * What became of a workload whose start failed: removed (a new workload, the default), kept
 * with status error (`--keep-on-failure`, or a restart of one that never worked), or left to its
 * runner's retries (it ran before).
 */
export type AfterFailure = 'removed' | 'kept' | 'retrying';

/** The lines after `failed to start: <summary>`: the evidence, the hint, and what now. */
export function failureDetails(
  name: string,
  failure: StartFailure,
  after: AfterFailure,
  remote: boolean,
): string {
  const lines: string[] = [];
  // A remote server has no log here; the proxy's log has what the runner saw.
  const logs = remote ? `skep logs --proxy ${name}` : `skep logs ${name}`;
  if (failure.evidence.length > 0) {
    lines.push("  the server's log ends with:");
    for (const line of failure.evidence) lines.push(`    ${line}`);
  }
  if (failure.hint !== undefined) lines.push(`  ${failure.hint}`);
  lines.push(
    after === 'removed'
      ? `  nothing was kept: ${name} was removed; fix the cause and run it again (--keep-on-failure keeps a failed workload for '${logs}')`
      : after === 'kept'
        ? `  ${name} is stopped with status error; fix the cause, then 'skep restart ${name}', or remove it with 'skep rm ${name}' (its log: '${logs}')`
        : `  it ran before, so its runner keeps trying; '${logs}' shows the log, 'skep stop ${name}' stops it`,
  );
  return lines.join('\n');
}
