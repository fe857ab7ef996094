/**
 * Outgoing HTTP for registry sources, under the shared outbound address policy
 * (`OutboundClient` in `shared/net`): without `allow_private_ip` only public addresses are
 * reached; link-local and cloud metadata addresses never are. The policy checks the
 * addresses a name resolves to when the connection is made, and connects to the checked
 * address, so a name re-pointed after a first check (DNS rebinding) is refused for the
 * connection actually made; IP literals are checked before the request. Redirects are
 * followed here, by hand (at most 3), so every hop goes through the same checks. Every call
 * has a deadline (`AbortSignal.timeout`), 5 s unless the caller says otherwise.
 */
import type { Dispatcher } from 'undici';
import {
  describeConnectError,
  findOutboundRefusal,
  type ErrorCode,
  lazyRequire,
  OutboundAddressError,
  OutboundClient,
  type OutboundPolicy,
} from '../shared/index.js';

// undici loads only when a remote registry source is configured.
const loadUndici = lazyRequire<typeof import('undici')>('undici');

export const DEFAULT_FETCH_TIMEOUT_MS = 5_000;
const MAX_REDIRECTS = 3;
/** A registry larger than this is refused rather than read into memory. */
const MAX_BODY_BYTES = 64 * 1024 * 1024;

export type FetchFailureKind = 'unreachable' | 'timeout' | 'private' | 'status' | 'too_large';

const CODE_OF_KIND: Readonly<Record<FetchFailureKind, ErrorCode>> = {
  unreachable: 'registry_unavailable',
  timeout: 'registry_unavailable',
  private: 'registry_private_address',
  status: 'bad_gateway',
  too_large: 'registry_invalid',
};

export class SourceFetchError extends Error {
  override readonly name = 'SourceFetchError';
  get code(): ErrorCode {
    return CODE_OF_KIND[this.kind];
  }
  constructor(
    readonly kind: FetchFailureKind,
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

const PRIVATE_HINT = 'set allow_private_ip to use a source on a private network';

function policyFor(allowPrivate: boolean): OutboundPolicy {
  // `allow_private_ip` (ToolHive's registry setting) covers loopback too; link-local stays refused.
  return allowPrivate ? { allowLoopback: true, allowPrivate: true } : { hint: PRIVATE_HINT };
}

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
  readonly #client = new OutboundClient({ keepAliveTimeoutMs: 2_000 });

  /**
   * GET/HEAD `url`. Resolves with any HTTP status (the caller decides what a 404 means);
   * rejects with `SourceFetchError` when the server cannot be reached, is private, or is too slow.
   */
  async fetch(url: string, options: FetchOptions): Promise<HttpResponse> {
    const signal = AbortSignal.timeout(options.timeoutMs);
    let current = url;
    let headers = options.headers;
    for (let hop = 0; ; hop++) {
      const target = new URL(current);
      if (target.protocol !== 'http:' && target.protocol !== 'https:') {
        throw new SourceFetchError('unreachable', `${current}: only http and https are supported`);
      }
      let res: Dispatcher.ResponseData;
      try {
        res = await loadUndici().request(target, {
          method: options.method ?? 'GET',
          headers: { accept: 'application/json', 'user-agent': 'skep-registry', ...headers },
          dispatcher: this.#client.dispatcherFor(target, policyFor(options.allowPrivate)),
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
        // The registry's credentials are for its own origin: not sent on to another one.
        if (next.origin !== target.origin && headers?.['authorization'] !== undefined) {
          const { authorization: _dropped, ...rest } = headers;
          headers = rest;
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

  close(): Promise<void> {
    return this.#client.close();
  }
}

function classify(err: unknown, url: string, timeoutMs: number): SourceFetchError {
  if (err instanceof SourceFetchError) return err;
  // The connector's refusal arrives wrapped by undici.
  const refusal = findOutboundRefusal(err);
  if (refusal !== undefined) {
    // The connector does not know the registry's hint; the literal check does.
    const { host, address, addressClass } = refusal;
    const message = new OutboundAddressError(host, address, addressClass, PRIVATE_HINT).message;
    return new SourceFetchError('private', message, undefined, { cause: err });
  }
  const e = err as NodeJS.ErrnoException & { name?: string };
  if (e.name === 'TimeoutError' || e.name === 'AbortError' || e.code === 'UND_ERR_ABORTED') {
    return new SourceFetchError('timeout', `${url} did not answer within ${timeoutMs} ms`, undefined, {
      cause: err,
    });
  }
  // `getaddrinfo ENOTFOUND x` names a syscall; say what happened and what to check.
  return new SourceFetchError(
    'unreachable',
    `${url}: ${describeConnectError(err, url) ?? e.message}`,
    undefined,
    { cause: err },
  );
}
