/**
 * What a runner has started, torn down in one place: newest first (the proxy before the auth
 * chain it calls, the chain before the authorization server it trusts), every closer run even
 * when an earlier one failed, and each failure logged with its error.
 */
import type { Logger } from '../../shared/index.js';

export class Closers {
  readonly #list: { what: string; close: () => void | Promise<void> }[] = [];
  readonly #logger: Logger;
  readonly #workload: string;

  constructor(logger: Logger, workload: string) {
    this.#logger = logger;
    this.#workload = workload;
  }

  /** Registers `close`, named `what` in the log line when it fails. */
  add(what: string, close: () => void | Promise<void>): void {
    this.#list.push({ what, close });
  }

  /** Runs and forgets every closer, newest first; never throws. Calling it again is a no-op. */
  async closeAll(): Promise<void> {
    for (let next = this.#list.pop(); next !== undefined; next = this.#list.pop()) {
      try {
        await next.close();
      } catch (err) {
        this.#logger.warn({ workload: this.#workload, err }, `closing the ${next.what} failed`);
      }
    }
  }
}
