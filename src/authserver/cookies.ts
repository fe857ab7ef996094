/**
 * The two browser cookies of the authorization server (they stop a confused deputy: a client
 * anyone registered through DCR must not receive a code for a victim whose browser is already
 * logged in at the upstream):
 * - the **flow cookie** binds an authorization to the browser that started it. It holds up
 *   to `MAX_FLOWS` entries `<flowId>:<secret>` (a user may sign in to several clients at
 *   once, and workloads on one loopback host share cookies, which ignore ports — RFC 6265
 *   §8.5); storage keeps only the SHA-256 of each secret. The consent form and the upstream
 *   callback are honoured only with the entry of their flow.
 * - the **remembered cookie** holds a random id that storage maps to the user who last
 *   completed a login in this browser, so an approval that user gave a client is found
 *   before the upstream login (MCP security best practices, "Per-Client Consent Storage").
 *
 * Both are `HttpOnly; SameSite=Lax` (Lax, because the upstream returns to the callback with a
 * cross-site top-level GET). Over https they are `Secure` with the `__Host-` prefix (which
 * forces `Path=/` and forbids `Domain`, so a sibling host cannot plant them; RFC 6265bis
 * §4.1.3.2, and the best practices' "Consent Cookie Security"); over plain http — a
 * loopback issuer — they are scoped to the path of the OAuth endpoints instead. Names carry
 * a short digest of the issuer so two servers on one host name keep apart.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** Concurrent authorizations one browser may have in flight per server; older ones fall out. */
export const MAX_FLOWS = 5;

const ID_RE = /^[A-Za-z0-9_-]{16,64}$/;
const SECRET_RE = /^[A-Za-z0-9_-]{32,86}$/;

/** SHA-256 in base64url: how storage keeps cookie secrets. */
export function digest(value: string): string {
  return createHash('sha256').update(value).digest('base64url');
}

export interface FlowEntry {
  id: string;
  secret: string;
}

export class BrowserCookies {
  readonly flowName: string;
  readonly rememberName: string;
  /** The path the cookies are sent on: a callback outside it never sees them. */
  readonly path: string;
  readonly #attributes: string;

  /**
   * `authorizationEndpoint` is the URL browsers open (`authorization_endpoint_base_url` may
   * move it off the issuer); the cookies are scoped to its origin and directory.
   */
  constructor(issuer: string, authorizationEndpoint: string) {
    const url = new URL(authorizationEndpoint);
    const secure = url.protocol === 'https:';
    const prefix = secure ? '__Host-' : '';
    const tag = createHash('sha256').update(issuer).digest('hex').slice(0, 8);
    this.flowName = `${prefix}skep_flow_${tag}`;
    this.rememberName = `${prefix}skep_consent_${tag}`;
    this.path = secure ? '/' : url.pathname.slice(0, url.pathname.lastIndexOf('/')) || '/';
    this.#attributes = `Path=${this.path}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
  }

  /** The flow entries the browser presents (from every cookie of that name). */
  flows(req: IncomingMessage): FlowEntry[] {
    const out: FlowEntry[] = [];
    for (const value of readCookie(req, this.flowName)) {
      for (const part of value.split('.')) {
        const colon = part.indexOf(':');
        const id = part.slice(0, colon);
        const secret = part.slice(colon + 1);
        if (colon > 0 && ID_RE.test(id) && SECRET_RE.test(secret)) out.push({ id, secret });
      }
    }
    return out.slice(0, MAX_FLOWS * 2);
  }

  /** The secret the browser holds for one flow, if any. */
  flowSecret(req: IncomingMessage, flowId: string): string | undefined {
    return this.flows(req).find((e) => e.id === flowId)?.secret;
  }

  /** Set-Cookie that adds (or replaces) one flow entry, keeping the newest `MAX_FLOWS`. */
  withFlow(req: IncomingMessage, entry: FlowEntry, maxAgeSec: number): string {
    const kept = this.flows(req).filter((e) => e.id !== entry.id);
    const entries = [entry, ...kept].slice(0, MAX_FLOWS);
    return this.#set(this.flowName, entries.map((e) => `${e.id}:${e.secret}`).join('.'), maxAgeSec);
  }

  /** Set-Cookie that drops one flow entry (and the cookie when it was the last). */
  withoutFlow(req: IncomingMessage, flowId: string, maxAgeSec: number): string {
    const kept = this.flows(req).filter((e) => e.id !== flowId);
    if (kept.length === 0) return this.#set(this.flowName, '', 0);
    return this.#set(this.flowName, kept.map((e) => `${e.id}:${e.secret}`).join('.'), maxAgeSec);
  }

  /** The remembered-browser ids presented (at most two are looked at). */
  rememberedIds(req: IncomingMessage): string[] {
    return readCookie(req, this.rememberName)
      .filter((v) => SECRET_RE.test(v))
      .slice(0, 2);
  }

  remember(id: string, maxAgeSec: number): string {
    return this.#set(this.rememberName, id, maxAgeSec);
  }

  forget(): string {
    return this.#set(this.rememberName, '', 0);
  }

  #set(name: string, value: string, maxAgeSec: number): string {
    const expiry =
      maxAgeSec > 0 ? `Max-Age=${Math.floor(maxAgeSec)}` : 'Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT';
    return `${name}=${value}; ${expiry}; ${this.#attributes}`;
  }
}

/** Every value of a cookie in the request (RFC 6265 §5.4 allows the same name more than once). */
function readCookie(req: IncomingMessage, name: string): string[] {
  const header = req.headers.cookie;
  if (!header) return [];
  const values: string[] = [];
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=');
    if (eq === -1 || pair.slice(0, eq).trim() !== name) continue;
    values.push(pair.slice(eq + 1).trim());
  }
  return values;
}
