/**
 * The run loop every controller of the operator shares: informers (`informer.ts`) feed a work
 * queue (`workqueue.ts`); `start` waits for each informer's first list, then one worker
 * reconciles the queued keys (a failure is logged and retried with the queue's backoff);
 * `close` stops the informers and the queue and waits for the worker to finish.
 */
import type { Logger } from '../../shared/index.js';
import { Informer, type InformerOptions } from './informer.js';
import type { KubeClient, ResourceType } from './kube.js';
import { WorkQueue } from './workqueue.js';

export interface ControllerLoopOptions {
  kube: KubeClient;
  logger: Logger;
  /** Watch one namespace only; all namespaces when omitted. */
  namespace?: string | undefined;
  /** First delay before re-listing after a watch fails or expires (410); doubles per failure. */
  relistDelayMs?: number | undefined;
  /** First retry delay of a failed reconcile; doubles per failure of the same key. */
  retryDelayMs: number;
  reconcile(key: string): Promise<void>;
}

export class ControllerLoop {
  readonly queue: WorkQueue;
  readonly #o: ControllerLoopOptions;
  readonly #informers: Informer[] = [];
  #worker: Promise<void> | undefined;
  #closed = false;

  constructor(options: ControllerLoopOptions) {
    this.#o = options;
    this.queue = new WorkQueue({ baseDelayMs: options.retryDelayMs });
  }

  /**
   * Watches one resource type from `start` on. `optional`: a type whose CRD is not installed
   * (the list answers 404) counts as empty and is re-listed with backoff.
   */
  watch(name: string, type: ResourceType, onEvent: InformerOptions['onEvent'], optional: boolean): void {
    const { kube, logger, namespace } = this.#o;
    this.#informers.push(
      new Informer(
        Object.assign(
          { kube, type, logger, name, onEvent, optional, backoffBaseMs: this.#o.relistDelayMs ?? 1000 },
          namespace === undefined ? {} : { namespace },
        ),
      ),
    );
  }

  /** Starts the informers, waits for their first list, then starts the worker. */
  async start(): Promise<void> {
    await Promise.all(this.#informers.map((i) => i.start()));
    this.#worker = this.queue.process(
      (key) => this.#o.reconcile(key),
      (err, key, retryInMs) =>
        this.#o.logger.warn(
          { err: err instanceof Error ? err.message : String(err), key, retryInMs },
          'reconcile failed',
        ),
    );
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all(this.#informers.map((i) => i.close()));
    this.queue.close();
    await this.#worker;
  }

  /** True once every informer has completed its first list (for readiness probes). */
  get hasSynced(): boolean {
    return this.#informers.length > 0 && this.#informers.every((i) => i.synced);
  }
}
