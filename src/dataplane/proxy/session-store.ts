/**
 * Where the transparent proxy keeps the MCP sessions it has seen initialized (as ToolHive's proxy
 * does): in this process's memory, or with `scaling_config.session_redis` in Redis, shared by every
 * proxy of the workload. A record is the reference's JSON `{id, type, created_at, updated_at,
 * data?, metadata?}` under `<key_prefix><session id>`, written with `SET … EX <ttl>` and read with
 * `GETEX` (each read restarts the TTL: a session lives while it is used), deleted with `DEL` when
 * the client ends the session. Redis expires the keys; the memory store drops expired ones as it
 * goes and keeps at most `SESSION_DEFAULTS.memoryMaxBytes` of records (oldest out first).
 *
 * The transparent proxy's metadata (`shared-sessions.ts`): `backend_url`, the server that
 * answered `initialize`; `init_body`, that raw request, replayed to re-initialize a server
 * that lost the session; `backend_sid`, the server's session id after such a re-initialization.
 */
import { sessionRedisPassword, SkepError } from '../../shared/index.js';

/** The reference's session types; transparent-proxy sessions are `mcp` (its `NewProxySession`). */
export type StoredSessionType = 'mcp' | 'sse' | 'streamable';

export interface StoredSession {
  readonly id: string;
  readonly type: StoredSessionType;
  /** RFC 3339 (what Go's `time.Time` writes and reads). */
  readonly created_at: string;
  readonly updated_at: string;
  readonly data?: unknown;
  readonly metadata?: Readonly<Record<string, string>>;
}

/** The transparent proxy's metadata keys (the reference's). */
export const SESSION_METADATA = {
  backendUrl: 'backend_url',
  initBody: 'init_body',
  backendSid: 'backend_sid',
} as const;

export const SESSION_DEFAULTS = {
  /** The reference's `key_prefix` default. */
  keyPrefix: 'thv:proxy:session:',
  /** The reference's `session_ttl` default: 2 h. */
  ttlMs: 2 * 60 * 60_000,
  /** A larger `initialize` request is not kept (it cannot be replayed): initialize bodies are ~0.5 KiB. */
  maxInitBodyBytes: 64 * 1024,
  /** Most bytes of records the memory store keeps. */
  memoryMaxBytes: 64 * 1024 * 1024,
  /** Redis: the start's connect + ping, ms (as the rate limiter). */
  pingTimeoutMs: 5_000,
  /** Redis: each read or write on a request's path, ms. */
  commandTimeoutMs: 1_000,
} as const;

export interface SessionStore {
  readonly kind: 'memory' | 'redis';
  /** How long a record lives after its last write or read, ms. */
  readonly ttlMs: number;
  /** The record, its TTL restarted; undefined when there is none (never stored, expired, deleted). */
  load(id: string): Promise<StoredSession | undefined>;
  /** Writes the whole record with a fresh TTL. */
  save(session: StoredSession): Promise<void>;
  delete(id: string): Promise<void>;
  /** Idempotent. */
  close(): Promise<void>;
}

/**
 * `key_prefix` as configured: empty means the default; anything else must end with `:` (the
 * reference's rule, so one prefix cannot be the start of another's keys).
 */
export function checkKeyPrefix(prefix: string | undefined, field: string): string {
  if (prefix === undefined || prefix === '') return SESSION_DEFAULTS.keyPrefix;
  if (!prefix.endsWith(':'))
    throw new SkepError(
      'invalid_config',
      `${field} "${prefix}" must end with ':' (e.g. "${SESSION_DEFAULTS.keyPrefix}"), so that keys of one prefix never start with another`,
    );
  return prefix;
}

export function encodeSession(session: StoredSession): string {
  return JSON.stringify(session);
}

const TYPES: ReadonlySet<string> = new Set<StoredSessionType>(['mcp', 'sse', 'streamable']);

/**
 * A stored record, checked; undefined when it is not one (another program's key under the
 * prefix, or a damaged value): such a session is treated as unknown, never trusted in part.
 */
export function decodeSession(text: string): StoredSession | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const v = value as Record<string, unknown>;
  const { id, type, created_at, updated_at, metadata } = v;
  if (typeof id !== 'string' || id === '' || typeof type !== 'string' || !TYPES.has(type)) return undefined;
  if (typeof created_at !== 'string' || typeof updated_at !== 'string') return undefined;
  if (metadata !== undefined && metadata !== null) {
    if (typeof metadata !== 'object' || Array.isArray(metadata)) return undefined;
    if (!Object.values(metadata).every((m) => typeof m === 'string')) return undefined;
  }
  const out: { -readonly [K in keyof StoredSession]: StoredSession[K] } = {
    id,
    type: type as StoredSessionType,
    created_at,
    updated_at,
  };
  if (v['data'] !== undefined && v['data'] !== null) out.data = v['data'];
  if (metadata !== undefined && metadata !== null) out.metadata = metadata as Record<string, string>;
  return out;
}

interface MemoryEntry {
  text: string;
  expiresAt: number;
}

/** The records in this process (no Redis configured): the same contract, one proxy's view. */
export class MemorySessionStore implements SessionStore {
  readonly kind = 'memory';
  readonly ttlMs: number;
  readonly #entries = new Map<string, MemoryEntry>();
  readonly #maxBytes: number;
  readonly #now: () => number;
  #bytes = 0;

  constructor(options: { ttlMs?: number; maxBytes?: number; now?: () => number } = {}) {
    this.ttlMs = options.ttlMs ?? SESSION_DEFAULTS.ttlMs;
    this.#maxBytes = options.maxBytes ?? SESSION_DEFAULTS.memoryMaxBytes;
    this.#now = options.now ?? Date.now;
  }

  get size(): number {
    return this.#entries.size;
  }

  async load(id: string): Promise<StoredSession | undefined> {
    const entry = this.#entries.get(id);
    if (entry === undefined) return undefined;
    const now = this.#now();
    if (entry.expiresAt <= now) {
      this.#remove(id, entry);
      return undefined;
    }
    // Sliding expiry, and the most recently used record goes last in the eviction order.
    entry.expiresAt = now + this.ttlMs;
    this.#entries.delete(id);
    this.#entries.set(id, entry);
    return decodeSession(entry.text);
  }

  async save(session: StoredSession): Promise<void> {
    const old = this.#entries.get(session.id);
    if (old !== undefined) this.#remove(session.id, old);
    const text = encodeSession(session);
    this.#entries.set(session.id, { text, expiresAt: this.#now() + this.ttlMs });
    this.#bytes += text.length;
    this.#evict();
  }

  async delete(id: string): Promise<void> {
    const entry = this.#entries.get(id);
    if (entry !== undefined) this.#remove(id, entry);
  }

  async close(): Promise<void> {
    this.#entries.clear();
    this.#bytes = 0;
  }

  #remove(id: string, entry: MemoryEntry): void {
    this.#entries.delete(id);
    this.#bytes -= entry.text.length;
  }

  /** Expired records first (in order, until a live one), then the least recently used while over the cap. */
  #evict(): void {
    const now = this.#now();
    for (const [id, entry] of this.#entries) {
      if (entry.expiresAt > now && this.#bytes <= this.#maxBytes) break;
      if (this.#entries.size === 1) break;
      this.#remove(id, entry);
    }
  }
}

/** What the runner asks for (`sessionStorageOf` reads it from the run configuration). */
export interface SessionStorageOptions {
  /** `session_ttl`, ms. */
  ttlMs: number;
  /** `scaling_config.session_redis`; absent: in memory. */
  redis?: { address: string; db: number; keyPrefix: string };
}

/**
 * The store `options` ask for: in memory, or connected to Redis (start errors name the field:
 * unreachable, password missing or refused). The Redis password is read from `env`.
 */
export async function openSessionStore(
  options: SessionStorageOptions,
  env: NodeJS.ProcessEnv = process.env,
): Promise<SessionStore> {
  if (options.redis === undefined) return new MemorySessionStore({ ttlMs: options.ttlMs });
  const { RedisSessionStore } = await import('./redis-session-store.js');
  const password = sessionRedisPassword(env);
  return RedisSessionStore.connect({
    address: options.redis.address,
    db: options.redis.db,
    keyPrefix: options.redis.keyPrefix,
    ttlMs: options.ttlMs,
    ...(password === undefined ? {} : { password }),
  });
}
