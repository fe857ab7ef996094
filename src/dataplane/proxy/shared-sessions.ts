/**
 * Streamable-HTTP sessions of the transparent proxy, kept in a `SessionStore` (memory, or Redis
 * shared by every proxy of the workload, as in ToolHive), so that a session goes on where the
 * reference's does:
 *
 * - through another proxy of the workload: the server issued the id and knows it, so the
 *   request passes as is; the store tells this proxy the session is one of its workload's;
 * - after the server lost it (restarted, or another replica's server): the server answers 404,
 *   and the proxy re-initializes in the client's place — it replays the stored `initialize`
 *   request (`init_body`) and the `notifications/initialized` notification, records the
 *   server's new id as `backend_sid`, and from then on sends that id upstream while the client
 *   keeps its own (answers carry the client's id back). Once per session at a time: concurrent
 *   404s wait for the same re-initialization, and a proxy that finds another proxy already did
 *   it takes that id instead of starting one more.
 *
 * Each proxy caches what it learnt per session (known or not, the backend id) and reads the
 * store again in the background once the entry is older than a quarter of the TTL (at most a
 * minute): that read restarts the key's TTL (`GETEX`), so a session in use does not expire. A
 * request of a session this proxy has not seen reads the store once.
 *
 * Redis unreachable (decided: degrade, never refuse): the proxy serves what it cached; a
 * session it has not seen passes through unchanged (the server knows it unless it restarted,
 * and then the client gets the server's 404 and initializes again, as without a store); a new
 * session is still served, and its record is written when Redis answers again. Nothing is
 * refused because of Redis, and a WARN (at most one per 30 s) says what was skipped.
 *
 * Only the server behind this proxy is ever contacted: `backend_url` is recorded, but a record
 * naming another server does not send the request there (a Redis value must not choose where
 * the proxy sends the client's credentials); its `backend_sid` is then not used either.
 */
import type { Logger } from '../../shared/index.js';
import {
  SESSION_DEFAULTS,
  SESSION_METADATA,
  type SessionStore,
  type StoredSession,
} from './session-store.js';

/** What this proxy knows of a client's session id. */
export interface SessionRoute {
  /** The store has it: a session initialized through a proxy of this workload. */
  readonly known: boolean;
  /** The server's id for it, when the proxy re-initialized it (else the client's id is the server's). */
  readonly backendSid: string | undefined;
}

interface Cached {
  known: boolean;
  backendSid: string | undefined;
  /** When the store was last read (or written) for it, ms. */
  syncedAt: number;
  /** A record the store refused (Redis away): written again at the next sync. */
  unsaved: StoredSession | undefined;
}

/** Replays `initBody` (and the initialized notification) upstream; resolves the server's new session id. */
export type Reinitialize = (initBody: string) => Promise<string | undefined>;

const UNKNOWN: SessionRoute = Object.freeze({ known: false, backendSid: undefined });
const WARN_INTERVAL_MS = 30_000;

/** A session id in logs: enough to match lines, not enough to use the session. */
function shortId(id: string): string {
  return id.length > 8 ? `${id.slice(0, 8)}…` : id;
}

export class SharedSessions {
  readonly #store: SessionStore;
  readonly #upstreamUrl: string;
  readonly #logger: Logger;
  readonly #maxCached: number;
  readonly #syncMs: number;
  readonly #now: () => number;
  readonly #cache = new Map<string, Cached>();
  readonly #recovering = new Map<string, Promise<string | undefined>>();
  #lastWarnAt = -Infinity;
  #suppressed = 0;

  constructor(
    store: SessionStore,
    options: { upstreamUrl: string; logger: Logger; maxCached: number; now?: () => number },
  ) {
    this.#store = store;
    this.#upstreamUrl = options.upstreamUrl;
    this.#logger = options.logger;
    this.#maxCached = Math.max(1, options.maxCached);
    this.#syncMs = Math.min(60_000, store.ttlMs / 4);
    this.#now = options.now ?? Date.now;
  }

  /** What to send upstream for `sid`. Synchronous when this proxy has seen the session. */
  route(sid: string): SessionRoute | Promise<SessionRoute> {
    const cached = this.#cache.get(sid);
    if (cached === undefined) return this.#lookup(sid);
    if (this.#now() - cached.syncedAt >= this.#syncMs) this.#sync(sid, cached);
    return cached;
  }

  /** The server answered `initialize` with `sid`: records the session (before the client learns the id). */
  async initialized(sid: string, initBody: string | undefined): Promise<void> {
    const now = new Date(this.#now()).toISOString();
    const metadata: Record<string, string> = { [SESSION_METADATA.backendUrl]: this.#upstreamUrl };
    if (initBody !== undefined && Buffer.byteLength(initBody) <= SESSION_DEFAULTS.maxInitBodyBytes)
      metadata[SESSION_METADATA.initBody] = initBody;
    else
      this.#logger.debug(
        { session: shortId(sid) },
        'initialize request too large to keep: this session cannot be re-initialized by the proxy',
      );
    const record: StoredSession = { id: sid, type: 'mcp', created_at: now, updated_at: now, metadata };
    const cached = this.#remember(sid, record);
    try {
      await this.#store.save(record);
    } catch (err) {
      cached.unsaved = record;
      this.#warn(
        err,
        'cannot store a new session; it is served by this proxy and stored when the store answers',
      );
    }
  }

  /** The client ended the session (DELETE): forgotten here and in the store. */
  async ended(sid: string): Promise<void> {
    this.#cache.delete(sid);
    try {
      await this.#store.delete(sid);
    } catch (err) {
      this.#warn(err, 'cannot delete an ended session; the store expires it');
    }
  }

  /**
   * The server answered 404 to `usedSid` for the client's `sid`. Resolves the id to retry with
   * (another proxy's re-initialization, or a new one through `reinit`), or undefined: the
   * session is not the store's, cannot be replayed, or the server refused; the client then
   * gets the 404.
   */
  recover(sid: string, usedSid: string, reinit: Reinitialize): Promise<string | undefined> {
    let pending = this.#recovering.get(sid);
    if (pending === undefined) {
      pending = this.#recover(sid, usedSid, reinit).finally(() => this.#recovering.delete(sid));
      this.#recovering.set(sid, pending);
    }
    return pending;
  }

  async #recover(sid: string, usedSid: string, reinit: Reinitialize): Promise<string | undefined> {
    let record: StoredSession | undefined;
    try {
      record = await this.#store.load(sid);
    } catch (err) {
      record = this.#cache.get(sid)?.unsaved;
      if (record === undefined) {
        this.#warn(err, 'cannot read a session the server no longer knows; the client gets the 404');
        return undefined;
      }
    }
    if (record === undefined) {
      this.#remember(sid, undefined);
      return undefined;
    }
    const current = this.#backendSidOf(record);
    if (current !== undefined && current !== usedSid) {
      // Another proxy (or an earlier request here) re-initialized it already.
      this.#remember(sid, record);
      return current;
    }
    const initBody = record.metadata?.[SESSION_METADATA.initBody];
    if (initBody === undefined) return undefined;
    let renewed: string | undefined;
    try {
      renewed = await reinit(initBody);
    } catch (err) {
      this.#logger.warn({ err, session: shortId(sid) }, 'cannot re-initialize a session the server lost');
      return undefined;
    }
    if (renewed === undefined) return undefined;
    const metadata = Object.assign({}, record.metadata, {
      [SESSION_METADATA.backendUrl]: this.#upstreamUrl,
      [SESSION_METADATA.backendSid]: renewed,
    });
    const updated: StoredSession =
      record.data === undefined
        ? {
            id: record.id,
            type: record.type,
            created_at: record.created_at,
            updated_at: new Date(this.#now()).toISOString(),
            metadata,
          }
        : {
            id: record.id,
            type: record.type,
            created_at: record.created_at,
            updated_at: new Date(this.#now()).toISOString(),
            data: record.data,
            metadata,
          };
    const cached = this.#remember(sid, updated);
    try {
      await this.#store.save(updated);
    } catch (err) {
      cached.unsaved = updated;
      this.#warn(err, 'cannot store a re-initialized session; stored when the store answers');
    }
    this.#logger.info(
      { session: shortId(sid), backendSession: shortId(renewed) },
      'the server had lost this session: re-initialized it from its initialize request',
    );
    return renewed;
  }

  async #lookup(sid: string): Promise<SessionRoute> {
    try {
      return this.#remember(sid, await this.#store.load(sid));
    } catch (err) {
      this.#warn(err, 'cannot read a session; the request goes to the server unchanged');
      return UNKNOWN;
    }
  }

  /** Caches what the store said of `sid` (undefined: not there); the oldest entry goes past the cap. */
  #remember(sid: string, record: StoredSession | undefined): Cached {
    const cached: Cached = {
      known: record !== undefined,
      backendSid: this.#backendSidOf(record),
      syncedAt: this.#now(),
      unsaved: undefined,
    };
    this.#cache.delete(sid);
    this.#cache.set(sid, cached);
    if (this.#cache.size > this.#maxCached) {
      const oldest = this.#cache.keys().next();
      if (oldest.done !== true) this.#cache.delete(oldest.value);
    }
    return cached;
  }

  /** The backend id, if the record's server is this proxy's (an id means nothing to another server). */
  #backendSidOf(record: StoredSession | undefined): string | undefined {
    const metadata = record?.metadata;
    const sid = metadata?.[SESSION_METADATA.backendSid];
    if (sid === undefined || sid === '') return undefined;
    const url = metadata?.[SESSION_METADATA.backendUrl];
    return url === undefined || url === this.#upstreamUrl ? sid : undefined;
  }

  /** In the background: writes a record the store refused, else reads it (restarting its TTL). */
  #sync(sid: string, cached: Cached): void {
    cached.syncedAt = this.#now();
    const unsaved = cached.unsaved;
    if (unsaved !== undefined) {
      this.#store.save(unsaved).then(
        () => {
          if (cached.unsaved === unsaved) cached.unsaved = undefined;
        },
        (err: unknown) => this.#warn(err, 'cannot store a session yet'),
      );
      return;
    }
    this.#store.load(sid).then(
      (record) => {
        if (this.#cache.get(sid) !== cached) return;
        cached.known = record !== undefined;
        cached.backendSid = this.#backendSidOf(record);
      },
      (err: unknown) => this.#warn(err, 'cannot refresh a session; its cached state is used'),
    );
  }

  #warn(err: unknown, message: string): void {
    const now = this.#now();
    if (now - this.#lastWarnAt < WARN_INTERVAL_MS) {
      this.#suppressed++;
      return;
    }
    this.#lastWarnAt = now;
    const suppressed = this.#suppressed;
    this.#suppressed = 0;
    this.#logger.warn(
      { err: err instanceof Error ? err.message : String(err), store: this.#store.kind, suppressed },
      `session store: ${message}`,
    );
  }
}
