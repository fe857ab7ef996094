/**
 * Small HTTP helpers shared by the auth middlewares: bearer-token parsing, RFC 6750
 * challenges, and the header names that configuration may not set (they
 * belong to the transport or to the proxy). OAuth requests themselves — discovery, the token
 * endpoint, introspection — go through the client stack in `src/protocol/oauth`.
 */
import { createHash } from 'node:crypto';
import type { ProxyMiddlewareResult } from '../../proxy/index.js';
import { type OutboundPolicy, SkepError } from '../../../shared/index.js';

export type FetchLike = typeof fetch;

/**
 * The outbound address policy (`src/shared/net`) for endpoints a run configuration names.
 * Its author chose those hosts, so they may be loopback or private (any port); what a server
 * answers with — a discovered `jwks_uri`, authorization server, registration or token
 * endpoint — must be on one of those hosts or public, unless `allowPrivate` (the block's
 * `allowPrivateIP` / `insecureAllowHTTP`-style flag) says every private or loopback host
 * is fine. Link-local and cloud metadata addresses are refused whatever the configuration.
 */
export function configuredEndpointsPolicy(
  urls: readonly (string | undefined)[],
  options: { allowPrivate?: boolean; hint: string },
): OutboundPolicy {
  const hosts = new Set<string>();
  for (const value of urls) {
    if (value === undefined || value === '') continue;
    try {
      const { hostname } = new URL(value);
      if (hostname !== '') hosts.add(hostname);
    } catch {
      // not a URL: its own check reports it
    }
  }
  const all = options.allowPrivate === true;
  return { allowLoopback: all, allowPrivate: all, privateHosts: [...hosts], hint: options.hint };
}

/** Every outgoing call of this domain is bounded: a stalled endpoint must not hang a request. */
export const REQUEST_TIMEOUT_MS = 30_000;

/** RFC 6750 §2.1: `Authorization: Bearer <token>` (the scheme is case-insensitive, RFC 9110 §11.1). */
export function bearerFrom(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  const m = /^bearer[ ]+([^ ].*)$/i.exec(header.trim());
  return m?.[1]?.trim() || undefined;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** RFC 6750 §3 quoted-string parameter (quotes and backslashes escaped). */
function quote(value: string): string {
  return `"${value.replace(/["\\]/g, (c) => `\\${c}`)}"`;
}

/** A 401/403 with an RFC 6750 challenge; the body says what happened, never why in detail. */
export function challenge(
  status: 401 | 403,
  params: Record<string, string | undefined>,
  body: string,
): ProxyMiddlewareResult {
  const parts = Object.entries(params)
    .filter((e): e is [string, string] => e[1] !== undefined)
    .map(([k, v]) => `${k}=${quote(v)}`);
  return {
    status,
    headers: {
      'www-authenticate': parts.length === 0 ? 'Bearer' : `Bearer ${parts.join(', ')}`,
      'cache-control': 'no-store',
      'content-type': 'text/plain; charset=utf-8',
    },
    body,
  };
}

/**
 * Header names configuration may not inject: the transport's own (hop-by-hop per RFC 9110
 * §7.6.1, framing), proxy-identifying headers, and what the proxy itself computes.
 */
const RESTRICTED = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'forwarded',
  'x-real-ip',
]);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Throws `invalid_config` unless `name` is a header configuration may set. */
export function checkInjectableHeader(name: string, field: string): string {
  const lower = name.toLowerCase();
  if (!TOKEN.test(name))
    throw new SkepError('invalid_config', `${field}: "${name}" is not a valid header name`);
  if (RESTRICTED.has(lower) || lower.startsWith('proxy-') || lower.startsWith('x-forwarded-')) {
    throw new SkepError(
      'invalid_config',
      `${field}: header "${name}" is restricted and cannot be configured`,
    );
  }
  return lower;
}

/** The header an outgoing token is put in: `authorization`, or the configured one (checked). */
export function tokenHeader(name: string | undefined, field: string): string {
  return name === undefined ? 'authorization' : checkInjectableHeader(name, field);
}

/** Header values may not carry CR/LF (header injection). */
export function checkHeaderValue(value: string, field: string): void {
  if (/[\r\n\0]/.test(value))
    throw new SkepError('invalid_config', `${field}: the header value contains a line break`);
}
