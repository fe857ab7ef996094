/**
 * Outgoing HTTP for registry sources, with the SSRF guard.
 *
 * The guard checks the addresses a name RESOLVES to, at connect time (a `lookup` hook on
 * the undici connector), so a name that resolves to a private address — or is re-pointed
 * to one after a first check (DNS rebinding) — is refused for the connection actually
 * made. IP literals never reach `lookup`, so they are checked before the request.
 * Redirects are followed by hand (at most 3) so every hop goes through the same checks.
 * Every call has a deadline (`AbortSignal.timeout`), 5 s unless the caller says otherwise.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import type { Agent, Dispatcher } from 'undici';
import { lazyRequire } from '../shared/index.js';

// undici loads only when a remote registry source is configured.
const loadUndici = lazyRequire<typeof import('undici')>('undici');

export const DEFAULT_FETCH_TIMEOUT_MS = 5_000;
const MAX_REDIRECTS = 3;
/** A registry larger than this is refused rather than read into memory. */
const MAX_BODY_BYTES = 64 * 1024 * 1024;

export type FetchFailureKind = 'unreachable' | 'timeout' | 'private' | 'status' | 'too_large';

export class SourceFetchError extends Error {
  override readonly name = 'SourceFetchError';
  constructor(
    readonly kind: FetchFailureKind,
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

// Non-public ranges (RFC 6890 special-purpose registries, plus CGNAT and multicast).
const privateRanges = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 3],
] as const) {
  privateRanges.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::', 127],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  privateRanges.addSubnet(net, bits, 'ipv6');
}

/** True for loopback, private, link-local, CGNAT, documentation, multicast and unspecified addresses. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return privateRanges.check(address, 'ipv4');
  if (family !== 6) return true; // not an address at all: refuse rather than guess
  const lower = address.toLowerCase();
  // IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) embed an IPv4 address.
  const embedded = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (embedded !== null) return privateRanges.check(embedded[1]!, 'ipv4');
  const mappedHex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (mappedHex !== null) {
    const hi = Number.parseInt(mappedHex[1]!, 16);
    const lo = Number.parseInt(mappedHex[2]!, 16);
    return privateRanges.check(`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`, 'ipv4');
  }
  return privateRanges.check(address, 'ipv6');
}

function privateRefusal(host: string, address: string): SourceFetchError {
  return new SourceFetchError(
    'private',
    `${host} resolves to the private address ${address}; set allow_private_ip to use a source on a private network`,
  );
}

/** A `lookup` that resolves every address of the name and refuses if any is private. */
const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
    if (err !== null) {
      callback(err, '', 0);
      return;
    }
    const bad = addresses.find((a) => isPrivateAddress(a.address));
    if (bad !== undefined) {
      callback(privateRefusal(hostname, bad.address) as unknown as NodeJS.ErrnoException, '', 0);
      return;
    }
    if ((options as { all?: boolean }).all === true) {
      (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      return;
    }
    const first = addresses[0];
    if (first === undefined) {
      callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
      return;
    }
    callback(null, first.address, first.family);
  });
};

export interface HttpResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

export interface FetchOptions {
  allowPrivate: boolean;
  timeoutMs: number;
  method?: 'GET' | 'HEAD';
  headers?: Record<string, string>;
}

/** Owns the connection pools; `close()` ends keep-alive sockets (CLI processes must exit). */
export class RegistryHttp {
  private guarded: Agent | undefined;
  private open: Agent | undefined;
  private closed = false;

  private agent(allowPrivate: boolean): Dispatcher {
    if (this.closed) throw new Error('registry HTTP client is closed');
    if (allowPrivate) {
      this.open ??= new (loadUndici().Agent)({ keepAliveTimeout: 2_000 });
      return this.open;
    }
    this.guarded ??= new (loadUndici().Agent)({
      keepAliveTimeout: 2_000,
      connect: { lookup: guardedLookup },
    });
    return this.guarded;
  }

  /**
   * GET/HEAD `url`. Resolves with any HTTP status (the caller decides what a 404 means);
   * rejects with `SourceFetchError` when the server cannot be reached, is private, or is too slow.
   */
  async fetch(url: string, options: FetchOptions): Promise<HttpResponse> {
    const signal = AbortSignal.timeout(options.timeoutMs);
    let current = url;
    for (let hop = 0; ; hop++) {
      const target = new URL(current);
      if (target.protocol !== 'http:' && target.protocol !== 'https:') {
        throw new SourceFetchError('unreachable', `${current}: only http and https are supported`);
      }
      const host = target.hostname.replace(/^\[|\]$/g, '');
      if (!options.allowPrivate && isIP(host) !== 0 && isPrivateAddress(host))
        throw privateRefusal(host, host);
      let res: Dispatcher.ResponseData;
      try {
        res = await loadUndici().request(target, {
          method: options.method ?? 'GET',
          headers: { accept: 'application/json', 'user-agent': 'skep-registry', ...options.headers },
          dispatcher: this.agent(options.allowPrivate),
          signal,
        });
      } catch (err) {
        throw classify(err, current, options.timeoutMs);
      }
      const location = res.headers['location'];
      if (res.statusCode >= 300 && res.statusCode < 400 && typeof location === 'string') {
        await res.body.dump().catch(() => undefined);
        if (hop >= MAX_REDIRECTS)
          throw new SourceFetchError('unreachable', `${url}: more than ${MAX_REDIRECTS} redirects`);
        const next = new URL(location, target);
        // No silent downgrade: a source reached over https stays on https (http needs allow_private_ip).
        if (target.protocol === 'https:' && next.protocol !== 'https:' && !options.allowPrivate) {
          throw new SourceFetchError(
            'unreachable',
            `${current} redirects to ${next.protocol} (https required)`,
          );
        }
        current = next.toString();
        continue;
      }
      let text: string;
      try {
        const length = Number(res.headers['content-length'] ?? '0');
        if (length > MAX_BODY_BYTES) {
          await res.body.dump().catch(() => undefined);
          throw new SourceFetchError(
            'too_large',
            `${current}: body of ${length} bytes is larger than the 64 MiB limit`,
          );
        }
        const chunks: Buffer[] = [];
        let size = 0;
        for await (const chunk of res.body as AsyncIterable<Buffer>) {
          size += chunk.length;
          if (size > MAX_BODY_BYTES) {
            res.body.destroy();
            throw new SourceFetchError('too_large', `${current}: body is larger than the 64 MiB limit`);
          }
          chunks.push(chunk);
        }
        text = Buffer.concat(chunks).toString('utf8');
      } catch (err) {
        if (err instanceof SourceFetchError) throw err;
        throw classify(err, current, options.timeoutMs);
      }
      return { status: res.statusCode, headers: res.headers, text };
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([this.guarded?.close(), this.open?.close()]);
  }
}

function classify(err: unknown, url: string, timeoutMs: number): SourceFetchError {
  if (err instanceof SourceFetchError) return err;
  // The lookup hook's refusal arrives wrapped by the connector.
  let inner: unknown = err;
  for (let i = 0; i < 4 && inner instanceof Error; i++) {
    if (inner instanceof SourceFetchError) return inner;
    inner = inner.cause;
  }
  const e = err as NodeJS.ErrnoException & { name?: string };
  if (e.name === 'TimeoutError' || e.name === 'AbortError' || e.code === 'UND_ERR_ABORTED') {
    return new SourceFetchError('timeout', `${url} did not answer within ${timeoutMs} ms`, undefined, {
      cause: err,
    });
  }
  const code = e.code ?? '';
  return new SourceFetchError(
    'unreachable',
    `${url}: ${code !== '' ? `${code} ` : ''}${e.message}`,
    undefined,
    { cause: err },
  );
}
