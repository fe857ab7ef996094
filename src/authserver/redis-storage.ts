/**
 * Redis backend of `AuthStorage` (ioredis): standalone, Sentinel and Cluster, with ACL
 * user/password, TLS, the configured timeouts and a key prefix. Every key starts with the
 * prefix, which carries a hash tag (`{...}`), so in Cluster mode all keys of one server
 * live in one slot and the Lua scripts that touch several keys stay legal (no CROSSSLOT).
 * Values are JSON; TTLs follow the token lifespans, as in ToolHive's Redis storage backend.
 * Records that hold upstream credentials (`upstream:` tokens, `dcr:` client registrations)
 * are sealed with the server's HMAC secrets (`sealed-record.ts`) instead: whoever else reads
 * Redis gets no usable upstream token.
 *
 * Durability across a Sentinel failover: Redis replicates asynchronously, so a write that
 * the master acknowledged can be lost when the master fails before the replica received it.
 * In Sentinel mode every write is followed by `WAIT <minReplicaAcks> <write timeout>` and a
 * write that no replica acknowledged fails (503) instead of handing out a token that a
 * failover could forget.
 */
import type { Cluster, Redis } from 'ioredis';
import { createRedisClient, loadIoredis, SkepError } from '../shared/index.js';
import type { ResolvedRedis } from './config.js';
import { RecordSealer } from './sealed-record.js';
import {
  type AuthCodeRecord,
  type AuthStorage,
  type ConsentRequest,
  type Consumed,
  type GrantRecord,
  type PendingAuthorization,
  RecordStorage,
  storageKey,
  type UpstreamTokenRecord,
} from './storage.js';

/** KEYS[1] = code, KEYS[2] = invalidated marker; ARGV[1] = remember seconds. */
const CONSUME_CODE = `
local v = redis.call('GET', KEYS[1])
if not v then return nil end
local used = redis.call('EXISTS', KEYS[2])
if used == 0 then
  redis.call('SET', KEYS[2], '1', 'EX', ARGV[1])
  redis.call('EXPIRE', KEYS[1], ARGV[1])
end
return {v, used}`;

/** KEYS[1] = refresh token, KEYS[2] = used marker (kept as long as the token). */
const CONSUME_REFRESH = `
local v = redis.call('GET', KEYS[1])
if not v then return nil end
local used = redis.call('EXISTS', KEYS[2])
if used == 0 then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then redis.call('SET', KEYS[2], '1', 'PX', ttl) else redis.call('SET', KEYS[2], '1') end
end
return {v, used}`;

/** KEYS[1] = revoked marker, KEYS[2] = upstream index set; ARGV[1] = ttl seconds. */
const REVOKE_SESSION = `
redis.call('SET', KEYS[1], '1', 'EX', ARGV[1])
local members = redis.call('SMEMBERS', KEYS[2])
for _, k in ipairs(members) do redis.call('DEL', k) end
redis.call('DEL', KEYS[2])
return #members`;

/** KEYS[1] = upstream key, KEYS[2] = index set; ARGV[1] = JSON, ARGV[2] = ttl seconds or 0 (none). */
const SAVE_UPSTREAM = `
local ttl = tonumber(ARGV[2])
if ttl > 0 then redis.call('SET', KEYS[1], ARGV[1], 'EX', ttl) else redis.call('SET', KEYS[1], ARGV[1]) end
redis.call('SADD', KEYS[2], KEYS[1])
local cur = redis.call('TTL', KEYS[2])
if ttl == 0 then redis.call('PERSIST', KEYS[2])
elseif cur ~= -1 and cur < ttl then redis.call('EXPIRE', KEYS[2], ttl) end
return 1`;

type ScriptClient = (Redis | Cluster) & {
  consumeCode(k1: string, k2: string, remember: number): Promise<[string, number] | null>;
  consumeRefresh(k1: string, k2: string): Promise<[string, number] | null>;
  revokeSession(k1: string, k2: string, ttl: number): Promise<number>;
  saveUpstream(k1: string, k2: string, json: string, ttl: number): Promise<number>;
};

export interface RedisStorageOptions {
  /**
   * Replicas that must acknowledge each write (`WAIT`). Defaults to 1 in Sentinel mode
   * (the failover guarantee) and 0 otherwise.
   */
  minReplicaAcks?: number;
}

/** The records sealed before they are stored: those that hold upstream credentials. */
const SEALED_RECORDS = /^(?:upstream|dcr):/;

export class RedisStorage extends RecordStorage implements AuthStorage {
  readonly #client: ScriptClient;
  readonly #sealer: RecordSealer;
  readonly #prefix: string;
  readonly #acks: number;
  readonly #ackTimeoutMs: number;
  #closed = false;

  private constructor(
    client: ScriptClient,
    sealer: RecordSealer,
    cfg: ResolvedRedis,
    options: RedisStorageOptions,
  ) {
    super();
    this.#client = client;
    this.#sealer = sealer;
    this.#prefix = cfg.keyPrefix;
    this.#acks = options.minReplicaAcks ?? (cfg.mode === 'sentinel' ? 1 : 0);
    this.#ackTimeoutMs = cfg.writeTimeoutMs;
  }

  /**
   * Connects (and fails with `unavailable` when Redis cannot be reached within the dial
   * timeout). `sealingSecrets`: the server's HMAC secrets, current first, which seal the
   * records of upstream credentials.
   */
  static async connect(
    cfg: ResolvedRedis,
    sealingSecrets: readonly Buffer[],
    options: RedisStorageOptions = {},
  ): Promise<RedisStorage> {
    const sealer = new RecordSealer(sealingSecrets);
    const client = createRedisClient(cfg);
    const scripts = client as ScriptClient;
    scripts.defineCommand('consumeCode', { numberOfKeys: 2, lua: CONSUME_CODE });
    scripts.defineCommand('consumeRefresh', { numberOfKeys: 2, lua: CONSUME_REFRESH });
    scripts.defineCommand('revokeSession', { numberOfKeys: 2, lua: REVOKE_SESSION });
    scripts.defineCommand('saveUpstream', { numberOfKeys: 2, lua: SAVE_UPSTREAM });
    try {
      await client.connect();
      await client.ping();
    } catch (err) {
      client.disconnect();
      throw new SkepError(
        'unavailable',
        `authorization server storage: cannot connect to Redis (${cfg.mode})`,
        {
          cause: err,
        },
      );
    }
    return new RedisStorage(scripts, sealer, cfg, options);
  }

  #key(rest: string): string {
    return `${this.#prefix}${rest}`;
  }

  /**
   * Waits for replica acknowledgement. `strict` writes (anything that hands out or records a
   * credential) fail when unacknowledged; consumption marks only log, because the caller
   * has already stored the replacement credential durably (server.ts, "Ordering").
   */
  async #replicated(strict = true): Promise<void> {
    if (this.#acks <= 0 || this.#client instanceof loadIoredis().Cluster) return;
    let acked: number;
    try {
      acked = (await (this.#client as Redis).call('WAIT', this.#acks, this.#ackTimeoutMs)) as number;
    } catch (err) {
      if (strict)
        throw new SkepError('unavailable', 'authorization server storage: WAIT failed', { cause: err });
      return;
    }
    if (acked < this.#acks && strict) {
      throw new SkepError(
        'unavailable',
        `authorization server storage: write acknowledged by ${acked} of ${this.#acks} replica(s); try again`,
      );
    }
  }

  protected async writeRecord(key: string, value: unknown, ttlSec: number | undefined): Promise<void> {
    const full = this.#key(key);
    const text = SEALED_RECORDS.test(key) ? this.#sealer.seal(full, value) : JSON.stringify(value);
    if (ttlSec === undefined) await this.#client.set(full, text);
    else await this.#client.set(full, text, 'EX', Math.max(1, Math.ceil(ttlSec)));
    await this.#replicated();
  }

  protected async readRecord<T>(key: string): Promise<T | undefined> {
    const full = this.#key(key);
    const v = await this.#client.get(full);
    if (v === null) return undefined;
    // A sealed record that does not open is as good as absent.
    return SEALED_RECORDS.test(key) ? this.#sealer.open<T>(full, v) : (JSON.parse(v) as T);
  }

  async touchClient(clientId: string, ttlSec: number): Promise<void> {
    await this.#client.expire(this.#key(storageKey.client(clientId)), Math.ceil(ttlSec));
  }

  async takePending(state: string): Promise<PendingAuthorization | undefined> {
    return this.#take(storageKey.pending(state));
  }
  async takeConsentRequest(flowId: string): Promise<ConsentRequest | undefined> {
    return this.#take(storageKey.consent(flowId));
  }
  async #take<T>(key: string): Promise<T | undefined> {
    const v = await this.#client.getdel(this.#key(key));
    await this.#replicated(false);
    return v === null ? undefined : (JSON.parse(v) as T);
  }

  async deleteApproval(userId: string, clientId: string): Promise<void> {
    await this.#client.del(this.#key(storageKey.approval(userId, clientId)));
    await this.#replicated();
  }

  async consumeAuthCode(
    signature: string,
    rememberSec: number,
  ): Promise<Consumed<AuthCodeRecord> | undefined> {
    const r = await this.#client.consumeCode(
      this.#key(storageKey.authCode(signature)),
      this.#key(storageKey.codeUsed(signature)),
      Math.ceil(rememberSec),
    );
    if (!r) return undefined;
    await this.#replicated(false);
    return { record: JSON.parse(r[0]) as AuthCodeRecord, reused: r[1] === 1 };
  }

  async consumeRefreshToken(signature: string): Promise<Consumed<GrantRecord> | undefined> {
    const r = await this.#client.consumeRefresh(
      this.#key(storageKey.refresh(signature)),
      this.#key(storageKey.refreshUsed(signature)),
    );
    if (!r) return undefined;
    await this.#replicated(false);
    return { record: JSON.parse(r[0]) as GrantRecord, reused: r[1] === 1 };
  }

  /** The set of a session's upstream token keys, so revoking the session can delete them all. */
  #upstreamIndex(sessionId: string): string {
    return this.#key(`upstream:idx:${sessionId}`);
  }

  async revokeSession(sessionId: string, ttlSec: number): Promise<void> {
    await this.#client.revokeSession(
      this.#key(storageKey.revoked(sessionId)),
      this.#upstreamIndex(sessionId),
      Math.max(1, Math.ceil(ttlSec)),
    );
    await this.#replicated();
  }
  async isSessionRevoked(sessionId: string): Promise<boolean> {
    return (await this.#client.exists(this.#key(storageKey.revoked(sessionId)))) === 1;
  }

  async saveUpstreamTokens(
    sessionId: string,
    record: UpstreamTokenRecord,
    ttlSec: number | undefined,
  ): Promise<void> {
    const key = this.#key(storageKey.upstream(sessionId, record.provider_id));
    await this.#client.saveUpstream(
      key,
      this.#upstreamIndex(sessionId),
      this.#sealer.seal(key, record),
      ttlSec === undefined ? 0 : Math.max(1, Math.ceil(ttlSec)),
    );
    await this.#replicated();
  }

  async resolveUser(provider: string, upstreamSubject: string, candidate?: string): Promise<string> {
    const key = this.#key(storageKey.user(provider, upstreamSubject));
    const id = candidate ?? crypto.randomUUID();
    // SET NX ... GET returns the existing value, or null when ours was stored (Redis ≥ 7.0).
    const existing = (await this.#client.call('SET', key, id, 'NX', 'GET')) as string | null;
    if (existing === null) await this.#replicated();
    return existing ?? id;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      await this.#client.quit();
    } catch {
      this.#client.disconnect();
    }
  }
}
