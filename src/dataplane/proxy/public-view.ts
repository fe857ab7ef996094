/**
 * How a client reaches the proxy when a reverse proxy (an ingress) stands in front of it: the
 * path prefix the ingress strips, and the origin it serves. Every URL the proxy hands out — the
 * SSE transport's `endpoint` event (MCP 2024-11-05 "HTTP with SSE"), the RFC 9728 resource and
 * its metadata URL — is built from this view, so the client's next request takes the same
 * route back.
 *
 * The prefix is `endpoint_prefix` when configured; otherwise, only with `trust_proxy_headers`,
 * the request's `X-Forwarded-Prefix` (as the reference: the explicit setting wins, the header is
 * believed only when trusted). The origin comes from `X-Forwarded-Proto`, `X-Forwarded-Host`
 * and `X-Forwarded-Port`, again only when trusted. Any client can send these headers, so a value
 * that is not exactly what an ingress would send (a path without `//`, dot segments, query or
 * fragment; a host name with an optional port; `http` or `https`) is ignored, never repaired:
 * a hostile header must not turn into a URL that sends the client elsewhere.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from '../../shared/index.js';
import { endpointPrefixProblem } from './endpoint-prefix.js';

/** What the client sees of the proxy for one request. */
export interface PublicView {
  /** Put before the proxy's own paths (`/messages`, `/mcp`, `/.well-known/…`); '' for none. */
  readonly prefix: string;
  /** `scheme://host[:port]` the ingress serves, from trusted headers; undefined when none names it. */
  readonly origin: string | undefined;
}

export interface PublicViewOptions {
  /** `endpoint_prefix`, normalized (`normalizeEndpointPrefix`): wins over the header. */
  readonly endpointPrefix: string;
  /** `trust_proxy_headers`: believe the `X-Forwarded-*` headers. */
  readonly trustProxyHeaders: boolean;
  readonly logger: Logger;
}

/** Resolves one request's view from its headers. */
export type PublicViewOf = (headers: IncomingHttpHeaders) => PublicView;

/** The reference's SSE path: an ingress may name the whole stream URL's path as the prefix. */
const SSE_SUFFIX = '/sse';
/** A DNS name or IPv4 address, or a bracketed IPv6 address, with an optional port. */
const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?$/;
const PORT = /^\d{1,5}$/;

/** Why an `X-Forwarded-Prefix` value cannot be used, or undefined when it can. */
export function forwardedPrefixProblem(value: string): string | undefined {
  const problem = endpointPrefixProblem(value);
  if (problem !== undefined) return problem;
  if (value.includes('//')) return "must not hold '//'";
  if (value.split('/').some((segment) => segment === '.' || segment === '..'))
    return "must not hold '.' or '..' segments";
  return undefined;
}

/**
 * The prefix an `X-Forwarded-Prefix` names, normalized like `endpoint_prefix` (no trailing `/`);
 * an ingress that sends the stream's whole path (`/team-a/sse`) means `/team-a`, as the reference
 * reads it. Undefined when the value is refused.
 */
function prefixOf(value: string): string | undefined {
  if (forwardedPrefixProblem(value) !== undefined) return undefined;
  const trimmed = value.replace(/\/+$/, '');
  return trimmed.endsWith(SSE_SUFFIX) ? trimmed.slice(0, -SSE_SUFFIX.length) : trimmed;
}

/** The only value of a header (a repeated header is ambiguous: Node joins it with `, `). */
function single(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * `scheme://host[:port]` from `X-Forwarded-Host` (required), `X-Forwarded-Proto` (default
 * `http`: the proxy itself speaks plain HTTP) and `X-Forwarded-Port` (replaces the host's
 * port). Undefined when there is no host or any of them is malformed.
 */
function originOf(headers: IncomingHttpHeaders): string | undefined | null {
  const host = single(headers['x-forwarded-host']);
  if (host === undefined) return undefined;
  const proto = single(headers['x-forwarded-proto'])?.toLowerCase() ?? 'http';
  const port = single(headers['x-forwarded-port']);
  const m = HOST.exec(host);
  if (m === null || (proto !== 'http' && proto !== 'https')) return null;
  if (port !== undefined && (!PORT.test(port) || Number(port) > 65535)) return null;
  if (m[1] !== undefined && Number(m[1]) > 65535) return null;
  const name = m[1] === undefined ? host : host.slice(0, -(m[1].length + 1));
  const effectivePort = port ?? m[1];
  return `${proto}://${name.toLowerCase()}${effectivePort === undefined ? '' : `:${effectivePort}`}`;
}

const NO_VIEW: PublicView = Object.freeze({ prefix: '', origin: undefined });

/**
 * The resolver for one proxy. A malformed header is logged at debug the first time only: any
 * client can send one on every request, and the log must not be theirs to fill.
 */
export function publicViewResolver(options: PublicViewOptions): PublicViewOf {
  const { endpointPrefix, trustProxyHeaders, logger } = options;
  const fixed: PublicView =
    endpointPrefix === '' ? NO_VIEW : Object.freeze({ prefix: endpointPrefix, origin: undefined });
  if (!trustProxyHeaders) return () => fixed;
  let reported = false;
  const ignored = (header: string): void => {
    if (reported) return;
    reported = true;
    logger.debug({ header }, 'ignored a malformed forwarded header (logged once)');
  };
  return (headers) => {
    let prefix = endpointPrefix;
    if (prefix === '') {
      const raw = headers['x-forwarded-prefix'];
      if (raw !== undefined) {
        const parsed = typeof raw === 'string' ? prefixOf(raw) : undefined;
        if (parsed === undefined) ignored('x-forwarded-prefix');
        else prefix = parsed;
      }
    }
    const origin = originOf(headers);
    if (origin === null) ignored('x-forwarded-host');
    if (prefix === '' && (origin === undefined || origin === null)) return NO_VIEW;
    return { prefix, origin: origin ?? undefined };
  };
}
