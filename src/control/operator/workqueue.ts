/**
 * A controller work queue: keys are deduplicated while waiting, a key is never processed by
 * two workers at once (a key added while in flight is re-queued when it finishes), and
 * failures are retried with per-key exponential backoff.
 */
export interface WorkQueueOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
}

export class WorkQueue {
  readonly #pending: string[] = [];
  readonly #queued = new Set<string>();
  readonly #active = new Set<string>();
  readonly #dirty = new Set<string>();
  readonly #failures = new Map<string, number>();
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #waiters: Array<() => void> = [];
  #closed = false;
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;

  constructor(options: WorkQueueOptions = {}) {
    this.#baseDelayMs = options.baseDelayMs ?? 100;
    this.#maxDelayMs = options.maxDelayMs ?? 60_000;
  }

  add(key: string): void {
    if (this.#closed) return;
    if (this.#active.has(key)) {
      this.#dirty.add(key);
      return;
    }
    if (this.#queued.has(key)) return;
    this.#queued.add(key);
    this.#pending.push(key);
    this.#waiters.shift()?.();
  }

  addAfter(key: string, delayMs: number): void {
    if (this.#closed) return;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      this.add(key);
    }, delayMs);
    timer.unref();
    this.#timers.add(timer);
  }

  /** Re-queues a failed key after `base * 2^failures`, capped. */
  addRateLimited(key: string): number {
    const n = this.#failures.get(key) ?? 0;
    this.#failures.set(key, n + 1);
    const delay = Math.min(this.#maxDelayMs, this.#baseDelayMs * 2 ** n);
    this.addAfter(key, delay);
    return delay;
  }

  forget(key: string): void {
    this.#failures.delete(key);
  }

  /** Resolves with the next key, or undefined once the queue is closed. */
  async next(): Promise<string | undefined> {
    while (!this.#closed) {
      const key = this.#pending.shift();
      if (key !== undefined) {
        this.#queued.delete(key);
        this.#active.add(key);
        return key;
      }
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
    return undefined;
  }

  done(key: string): void {
    this.#active.delete(key);
    if (this.#dirty.delete(key)) this.add(key);
  }

  /**
   * The worker loop of a controller: reconciles keys one at a time until the queue closes; a
   * success forgets the key's failures, a failure re-queues it with backoff (`onFailure` is told
   * when, unless the queue is closing).
   */
  async process(
    reconcile: (key: string) => Promise<void>,
    onFailure: (err: unknown, key: string, retryInMs: number) => void,
  ): Promise<void> {
    for (;;) {
      const key = await this.next();
      if (key === undefined) return;
      try {
        await reconcile(key);
        this.forget(key);
      } catch (err) {
        if (!this.#closed) onFailure(err, key, this.addRateLimited(key));
      } finally {
        this.done(key);
      }
    }
  }

  close(): void {
    this.#closed = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    for (const w of this.#waiters.splice(0)) w();
  }
}
