/**
 * A runner's boot as an ordered list of named steps. Each step starts one thing and may hand
 * back how to close it; the driver starts the steps in order and records each close. When a
 * step fails, the steps already started are closed, newest first, and the failure is thrown
 * naming the step; a close that fails then is logged and never replaces that failure. On
 * shutdown `close()` closes everything the same way.
 */
import { describeError, type ErrorCode, errorCodeOf, type Logger } from '../../shared/index.js';
import { Closers } from './closers.js';

/** Undoes what a step started. */
export type Close = () => Promise<void>;

export interface Step<Context> {
  /** Names the step in errors, and its close in the log line when closing fails. */
  readonly name: string;
  start(ctx: Context): Promise<Close | void>;
}

/**
 * A step that threw: `runner step '<name>' failed: <the error>`, with the error as `cause`.
 * `code` is the cause's (a `SkepError`'s, or a table code another error class carries), else
 * `internal_error`: a cause without one is an unexpected failure, so this class is not a
 * `SkepError` (whose message would be shown as a user error).
 */
export class StepFailedError extends Error {
  override readonly name = 'StepFailedError';
  readonly step: string;
  readonly code: ErrorCode;

  constructor(step: string, cause: unknown) {
    super(`runner step '${step}' failed: ${describeError(cause)}`, { cause });
    this.step = step;
    this.code = errorCodeOf(cause) ?? 'internal_error';
  }
}

export class Steps<Context> {
  readonly #closers: Closers;

  constructor(logger: Logger, workload: string) {
    this.#closers = new Closers(logger, workload);
  }

  /**
   * Starts `steps` in order. When one throws, closes the ones started (newest first) and
   * throws a `StepFailedError` naming it.
   */
  async start(steps: readonly Step<Context>[], ctx: Context): Promise<void> {
    for (const step of steps) {
      let close: Close | void;
      try {
        close = await step.start(ctx);
      } catch (err) {
        await this.#closers.closeAll();
        throw new StepFailedError(step.name, err);
      }
      if (close !== undefined) this.#closers.add(step.name, close);
    }
  }

  /** Closes every started step, newest first; never throws. Calling it again is a no-op. */
  close(): Promise<void> {
    return this.#closers.closeAll();
  }
}
