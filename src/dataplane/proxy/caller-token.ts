/**
 * The owner's credential at a workload's MCP endpoints. A proxy on `127.0.0.1:<port>` is
 * reachable by every account on the machine and by every server that shares the host's
 * network, so a workload without inbound authentication of its own asks each request for the
 * access token only its owner can read (it lives in the owner's 0600 state store and in the
 * client configurations Skep writes for them).
 *
 * Two forms, checked in this order:
 * - `Authorization: Bearer <token>` (RFC 6750 §2.1), for clients whose configuration takes
 *   headers;
 * - `?skep_token=<token>` in the query (RFC 6750 §2.3), for clients that take only a URL: the
 *   URL Skep hands out carries it.
 *
 * Whichever form matched is removed before the middlewares and the server see the request,
 * so the token is never logged by audit nor forwarded upstream.
 *
 * The runner itself is a client of its proxy (it lists the tools it reports to the store): it
 * presents a token of its own, made at start and never stored (`SelfToken`), which the proxy
 * admits as the runner's request. Legacy SSE `POST /messages`
 * is admitted by its session id, which the proxy handed only to the authenticated
 * `GET /sse` (122 random bits; the 2024-11-05 transport's endpoint event is a relative URL
 * and would drop the query).
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { ACCESS_TOKEN_PARAM } from '../../shared/index.js';

const BEARER = /^Bearer +([^\s]+) *$/i;
const PARAM_PREFIX = `${ACCESS_TOKEN_PARAM}=`;

/** The smallest token accepted: 128 bits, hex. Skep's tokens have 256. */
const MIN_TOKEN_LENGTH = 32;

export class CallerToken {
  readonly #expected: Buffer;

  constructor(token: string) {
    // A short or empty token is a programming error in the caller: it would admit guessers.
    if (token.length < MIN_TOKEN_LENGTH) throw new Error('a workload access token needs at least 128 bits');
    this.#expected = Buffer.from(token, 'utf8');
  }

  /**
   * Whether the request carries the token, and its query without it. The `authorization`
   * header is deleted from `req` when it held the token.
   */
  admit(req: IncomingMessage, query: string): { admitted: boolean; query: string } {
    const header = req.headers.authorization;
    if (header !== undefined) {
      const m = BEARER.exec(header);
      if (m !== null && this.#matches(m[1] as string)) {
        delete req.headers.authorization;
        return { admitted: true, query: query.includes(PARAM_PREFIX) ? withoutToken(query).rest : query };
      }
    }
    if (!query.includes(PARAM_PREFIX)) return { admitted: false, query };
    const { given, rest } = withoutToken(query);
    return { admitted: given !== undefined && this.#matches(given), query: rest };
  }

  #matches(given: string): boolean {
    const bytes = Buffer.from(given, 'utf8');
    return bytes.length === this.#expected.length && timingSafeEqual(bytes, this.#expected);
  }
}

/** The runner's own bearer token: recognised (and removed) only in the `Authorization` header. */
export class SelfToken {
  readonly #header: Buffer;

  constructor(token: string) {
    if (token.length < MIN_TOKEN_LENGTH) throw new Error('a runner token needs at least 128 bits');
    this.#header = Buffer.from(`Bearer ${token}`, 'utf8');
  }

  /** True (and the header deleted) when the request is the runner's own. */
  claims(req: IncomingMessage): boolean {
    const header = req.headers.authorization;
    if (header === undefined) return false;
    const bytes = Buffer.from(header, 'utf8');
    if (bytes.length !== this.#header.length || !timingSafeEqual(bytes, this.#header)) return false;
    delete req.headers.authorization;
    return true;
  }
}

/** A query that is the token parameter alone, with a value no decoding changes (the URL Skep hands out). */
const TOKEN_ONLY = new RegExp(`^${ACCESS_TOKEN_PARAM}=([A-Za-z0-9_-]+)$`);

/** The token parameter's (first) value and the query without any of its occurrences. */
function withoutToken(query: string): { given: string | undefined; rest: string } {
  // The common case without building URLSearchParams (µs per request): the same answer.
  const only = TOKEN_ONLY.exec(query);
  if (only !== null) return { given: only[1], rest: '' };
  const params = new URLSearchParams(query);
  const given = params.get(ACCESS_TOKEN_PARAM) ?? undefined;
  params.delete(ACCESS_TOKEN_PARAM);
  return { given, rest: params.toString() };
}
