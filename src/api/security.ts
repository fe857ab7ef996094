/**
 * DNS-rebinding guard: a browser page on an attacker's domain that resolves to 127.0.0.1
 * still sends its own Host and Origin. On loopback we accept only loopback names (plus
 * names the operator allows). Requests over the unix socket cannot come from a browser.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendError } from './errors.js';

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

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

export function isLoopbackName(hostname: string): boolean {
  return (
    LOOPBACK_HOSTS.has(hostname) || hostname.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(hostname)
  );
}

export function createHostGuard(options: { allowedHosts: readonly string[]; bindHost: string }) {
  const extra = new Set(options.allowedHosts.map((h) => h.toLowerCase()));
  const bindIsWildcard = options.bindHost === '0.0.0.0' || options.bindHost === '::';
  if (!isLoopbackName(options.bindHost) && !bindIsWildcard) extra.add(options.bindHost.toLowerCase());
  const allowed = (hostname: string): boolean =>
    isLoopbackName(hostname) || extra.has(hostname) || bindIsWildcard;

  return async function hostGuard(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    // Unix-socket peers have no remote address; browsers cannot reach them.
    if (request.socket.remoteAddress === undefined) return;
    const host = request.headers.host;
    if (host === undefined || !allowed(hostnameOf(host))) {
      await sendError(
        reply,
        403,
        'forbidden_host',
        `Host '${host ?? ''}' is not allowed; use localhost or 127.0.0.1`,
      );
      return;
    }
    const origin = request.headers.origin;
    if (origin !== undefined) {
      let originHost: string | undefined;
      try {
        originHost = new URL(origin).hostname.toLowerCase();
      } catch {
        originHost = undefined;
      }
      if (originHost === undefined || !allowed(originHost)) {
        await sendError(reply, 403, 'forbidden_host', `Origin '${origin}' is not allowed`);
      }
    }
  };
}
