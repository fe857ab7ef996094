/**
 * One informer per watched resource type, shared by the operator's controllers: list, then
 * watch from the list's resourceVersion, keeping a store of the last known objects.
 *
 * A Kubernetes watch ends routinely (the API server's request timeout, a proxy, a restart)
 * and a watch from a resourceVersion the server no longer keeps answers 410 Gone (as an
 * `ERROR` event carrying a `Status` with code 410, or as the HTTP status). Like client-go's
 * reflector:
 *  - a watch that ends cleanly is resumed from the last resourceVersion seen (events are not
 *    lost and nothing is re-read);
 *  - a 410, a failed watch or a failed list re-lists after a capped exponential backoff, and
 *    the new list is compared with the store: what appeared is delivered as `ADDED`, what
 *    changed (another resourceVersion) as `MODIFIED`, and what disappeared while no watch ran
 *    as `DELETED` with its last known state — so a deletion is never missed.
 * The backoff resets once a watch delivers an event; a watch that ends at once without one
 * counts as a failure, so a server that closes every watch cannot make this loop spin.
 */
import { type Logger, sleepUnlessAborted } from '../../shared/index.js';
import { type KubeClient, type KubeObject, type ResourceType, statusOf } from './kube.js';

export type InformerEvent = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface InformerOptions {
  kube: KubeClient;
  type: ResourceType;
  /** One namespace, or all when omitted. */
  namespace?: string;
  logger: Logger;
  /** Named in logs. */
  name: string;
  /** Every change, in order; `DELETED` carries the last known state. */
  onEvent(type: InformerEvent, obj: KubeObject): void;
  /** A list answering 404 (the CRD is not installed) counts as an empty, synced list; re-listed with backoff. */
  optional?: boolean;
  /** First delay before a re-list after a failure or a 410, ms; doubles per consecutive failure. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
}

type WatchOutcome = 'closed' | 'ended' | 'expired' | 'failed';

const keyOf = (o: KubeObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

export class Informer {
  readonly #o: InformerOptions;
  readonly #store = new Map<string, KubeObject>();
  readonly #abort = new AbortController();
  #stopWatch: (() => void) | undefined;
  #synced = false;
  #failures = 0;
  #loop: Promise<void> | undefined;

  constructor(options: InformerOptions) {
    this.#o = options;
  }

  /** Starts the list/watch loop; resolves after the first successful list (its items delivered). */
  start(): Promise<void> {
    return new Promise<void>((firstSynced) => {
      this.#loop = this.#run(firstSynced);
    });
  }

  /** Stops watching; idempotent. */
  async close(): Promise<void> {
    this.#abort.abort();
    this.#stopWatch?.();
    await this.#loop;
  }

  /** True once a list has succeeded (for readiness). */
  get synced(): boolean {
    return this.#synced;
  }

  async #run(firstSynced: () => void): Promise<void> {
    try {
      await this.#listAndWatch(firstSynced);
    } finally {
      firstSynced(); // closed before the first list: `start` does not wait forever
    }
  }

  async #listAndWatch(firstSynced: () => void): Promise<void> {
    const { logger, name } = this.#o;
    const signal = this.#abort.signal;
    while (!signal.aborted) {
      let resourceVersion: string;
      try {
        resourceVersion = await this.#relist();
      } catch (err) {
        if (signal.aborted) break;
        if (this.#o.optional === true && statusOf(err) === 404) {
          // The CRD is not installed: nothing of this kind exists (any we knew are gone).
          this.#replace([]);
          this.#synced = true;
          firstSynced();
        } else {
          logger.warn({ err, informer: name }, 'list failed; retrying');
        }
        await this.#backoff();
        continue;
      }
      this.#synced = true;
      firstSynced();
      // Watch, resuming after clean ends, until the watch fails or its resourceVersion expires.
      for (;;) {
        const { outcome, lastResourceVersion } = await this.#watch(resourceVersion);
        resourceVersion = lastResourceVersion;
        if (outcome === 'closed' || signal.aborted) return;
        if (outcome === 'ended') {
          // An immediate end without events is backed off; otherwise resume at once.
          if (this.#failures > 0) await sleepUnlessAborted(this.#delay(), signal);
          continue;
        }
        logger.debug(
          { informer: name, outcome },
          outcome === 'expired' ? 'watch expired (410 Gone); re-listing' : 'watch failed; re-listing',
        );
        await this.#backoff();
        break;
      }
    }
  }

  /** Lists, delivers the differences to the store, and returns the list's resourceVersion. */
  async #relist(): Promise<string> {
    const signal = this.#abort.signal;
    // `close` does not wait for a list the API server is slow to answer (it cannot be aborted).
    let onAbort = () => {};
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(new Error('informer closed'));
      signal.addEventListener('abort', onAbort, { once: true });
    });
    let listed: Awaited<ReturnType<KubeClient['list']>>;
    try {
      listed = await Promise.race([this.#o.kube.list(this.#o.type, this.#o.namespace), aborted]);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
    const { items, resourceVersion } = listed;
    if (signal.aborted) return resourceVersion;
    this.#replace(items);
    return resourceVersion;
  }

  #replace(items: KubeObject[]): void {
    const seen = new Set<string>();
    for (const item of items) {
      if (item?.metadata?.name === undefined) continue;
      const key = keyOf(item);
      seen.add(key);
      const before = this.#store.get(key);
      this.#store.set(key, item);
      if (before === undefined) this.#o.onEvent('ADDED', item);
      else if (before.metadata.resourceVersion !== item.metadata.resourceVersion)
        this.#o.onEvent('MODIFIED', item);
    }
    for (const [key, gone] of [...this.#store]) {
      if (seen.has(key)) continue;
      this.#store.delete(key);
      this.#o.onEvent('DELETED', gone);
    }
  }

  /** One watch from `resourceVersion`, until it ends; applies its events to the store. */
  #watch(resourceVersion: string): Promise<{ outcome: WatchOutcome; lastResourceVersion: string }> {
    const signal = this.#abort.signal;
    let last = resourceVersion;
    let delivered = 0;
    const startedAt = performance.now();
    return new Promise((resolve) => {
      let finished = false;
      const finish = (outcome: WatchOutcome) => {
        if (finished) return;
        finished = true;
        signal.removeEventListener('abort', onAbort);
        this.#stopWatch?.();
        this.#stopWatch = undefined;
        // A watch that delivered events, or lasted a while, worked: the backoff starts over.
        if (delivered > 0 || performance.now() - startedAt >= (this.#o.backoffMaxMs ?? 30_000))
          this.#failures = 0;
        else if (outcome === 'ended') this.#failures++;
        resolve({ outcome, lastResourceVersion: last });
      };
      const onAbort = () => finish('closed');
      signal.addEventListener('abort', onAbort, { once: true });
      const onEvent = (type: string, obj: KubeObject) => {
        if (finished) return;
        if (type === 'ERROR') {
          // A Status object: 410 Gone means the resourceVersion is too old to watch from.
          const code = (obj as unknown as { code?: unknown } | null)?.code;
          if (code !== 410)
            this.#o.logger.debug({ status: obj, informer: this.#o.name }, 'watch error event');
          return finish(code === 410 ? 'expired' : 'failed');
        }
        const rv = obj?.metadata?.resourceVersion;
        if (rv !== undefined) last = rv;
        if (type === 'BOOKMARK' || obj?.metadata?.name === undefined) return;
        if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') return;
        delivered++;
        if (type === 'DELETED') this.#store.delete(keyOf(obj));
        else this.#store.set(keyOf(obj), obj);
        this.#o.onEvent(type, obj);
      };
      const done = (err: unknown) => {
        if (signal.aborted) return finish('closed');
        if (statusOf(err) === 410) return finish('expired');
        if (err !== null && err !== undefined) {
          this.#o.logger.debug({ err, informer: this.#o.name }, 'watch ended with an error');
          return finish('failed');
        }
        finish('ended');
      };
      this.#o.kube
        .watch(this.#o.type, resourceVersion, this.#o.namespace, onEvent, done)
        .then((stop) => {
          if (finished) stop();
          else this.#stopWatch = stop;
        })
        .catch((err: unknown) => {
          if (!signal.aborted) this.#o.logger.debug({ err, informer: this.#o.name }, 'watch failed to start');
          finish(signal.aborted ? 'closed' : 'failed');
        });
    });
  }

  #delay(): number {
    const base = this.#o.backoffBaseMs ?? 1000;
    return Math.min(this.#o.backoffMaxMs ?? 30_000, base * 2 ** Math.max(0, this.#failures - 1));
  }

  async #backoff(): Promise<void> {
    this.#failures++;
    await sleepUnlessAborted(this.#delay(), this.#abort.signal);
  }
}
