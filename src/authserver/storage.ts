/**
 * The storage interface of the authorization server, and its in-memory backend (the default).
 * Everything the server must remember between requests goes through `AuthStorage`: DCR
 * clients, authorization requests waiting on the consent page, pending upstream
 * authorizations, authorization codes, refresh tokens, revoked sessions, upstream tokens per
 * session and provider, internal users, consent approvals per user and client, browsers that
 * remember their user, and upstream DCR credentials. Records expire with the TTLs the server passes (the token lifespans).
 * Operations that must be atomic (take a pending entry once, consume a code once, rotate a
 * refresh token once) are single methods so a backend can make them atomic.
 */
import { randomUUID } from 'node:crypto';

export interface ClientRecord {
  client_id: string;
  client_id_issued_at: number;
  client_name?: string;
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  scope: string[];
  token_endpoint_auth_method: 'none';
  software_id?: string;
}

export interface PendingAuthorization {
  clientId: string;
  redirectUri: string;
  /** The client's own `state`, returned unchanged (RFC 6749 §4.1.2). */
  clientState: string | undefined;
  codeChallenge: string;
  scopes: string[];
  audience: string[];
  upstream: string;
  upstreamVerifier: string;
  nonce: string;
  sessionId: string;
  createdAt: number;
  /** The browser flow this login belongs to: its entry in the flow cookie. */
  flowId: string;
  /** SHA-256 (base64url) of the flow cookie's secret: the callback must come with that secret. */
  browserBinding: string;
  /**
   * Set when the consent page was skipped because this user had approved the client before:
   * whoever logs in at the upstream must be that user, or no code is issued.
   */
  rememberedUser?: string;
  /**
   * Set on the second and later legs of a login chain (several upstreams, as a vMCP has):
   * the upstreams already walked, in order, and the user the first one identified.
   */
  chain?: { done: string[]; user: ChainUser };
}

/** Who the first upstream of a login chain identified: the user of the whole login. */
export interface ChainUser {
  id: string;
  /** A token-derived subject (no user row): later legs are not linked to it. */
  synthetic: boolean;
  name?: string;
  email?: string;
}

/**
 * An authorization request shown on the consent page (MCP security best practices,
 * "Confused Deputy Problem"). The upstream login is prepared but not yet pending: the
 * `state` is stored as a pending authorization only once the user approves.
 */
export interface ConsentRequest {
  /** `browserBinding` here binds the consent page's cookie; approval binds a fresh one. */
  pending: PendingAuthorization;
  /** The upstream `state`. */
  state: string;
  /** The upstream authorization URL the browser is sent to on approval. */
  location: string;
  /** Must come back with the consent form (CSRF). */
  csrfToken: string;
}

/** What a user approved for one client; a later request within it skips the consent page. */
export interface ConsentApproval {
  redirectUris: string[];
  scopes: string[];
  resources: string[];
}

/** What an authorization code or refresh token stands for. */
export interface GrantRecord {
  clientId: string;
  scopes: string[];
  audience: string[];
  sessionId: string;
  subject: string;
  name?: string;
  email?: string;
}

export interface AuthCodeRecord extends GrantRecord {
  redirectUri: string;
  codeChallenge: string;
}

export interface UpstreamTokenRecord {
  provider_id: string;
  access_token: string;
  refresh_token?: string;
  id_token?: string;
  /** Unix seconds; absent when the upstream did not say. */
  expires_at?: number;
  session_expires_at: number;
  user_id: string;
  upstream_subject: string;
  client_id: string;
}

export interface DcrCredentials {
  client_id: string;
  client_secret?: string;
  token_endpoint_auth_method?: string;
  client_secret_expires_at?: number;
}

/** Result of consuming a single-use value: the record, and whether it had been used before. */
export interface Consumed<T> {
  record: T;
  reused: boolean;
}

export interface AuthStorage {
  saveClient(client: ClientRecord, ttlSec: number): Promise<void>;
  getClient(clientId: string): Promise<ClientRecord | undefined>;
  /** Slides a DCR client's TTL after a successful token response. */
  touchClient(clientId: string, ttlSec: number): Promise<void>;

  savePending(state: string, pending: PendingAuthorization, ttlSec: number): Promise<void>;
  /** Returns and deletes the entry (single use). */
  takePending(state: string): Promise<PendingAuthorization | undefined>;

  saveConsentRequest(flowId: string, request: ConsentRequest, ttlSec: number): Promise<void>;
  getConsentRequest(flowId: string): Promise<ConsentRequest | undefined>;
  /** Returns and deletes the entry (single use: one decision per consent page). */
  takeConsentRequest(flowId: string): Promise<ConsentRequest | undefined>;

  saveApproval(userId: string, clientId: string, approval: ConsentApproval, ttlSec: number): Promise<void>;
  getApproval(userId: string, clientId: string): Promise<ConsentApproval | undefined>;
  deleteApproval(userId: string, clientId: string): Promise<void>;

  /** Maps the digest of a browser's "remembered" cookie to the user who logged in with it. */
  saveRememberedBrowser(cookieDigest: string, userId: string, ttlSec: number): Promise<void>;
  getRememberedBrowser(cookieDigest: string): Promise<string | undefined>;

  saveAuthCode(signature: string, record: AuthCodeRecord, ttlSec: number): Promise<void>;
  getAuthCode(signature: string): Promise<AuthCodeRecord | undefined>;
  /** Marks the code used (remembered for `rememberSec`) and returns it with `reused` when it already was. */
  consumeAuthCode(signature: string, rememberSec: number): Promise<Consumed<AuthCodeRecord> | undefined>;

  saveRefreshToken(signature: string, record: GrantRecord, ttlSec: number): Promise<void>;
  getRefreshToken(signature: string): Promise<GrantRecord | undefined>;
  /** Marks the refresh token used; `reused` is true when it already was (a replay). */
  consumeRefreshToken(signature: string): Promise<Consumed<GrantRecord> | undefined>;

  /** Revokes every token of a session (grant) and deletes its upstream tokens. */
  revokeSession(sessionId: string, ttlSec: number): Promise<void>;
  isSessionRevoked(sessionId: string): Promise<boolean>;

  saveUpstreamTokens(
    sessionId: string,
    record: UpstreamTokenRecord,
    ttlSec: number | undefined,
  ): Promise<void>;
  getUpstreamTokens(sessionId: string, provider: string): Promise<UpstreamTokenRecord | undefined>;

  /**
   * The internal user id linked to (provider, upstream subject). On first use the identity is
   * linked to `candidate` (a later leg of a login chain: the chain's user), else to a new id.
   */
  resolveUser(provider: string, upstreamSubject: string, candidate?: string): Promise<string>;

  saveDcrCredentials(key: string, creds: DcrCredentials, ttlSec: number | undefined): Promise<void>;
  getDcrCredentials(key: string): Promise<DcrCredentials | undefined>;

  close(): Promise<void>;
}

/** Where each record lives, the same in every backend (a backend may add a prefix). */
export const storageKey = {
  client: (clientId: string) => `client:${clientId}`,
  pending: (state: string) => `pending:${state}`,
  consent: (flowId: string) => `consent:${flowId}`,
  /** Length-prefixed so that no (user, client) pair can spell another's key. */
  approval: (userId: string, clientId: string) => `approval:${userId.length}:${userId}:${clientId}`,
  browser: (cookieDigest: string) => `browser:${cookieDigest}`,
  authCode: (signature: string) => `authcode:${signature}`,
  codeUsed: (signature: string) => `invalidated:${signature}`,
  refresh: (signature: string) => `refresh:${signature}`,
  refreshUsed: (signature: string) => `refresh-used:${signature}`,
  revoked: (sessionId: string) => `revoked:${sessionId}`,
  upstream: (sessionId: string, provider: string) => `upstream:${sessionId}:${provider}`,
  /** Length-prefixed like `approval`. */
  user: (provider: string, upstreamSubject: string) =>
    `provider:${provider.length}:${provider}:${upstreamSubject}`,
  dcr: (key: string) => `dcr:${key}`,
};

/** The operations that only store or read one record under its key. */
type RecordOperations =
  | 'saveClient'
  | 'getClient'
  | 'savePending'
  | 'saveConsentRequest'
  | 'getConsentRequest'
  | 'saveApproval'
  | 'getApproval'
  | 'saveRememberedBrowser'
  | 'getRememberedBrowser'
  | 'saveAuthCode'
  | 'getAuthCode'
  | 'saveRefreshToken'
  | 'getRefreshToken'
  | 'getUpstreamTokens'
  | 'saveDcrCredentials'
  | 'getDcrCredentials';

/**
 * The record-per-key operations, written once for every backend: a backend supplies
 * `writeRecord`/`readRecord` and the operations that must be atomic or touch several keys.
 */
export abstract class RecordStorage implements Pick<AuthStorage, RecordOperations> {
  /** Stores `value` under `key`, expiring after `ttlSec` (never when undefined). */
  protected abstract writeRecord(key: string, value: unknown, ttlSec: number | undefined): Promise<void>;
  protected abstract readRecord<T>(key: string): Promise<T | undefined>;

  saveClient(client: ClientRecord, ttlSec: number): Promise<void> {
    return this.writeRecord(storageKey.client(client.client_id), client, ttlSec);
  }
  getClient(clientId: string): Promise<ClientRecord | undefined> {
    return this.readRecord(storageKey.client(clientId));
  }
  savePending(state: string, pending: PendingAuthorization, ttlSec: number): Promise<void> {
    return this.writeRecord(storageKey.pending(state), pending, ttlSec);
  }
  saveConsentRequest(flowId: string, request: ConsentRequest, ttlSec: number): Promise<void> {
    return this.writeRecord(storageKey.consent(flowId), request, ttlSec);
  }
  getConsentRequest(flowId: string): Promise<ConsentRequest | undefined> {
    return this.readRecord(storageKey.consent(flowId));
  }
  saveApproval(userId: string, clientId: string, approval: ConsentApproval, ttlSec: number): Promise<void> {
    return this.writeRecord(storageKey.approval(userId, clientId), approval, ttlSec);
  }
  getApproval(userId: string, clientId: string): Promise<ConsentApproval | undefined> {
    return this.readRecord(storageKey.approval(userId, clientId));
  }
  saveRememberedBrowser(cookieDigest: string, userId: string, ttlSec: number): Promise<void> {
    return this.writeRecord(storageKey.browser(cookieDigest), userId, ttlSec);
  }
  getRememberedBrowser(cookieDigest: string): Promise<string | undefined> {
    return this.readRecord(storageKey.browser(cookieDigest));
  }
  saveAuthCode(signature: string, record: AuthCodeRecord, ttlSec: number): Promise<void> {
    return this.writeRecord(storageKey.authCode(signature), record, ttlSec);
  }
  getAuthCode(signature: string): Promise<AuthCodeRecord | undefined> {
    return this.readRecord(storageKey.authCode(signature));
  }
  saveRefreshToken(signature: string, record: GrantRecord, ttlSec: number): Promise<void> {
    return this.writeRecord(storageKey.refresh(signature), record, ttlSec);
  }
  getRefreshToken(signature: string): Promise<GrantRecord | undefined> {
    return this.readRecord(storageKey.refresh(signature));
  }
  getUpstreamTokens(sessionId: string, provider: string): Promise<UpstreamTokenRecord | undefined> {
    return this.readRecord(storageKey.upstream(sessionId, provider));
  }
  saveDcrCredentials(key: string, creds: DcrCredentials, ttlSec: number | undefined): Promise<void> {
    return this.writeRecord(storageKey.dcr(key), creds, ttlSec);
  }
  getDcrCredentials(key: string): Promise<DcrCredentials | undefined> {
    return this.readRecord(storageKey.dcr(key));
  }
}

interface Entry {
  value: unknown;
  expiresAt: number | undefined;
}

/** In-process storage; state is lost on restart. Expired entries are swept every 5 minutes. */
export class MemoryStorage extends RecordStorage implements AuthStorage {
  readonly #data = new Map<string, Entry>();
  readonly #now: () => number;
  readonly #sweeper: NodeJS.Timeout;
  #closed = false;

  constructor(now: () => number = Date.now) {
    super();
    this.#now = now;
    this.#sweeper = setInterval(() => this.#sweep(), 5 * 60_000);
    this.#sweeper.unref();
  }

  #get<T>(key: string): T | undefined {
    const e = this.#data.get(key);
    if (!e) return undefined;
    if (e.expiresAt !== undefined && e.expiresAt <= this.#now()) {
      this.#data.delete(key);
      return undefined;
    }
    return structuredClone(e.value) as T;
  }

  #set(key: string, value: unknown, ttlSec: number | undefined): void {
    const expiresAt = ttlSec === undefined ? undefined : this.#now() + Math.max(1, ttlSec) * 1000;
    this.#data.set(key, { value: structuredClone(value), expiresAt });
  }

  #sweep(): void {
    const now = this.#now();
    for (const [k, e] of this.#data)
      if (e.expiresAt !== undefined && e.expiresAt <= now) this.#data.delete(k);
  }

  protected async writeRecord(key: string, value: unknown, ttlSec: number | undefined): Promise<void> {
    this.#set(key, value, ttlSec);
  }
  protected async readRecord<T>(key: string): Promise<T | undefined> {
    return this.#get<T>(key);
  }

  async touchClient(clientId: string, ttlSec: number): Promise<void> {
    const key = storageKey.client(clientId);
    const c = this.#get<ClientRecord>(key);
    if (c) this.#set(key, c, ttlSec);
  }

  async takePending(state: string): Promise<PendingAuthorization | undefined> {
    return this.#take(storageKey.pending(state));
  }
  async takeConsentRequest(flowId: string): Promise<ConsentRequest | undefined> {
    return this.#take(storageKey.consent(flowId));
  }
  #take<T>(key: string): T | undefined {
    const value = this.#get<T>(key);
    this.#data.delete(key);
    return value;
  }

  async deleteApproval(userId: string, clientId: string): Promise<void> {
    this.#data.delete(storageKey.approval(userId, clientId));
  }

  async consumeAuthCode(
    signature: string,
    rememberSec: number,
  ): Promise<Consumed<AuthCodeRecord> | undefined> {
    const record = this.#get<AuthCodeRecord>(storageKey.authCode(signature));
    if (!record) return undefined;
    const reused = this.#get(storageKey.codeUsed(signature)) !== undefined;
    if (!reused) {
      this.#set(storageKey.codeUsed(signature), 1, rememberSec);
      this.#set(storageKey.authCode(signature), record, rememberSec);
    }
    return { record, reused };
  }

  async consumeRefreshToken(signature: string): Promise<Consumed<GrantRecord> | undefined> {
    const key = storageKey.refresh(signature);
    const e = this.#data.get(key);
    const record = this.#get<GrantRecord>(key);
    if (!record || !e) return undefined;
    const reused = this.#get(storageKey.refreshUsed(signature)) !== undefined;
    if (!reused) {
      const ttl = e.expiresAt === undefined ? undefined : Math.ceil((e.expiresAt - this.#now()) / 1000);
      this.#set(storageKey.refreshUsed(signature), 1, ttl);
    }
    return { record, reused };
  }

  async revokeSession(sessionId: string, ttlSec: number): Promise<void> {
    this.#set(storageKey.revoked(sessionId), 1, ttlSec);
    const upstreams = storageKey.upstream(sessionId, '');
    for (const key of [...this.#data.keys()]) if (key.startsWith(upstreams)) this.#data.delete(key);
  }
  async isSessionRevoked(sessionId: string): Promise<boolean> {
    return this.#get(storageKey.revoked(sessionId)) !== undefined;
  }

  async saveUpstreamTokens(
    sessionId: string,
    record: UpstreamTokenRecord,
    ttlSec: number | undefined,
  ): Promise<void> {
    this.#set(storageKey.upstream(sessionId, record.provider_id), record, ttlSec);
  }

  async resolveUser(provider: string, upstreamSubject: string, candidate?: string): Promise<string> {
    const key = storageKey.user(provider, upstreamSubject);
    const existing = this.#get<string>(key);
    if (existing) return existing;
    const id = candidate ?? randomUUID();
    this.#set(key, id, undefined);
    return id;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#sweeper);
    this.#data.clear();
  }
}
