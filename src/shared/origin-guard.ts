/**
 * The browser guard shared by every HTTP surface Skep serves (management API, workload
 * proxies, the embedded authorization server behind a proxy).
 *
 * Two attacks are in view:
 * - DNS rebinding (MCP 2025-11-25 "Transports / Security Warning"): a page on an attacker's
 *   domain that resolves to 127.0.0.1 still sends its own `Host`. On a loopback bind only
 *   loopback names pass, plus names the user configured.
 * - Other local pages: a page served by any other program on this machine (another port of
 *   `localhost`) is *same-site* for the browser, so SameSite cookies and a "loopback origin"
 *   rule do not stop it. An `Origin` is therefore accepted only when it is exactly the
 *   server's own origin (scheme, host and port, as the request's `Host` names it) or one the
 *   user configured. `Origin: null` (sandboxed frames, `file:` pages) is never accepted.
 */
import type { IncomingHttpHeaders } from 'node:http';

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

/** Strips an optional port from a Host header value (IPv6 literals keep their brackets). */
export function hostnameOf(hostHeader: string): string {
  const value = hostHeader.trim().toLowerCase();
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    return end === -1 ? value : value.slice(0, end + 1);
  }
  const colon = value.indexOf(':');
  return colon === -1 ? value : value.slice(0, colon);
}

/** Loopback host names: `localhost`, `*.localhost` (RFC 6761 §6.3), 127.0.0.0/8 and ::1. */
export function isLoopbackName(hostname: string): boolean {
  const name = hostname.toLowerCase();
  return LOOPBACK_NAMES.has(name) || name.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(name);
}

/**
 * True when a URL's host is one of the three standard loopback names (`localhost`, `127.0.0.1`,
 * `[::1]`): where the OAuth and OIDC endpoints Skep checks may use plain http (RFC 8252 §7.3).
 * Stricter than `isLoopbackName`, which also takes `*.localhost` and all of 127.0.0.0/8.
 */
export function isLoopbackUrl(url: URL): boolean {
  return url.hostname === 'localhost' || url.hostname === '127.0.0.1' || url.hostname === '[::1]';
}

/** True for a bind address that listens on every interface. */
export function isWildcardAddress(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '[::]' || host === '';
}

/**
 * Normalizes an origin (`scheme://host[:port]`) for exact comparison: lower case, default
 * port dropped. Returns undefined for anything that is not an http(s) origin.
 */
export function normalizeOrigin(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.username !== '' || url.password !== '') return undefined;
  // URL.origin drops default ports and lower-cases scheme and host.
  return url.origin;
}

export interface OriginGuardOptions {
  /** The address the server is bound to. */
  bindHost: string;
  /** Extra host names (no port) accepted in `Host` besides loopback names and the bind address. */
  allowedHosts?: readonly string[];
  /** Origins accepted besides the server's own (`https://app.example.com`, exact). */
  allowedOrigins?: readonly string[];
  /** The scheme the server is reached with (its own origin is `<scheme>://<Host>`). */
  scheme?: 'http' | 'https';
}

/** Checks a request's `Host` and `Origin`; returns the reason for a refusal, or undefined. */
export type OriginGuard = (headers: IncomingHttpHeaders) => string | undefined;

/**
 * Builds the guard. Misuse (an allowed origin that is not an http(s) origin) throws: callers
 * validate user input before they get here.
 */
export function createOriginGuard(options: OriginGuardOptions): OriginGuard {
  const scheme = options.scheme ?? 'http';
  const origins = new Set<string>();
  for (const value of options.allowedOrigins ?? []) {
    const origin = normalizeOrigin(value);
    if (origin === undefined) throw new Error(`allowed origin '${value}' is not an http(s) origin`);
    origins.add(origin);
  }
  const hosts = new Set((options.allowedHosts ?? []).map((h) => h.toLowerCase()));
  for (const origin of origins) hosts.add(hostnameOf(new URL(origin).host));
  const wildcard = isWildcardAddress(options.bindHost);
  if (!wildcard && !isLoopbackName(options.bindHost)) hosts.add(hostnameOf(options.bindHost));
  // Bound to every interface with no names configured: clients use names we cannot know.
  // Such a bind is only allowed with authentication; the Origin rule below still holds.
  const anyHost = wildcard && hosts.size === 0;
  const hostOk = (name: string): boolean => anyHost || isLoopbackName(name) || hosts.has(name);

  // The hot path (every proxied MCP request) sees the same few values again and again.
  const seen = new Map<string, string | undefined>();
  const check = (host: string | undefined, origin: string | undefined): string | undefined => {
    if (host === undefined || host === '' || !hostOk(hostnameOf(host)))
      return `Host '${host ?? ''}' is not allowed; use localhost or 127.0.0.1${hosts.size > 0 ? ` or ${[...hosts].join(', ')}` : ''}`;
    if (origin === undefined) return undefined;
    const normalized = normalizeOrigin(origin);
    if (normalized !== undefined) {
      if (origins.has(normalized)) return undefined;
      const own = normalizeOrigin(`${scheme}://${host}`);
      if (own !== undefined && own === normalized) return undefined;
    }
    return `Origin '${origin}' is not allowed: only this server's own origin and configured origins may call it`;
  };
  return (headers) => {
    const host = headers.host;
    const origin = headers.origin;
    const key = `${host ?? ''}\n${origin ?? '\u0000'}`;
    if (seen.has(key)) return seen.get(key);
    const verdict = check(host, origin);
    if (seen.size < 128) seen.set(key, verdict);
    return verdict;
  };
}
