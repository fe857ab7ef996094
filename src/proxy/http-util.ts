/**
 * Small HTTP helpers for the proxy's data plane (node:http, no framework on the hot path):
 * the DNS-rebinding guard, bounded body reading, hop-by-hop header stripping.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { errorMessage, INVALID_REQUEST } from './json-rpc.js';

const LOOPBACK = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

function hostnameOf(value: string): string {
  const v = value.trim().toLowerCase();
  if (v.startsWith('[')) {
    const end = v.indexOf(']');
    return end === -1 ? v : v.slice(0, end + 1);
  }
  const colon = v.indexOf(':');
  return colon === -1 ? v : v.slice(0, colon);
}

function isLoopback(name: string): boolean {
  return LOOPBACK.has(name) || name.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(name);
}

/**
 * DNS rebinding (MCP 2025-11-25 "Transports / Security Warning"): a page on an attacker's
 * domain that resolves to 127.0.0.1 still sends its own Host and Origin. Only loopback names,
 * the bind address and the configured extra names pass.
 */
export function createHostGuard(
  bindHost: string,
  allowedHosts: readonly string[],
): (headers: IncomingHttpHeaders) => string | undefined {
  const extra = new Set(allowedHosts.map((h) => h.toLowerCase()));
  const wildcard = bindHost === '0.0.0.0' || bindHost === '::';
  if (!wildcard && !isLoopback(bindHost)) extra.add(bindHost.toLowerCase());
  // Bound to every interface with no allow-list: remote clients use names we cannot know.
  const open = wildcard && extra.size === 0;
  const ok = (name: string): boolean => open || isLoopback(name) || extra.has(name);
  const seen = new Map<string, boolean>();
  const cachedOk = (name: string): boolean => {
    let v = seen.get(name);
    if (v === undefined) {
      v = ok(name);
      if (seen.size < 64) seen.set(name, v);
    }
    return v;
  };
  return (headers) => {
    const host = headers.host;
    if (host === undefined || !cachedOk(hostnameOf(host))) return `Host '${host ?? ''}' is not allowed`;
    const origin = headers.origin;
    if (origin !== undefined && origin !== 'null') {
      let name: string | undefined;
      try {
        name = new URL(origin).hostname.toLowerCase();
        if (name.includes(':')) name = `[${name.replace(/^\[|\]$/g, '')}]`;
      } catch {
        name = undefined;
      }
      if (name === undefined || !cachedOk(name)) return `Origin '${origin}' is not allowed`;
    } else if (origin === 'null') {
      return `Origin 'null' is not allowed`;
    }
    return undefined;
  };
}

export class BodyTooLarge extends Error {}

/** Reads a request body as UTF-8, refusing more than `limit` bytes. */
export function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) {
    req.resume();
    return Promise.reject(new BodyTooLarge());
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        chunks.length = 0;
        req.removeAllListeners('data');
        req.resume();
        reject(new BodyTooLarge());
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (size <= limit)
        resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', reject);
  });
}

/** Sends a JSON-RPC error body with an HTTP status (streamable HTTP error replies). */
export function sendRpcError(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  headers?: Record<string, string>,
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = errorMessage(null, code, message);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

export function sendJson(
  res: ServerResponse,
  status: number,
  value: unknown,
  headers?: Record<string, string>,
): void {
  const body = typeof value === 'string' ? value : JSON.stringify(value);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

export function badRequest(res: ServerResponse, message: string): void {
  sendRpcError(res, 400, INVALID_REQUEST, message);
}

/** RFC 9110 §7.6.1: connection-specific fields never cross a proxy. */
export const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
]);

/** Names listed in the Connection header are hop-by-hop too. */
export function connectionTokens(
  headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>,
): Set<string> {
  const value = headers['connection'];
  const out = new Set<string>();
  const text = Array.isArray(value) ? value.join(',') : value;
  if (text !== undefined) for (const t of text.split(',')) out.add(t.trim().toLowerCase());
  return out;
}
