/**
 * One informer per watched resource type, shared by the operator's controllers: client-node's
 * `ListWatch` (what its `makeInformer` builds) lists, then watches from the list's
 * resourceVersion, keeps the store of the last known objects and diffs a re-list against it:
 *  - a watch that ends cleanly is resumed from the last resourceVersion seen (events are not
 *    lost and nothing is re-read);
 *  - a 410 Gone (an `ERROR` event carrying a `Status` with code 410, or the HTTP status of the
 *    watch request) re-lists, and the new list is compared with the store: what appeared is
 *    delivered as `ADDED`, what changed (another resourceVersion) as `MODIFIED`, and what
 *    disappeared while no watch ran as `DELETED` with its last known state.
 *
 * `ListWatch` stops at any other error and resumes a clean end at once; this module adds only
 * what it lacks, as client-go's reflector does it:
 *  - a failed list or watch is retried after a capped exponential backoff, and a watch that ends
 *    at once without an event counts as a failure too, so a server that closes every watch
 *    cannot make the loop spin (the backoff resets once a watch delivers an event);
 *  - `optional`: a list answering 404 (the CRD is not installed) counts as an empty, synced list
 *    — so whatever was known is delivered as `DELETED` — and is listed again with the backoff.
 */
import { KubeConfig, type KubernetesObject, ListWatch, Watch } from '@kubernetes/client-node';
import { type Logger, sleepUnlessAborted } from '../../shared/index.js';
import { isKubeObject, type KubeClient, type KubeObject, type ResourceType, statusOf } from './kube.js';

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
  /** First delay before a retry after a failure; doubles per consecutive failure. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
}

/** What `ListWatch` keeps of an object: every `KubeObject` is one. */
type Listed = Pick<KubernetesObject, 'apiVersion' | 'kind'> & {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
};

/** The watch callbacks `ListWatch` hands to `Watch.watch`. */
type WatchCallback = Parameters<Watch['watch']>[2];
type DoneCallback = Parameters<Watch['watch']>[3];

/** The objects of this path: for `ListWatch`'s bookkeeping and the logs (the client builds the URL). */
function pathOf(type: ResourceType, namespace: string | undefined): string {
  const ns = namespace === undefined ? '' : `/namespaces/${namespace}`;
  return `/apis/${type.group}/${type.version}${ns}/${type.plural}`;
}

export class Informer {
  readonly #o: InformerOptions;
  readonly #abort = new AbortController();
  readonly #listWatch: ListWatch<Listed>;
  #synced = false;
  /** The last list succeeded (or answered 404 for an optional type). */
  #listed = false;
  /** The last list answered 404 for an optional type: there is nothing to watch. */
  #absent = false;
  #failures = 0;
  #firstSynced: () => void = () => {};
  #retrying = false;

  constructor(options: InformerOptions) {
    this.#o = options;
    this.#listWatch = new ListWatch<Listed>(
      pathOf(options.type, options.namespace),
      new BackoffWatch({
        open: (resourceVersion, callback, done) =>
          options.kube.watch(options.type, resourceVersion, options.namespace, callback, done),
        worked: () => {
          this.#failures = 0;
        },
        endedEmpty: () => {
          this.#failures++;
          return this.#delay();
        },
        starting: () => this.#watchStarting(),
        signal: this.#abort.signal,
        maxDelayMs: options.backoffMaxMs ?? 30_000,
      }),
      () => this.#list(),
      false,
    );
    const deliver = (type: InformerEvent) => (obj: Listed) => {
      if (!this.#abort.signal.aborted && isKubeObject(obj)) options.onEvent(type, obj);
    };
    this.#listWatch.on('add', deliver('ADDED'));
    this.#listWatch.on('update', deliver('MODIFIED'));
    this.#listWatch.on('delete', deliver('DELETED'));
    this.#listWatch.on('error', (err: unknown) => this.#failed(err));
  }

  /** Starts listing and watching; resolves after the first successful list (its items delivered). */
  start(): Promise<void> {
    return new Promise<void>((firstSynced) => {
      this.#firstSynced = firstSynced;
      void this.#connect();
    });
  }

  /** Stops watching; idempotent. A list the API server is slow to answer is not waited for. */
  async close(): Promise<void> {
    if (this.#abort.signal.aborted) return;
    this.#abort.abort();
    await this.#listWatch.stop();
    this.#firstSynced(); // closed before the first list: `start` does not wait forever
  }

  /** True once a list has succeeded (for readiness). */
  get synced(): boolean {
    return this.#synced;
  }

  /** `ListWatch.start`: lists unless it holds a resourceVersion to watch from, then watches. */
  async #connect(): Promise<void> {
    this.#listed = false;
    await this.#listWatch.start();
  }

  /**
   * `ListWatch` opens its watch right after it delivered a list's items: the informer is synced
   * then (not once the watch answers, which a server may hold until its first event).
   */
  #watchStarting(): boolean {
    if (this.#listed && !this.#abort.signal.aborted) {
      this.#synced = true;
      this.#firstSynced();
    }
    return !this.#absent;
  }

  async #list(): Promise<{ items: Listed[]; metadata: { resourceVersion: string } }> {
    const { kube, type, namespace, logger, name } = this.#o;
    const signal = this.#abort.signal;
    // `close` does not wait for a list the API server is slow to answer (it cannot be aborted).
    let onAbort = () => {};
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(new Error('informer closed'));
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const { items, resourceVersion } = await Promise.race([kube.list(type, namespace), aborted]);
      this.#listed = true;
      this.#absent = false;
      return { items, metadata: { resourceVersion } };
    } catch (err) {
      if (this.#o.optional === true && statusOf(err) === 404) {
        // The CRD is not installed: nothing of this kind exists (any we knew are gone). No watch
        // follows (one from "now" would miss what is created before it starts): the informer
        // lists again after the backoff.
        this.#listed = true;
        this.#absent = true;
        return { items: [], metadata: { resourceVersion: '' } };
      }
      if (!signal.aborted) logger.warn({ err, informer: name }, 'list failed; retrying');
      throw err;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  /** A list or watch failed (`ListWatch` stops): start again after the backoff. */
  #failed(err: unknown): void {
    const signal = this.#abort.signal;
    if (signal.aborted || this.#retrying) return;
    this.#retrying = true;
    this.#o.logger.debug({ err, informer: this.#o.name }, 'list or watch failed; retrying');
    this.#failures++;
    void sleepUnlessAborted(this.#delay(), signal).then(() => {
      this.#retrying = false;
      if (!signal.aborted) void this.#connect();
    });
  }

  #delay(): number {
    const base = this.#o.backoffBaseMs ?? 1000;
    return Math.min(this.#o.backoffMaxMs ?? 30_000, base * 2 ** Math.max(0, this.#failures - 1));
  }
}

/** What a `BackoffWatch` needs of its informer. */
interface WatchBackoff {
  /** One watch from `resourceVersion`; resolves to its stopper. */
  open(resourceVersion: string, callback: WatchCallback, done: DoneCallback): Promise<() => void>;
  /** A watch delivered an event, or lasted a while: the backoff starts over. */
  worked(): void;
  /** A watch ended at once without an event: a failure; returns the wait before the next watch. */
  endedEmpty(): number;
  /** `ListWatch` is about to watch (after delivering a list, if it listed); false: do not. */
  starting(): boolean;
  /** The informer closed. */
  signal: AbortSignal;
  maxDelayMs: number;
}

/**
 * The `Watch` given to `ListWatch`: the informer's `KubeClient.watch` (client-node's `Watch`,
 * with bookmarks and the type's label selector), and the backoff of watches that end at once
 * without an event: their clean end reaches `ListWatch`, which resumes at once, only after the
 * backoff delay. `done` is never called before `watch` has returned (`ListWatch` keeps the
 * returned controller to stop the watch, and would otherwise keep a finished one).
 */
class BackoffWatch extends Watch {
  readonly #b: WatchBackoff;

  constructor(backoff: WatchBackoff) {
    // `Watch`'s own request code (and so its configuration) is unused: watches go through the
    // informer's KubeClient.
    super(new KubeConfig());
    this.#b = backoff;
  }

  override async watch(
    _path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: WatchCallback,
    done: DoneCallback,
  ): Promise<AbortController> {
    const b = this.#b;
    const controller = new AbortController();
    const startedAt = performance.now();
    let delivered = 0;
    let returned = false;
    let pending: (() => void) | undefined;
    const finish = (err: unknown) => {
      // `ListWatch` aborted this watch itself (it stopped, or moved on): it wants no callback.
      if (controller.signal.aborted) return;
      const call = () => {
        if (!controller.signal.aborted) done(err);
      };
      if (err !== null && err !== undefined) return call();
      if (delivered > 0 || performance.now() - startedAt >= b.maxDelayMs) {
        b.worked();
        return call();
      }
      void sleepUnlessAborted(b.endedEmpty(), b.signal).then(call);
    };
    const onDone = (err: unknown) => {
      if (returned) finish(err);
      else pending = () => finish(err);
    };
    const onEvent: WatchCallback = (phase, obj, watchObj) => {
      if (phase === 'ADDED' || phase === 'MODIFIED' || phase === 'DELETED') {
        delivered++;
        b.worked();
      }
      callback(phase, obj, watchObj);
    };
    try {
      if (!b.starting()) throw new Error('the resource type is not installed');
      const stop = await b.open(String(queryParams['resourceVersion'] ?? ''), onEvent, onDone);
      controller.signal.addEventListener('abort', stop, { once: true });
    } catch (err) {
      pending = () => finish(err);
    }
    returned = true;
    if (pending !== undefined) setImmediate(pending);
    return controller;
  }
}
