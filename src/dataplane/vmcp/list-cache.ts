/**
 * The capability lists (tools, prompts, resources, templates) of each backend, shared by all client
 * sessions of one virtual MCP server, so that a `tools/list` "once warm" — including the first one
 * of a new session — aggregates cached lists instead of opening a session at every backend and
 * listing it (the reference, ToolHive, caches the aggregated view per identity for 30 s).
 *
 * - Filled on first use. One load per (backend, URL, viewer) at a time: concurrent sessions
 *   share it.
 * - Keyed by backend name, URL and *viewer*: when outgoing auth carries the caller's identity,
 *   a backend may list different things per caller (its own authorization filters lists), so
 *   each caller (subject, else token) has its own entry; without it every session reaches the
 *   backend as the same client and shares one entry.
 * - Invalidated (every viewer's entry of that backend) when a backend sends
 *   `notifications/{tools,prompts,resources}/list_changed` to any session, when a backend
 *   forgot a session (it restarted), and pruned when the served set changes (a backend that
 *   left, or moved to another URL). Every session is told, once per turn of the event loop,
 *   so that those whose client has seen lists recompute them and announce what changed.
 * - Bounded size (`LIST_CACHE_MAX_ENTRIES`, oldest first out), for the per-caller entries.
 * - Bounded age (`maxAgeMs`, 30 s like the reference's `capabilityCacheTTL`): an older entry
 *   is reloaded on next use, so a backend that changes its lists without announcing it is
 *   seen within that time.
 *
 * Per-session filtering (visibility, authorization of lists) applies on top, in the session
 * and the pipeline; nothing here depends on the session.
 *
 * Difference (on purpose, also in the reference): a backend whose lists differ per backend
 * session (per-session state, not per caller) shows the lists of whichever session loaded them.
 */
import type { BackendLists } from './aggregate.js';

export const LIST_CACHE_MAX_AGE_MS = 30_000;
/** Most entries kept (the reference's LRU holds 1024): beyond it the oldest is dropped. */
export const LIST_CACHE_MAX_ENTRIES = 1024;

interface Entry {
  readonly backend: string;
  readonly url: string;
  lists: BackendLists | undefined;
  loading: Promise<BackendLists> | undefined;
  /** `performance.now()` when `lists` was loaded. */
  at: number;
}

export class ListCache {
  readonly maxAgeMs: number;
  readonly #entries = new Map<string, Entry>();
  readonly #listeners = new Set<(backends: readonly string[]) => void>();
  /** Backends invalidated since the listeners were last told. */
  readonly #dirty = new Set<string>();
  #telling = false;
  /** Loads started (a miss), for tests and diagnostics. */
  loads = 0;

  constructor(maxAgeMs = LIST_CACHE_MAX_AGE_MS) {
    this.maxAgeMs = maxAgeMs;
  }

  /** The backend's lists as `viewer` sees them: cached and fresh, being loaded, or loaded now. */
  get(
    backend: string,
    url: string,
    viewer: string,
    load: () => Promise<BackendLists>,
  ): BackendLists | Promise<BackendLists> {
    const key = `${backend}\u0000${url}\u0000${viewer}`;
    let entry = this.#entries.get(key);
    if (entry !== undefined) {
      if (entry.lists !== undefined && performance.now() - entry.at < this.maxAgeMs) return entry.lists;
      if (entry.loading !== undefined) return entry.loading;
    } else {
      entry = { backend, url, lists: undefined, loading: undefined, at: 0 };
      if (this.#entries.size >= LIST_CACHE_MAX_ENTRIES) {
        const oldest = this.#entries.keys().next();
        if (oldest.done !== true) this.#entries.delete(oldest.value);
      }
      this.#entries.set(key, entry);
    }
    const current = entry;
    this.loads++;
    const loading = load();
    current.loading = loading;
    loading.then(
      (lists) => {
        // An invalidation while loading dropped this entry: the result may predate the change.
        if (current.loading !== loading) return;
        current.loading = undefined;
        if (this.#entries.get(key) !== current) return;
        current.lists = lists;
        current.at = performance.now();
      },
      () => {
        if (current.loading !== loading) return;
        current.loading = undefined;
        if (this.#entries.get(key) === current && current.lists === undefined) this.#entries.delete(key);
      },
    );
    return loading;
  }

  /** The backend's lists changed: drop every viewer's entry and tell the sessions. */
  invalidate(backend: string): void {
    for (const [key, e] of this.#entries) {
      if (e.backend !== backend) continue;
      e.loading = undefined;
      this.#entries.delete(key);
    }
    this.#tell(backend);
  }

  /** Keeps only the entries of `served` backends at their current URL. */
  prune(served: readonly { name: string; url: string }[]): void {
    if (this.#entries.size === 0) return;
    const urls = new Map<string, string>();
    for (const b of served) urls.set(b.name, b.url);
    for (const [key, e] of this.#entries) {
      if (urls.get(e.backend) === e.url) continue;
      e.loading = undefined;
      this.#entries.delete(key);
    }
  }

  /** `listener(backends)` after invalidations; returns the unsubscribe function. */
  subscribe(listener: (backends: readonly string[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  get size(): number {
    return this.#entries.size;
  }

  /**
   * Each backend session of a shared backend may report the same change: the sessions are
   * told once per turn of the event loop, not once per report.
   */
  #tell(backend: string): void {
    this.#dirty.add(backend);
    if (this.#telling) return;
    this.#telling = true;
    setImmediate(() => {
      this.#telling = false;
      const backends = [...this.#dirty];
      this.#dirty.clear();
      for (const listener of [...this.#listeners]) listener(backends);
    });
  }
}
