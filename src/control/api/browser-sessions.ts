/**
 * How a browser gets into the management API: a one-time login URL that sets an HttpOnly,
 * SameSite=Strict session cookie (docs/web-ui.md). A holder of the bearer token (the CLI's `skep
 * ui`, or `skep serve` at start) mints a ticket; opening `/auth/login?ticket=…` spends it and
 * starts a session, whose id travels only in the cookie.
 *
 * Tickets are single use and live 60 s; sessions end after an idle time and, regardless of
 * use, after an absolute lifetime (OWASP Session Management Cheat Sheet, "Session
 * Expiration"). Everything is in memory: a restart of `skep serve` logs every browser out,
 * which is the safe direction. Only SHA-256 digests of tickets and session ids are kept as
 * map keys, so a lookup's timing says nothing about a valid value.
 *
 * Each session also has a CSRF token (OWASP CSRF Prevention Cheat Sheet, "Synchronizer Token
 * Pattern"): an HMAC of the session id under a key of this process, handed to the page only
 * by the login that created the session. Cookies ignore ports (RFC 6265 §8.5), so another
 * program on this host may see the cookie; it never sees the token, which the page keeps in
 * its own origin's storage and sends in a header.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** A login ticket is valid this long after it is minted. */
export const TICKET_TTL_MS = 60_000;
/** A session ends after this long without a request. */
export const SESSION_IDLE_MS = 60 * 60_000;
/** A session ends this long after login, however busy. */
export const SESSION_ABSOLUTE_MS = 12 * 60 * 60_000;
/** Bounds on what unauthenticated traffic can never grow, and token holders barely can. */
const MAX_TICKETS = 64;
const MAX_SESSIONS = 256;

export interface BrowserSessionsOptions {
  /** Milliseconds since the epoch; tests pass a frozen clock. */
  now?: () => number;
  ticketTtlMs?: number;
  idleMs?: number;
  absoluteMs?: number;
}

interface Session {
  readonly createdAt: number;
  lastSeen: number;
}

const digest = (value: string): string => createHash('sha256').update(value).digest('base64url');
const randomId = (): string => randomBytes(32).toString('base64url');

export class BrowserSessions {
  readonly #now: () => number;
  readonly #ticketTtlMs: number;
  readonly #idleMs: number;
  readonly #absoluteMs: number;
  /** ticket digest → expiry (ms). Insertion order is age order. */
  readonly #tickets = new Map<string, number>();
  /** session digest → session. Re-inserted on use, so iteration order is least recently used first. */
  readonly #sessions = new Map<string, Session>();
  /** Signs session ids into CSRF tokens; a restart changes it, as it ends every session. */
  readonly #csrfKey = randomBytes(32);

  constructor(options: BrowserSessionsOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#ticketTtlMs = options.ticketTtlMs ?? TICKET_TTL_MS;
    this.#idleMs = options.idleMs ?? SESSION_IDLE_MS;
    this.#absoluteMs = options.absoluteMs ?? SESSION_ABSOLUTE_MS;
  }

  /** A new one-time login ticket (32 random bytes, base64url). */
  mintTicket(): string {
    const now = this.#now();
    for (const [key, expires] of this.#tickets) if (expires <= now) this.#tickets.delete(key);
    while (this.#tickets.size >= MAX_TICKETS)
      this.#tickets.delete(this.#tickets.keys().next().value as string);
    const ticket = randomId();
    this.#tickets.set(digest(ticket), now + this.#ticketTtlMs);
    return ticket;
  }

  /**
   * Spends a ticket: a new session id when the ticket is known and not expired, else
   * undefined. A ticket works once, whatever the outcome.
   */
  login(ticket: string): string | undefined {
    const key = digest(ticket);
    const expires = this.#tickets.get(key);
    if (expires === undefined) return undefined;
    this.#tickets.delete(key);
    const now = this.#now();
    if (expires <= now) return undefined;
    while (this.#sessions.size >= MAX_SESSIONS)
      this.#sessions.delete(this.#sessions.keys().next().value as string);
    // Always a fresh id (no session fixation: the browser never chooses it).
    const id = randomId();
    this.#sessions.set(digest(id), { createdAt: now, lastSeen: now });
    return id;
  }

  /** True when the session is live; counts as activity for the idle timeout. */
  touch(id: string): boolean {
    const key = digest(id);
    const session = this.#sessions.get(key);
    if (session === undefined) return false;
    const now = this.#now();
    if (now - session.lastSeen >= this.#idleMs || now - session.createdAt >= this.#absoluteMs) {
      this.#sessions.delete(key);
      return false;
    }
    session.lastSeen = now;
    this.#sessions.delete(key);
    this.#sessions.set(key, session);
    return true;
  }

  /** The CSRF token of a session id (43 characters, base64url). */
  csrfToken(id: string): string {
    return createHmac('sha256', this.#csrfKey).update(id).digest('base64url');
  }

  /** True when `candidate` is the session's CSRF token; constant time (both sides hashed to one length). */
  csrfMatches(id: string, candidate: string): boolean {
    return timingSafeEqual(
      createHash('sha256').update(candidate).digest(),
      createHash('sha256').update(this.csrfToken(id)).digest(),
    );
  }

  /** Ends a session (logout); unknown ids are ignored. */
  end(id: string): void {
    this.#sessions.delete(digest(id));
  }
}
