/**
 * Health of a remote MCP server (`remote_url`). The runner cannot restart a server it does
 * not own, so instead of giving up it keeps probing: while the server is unreachable it
 * retries with a capped exponential backoff (and the proxy answers 503), and once healthy it
 * re-checks at a steady interval. Any HTTP answer below 500 (including 401/405) means the
 * server is there; connection errors, timeouts and 5xx mean it is not.
 */
import { describeConnectError, describeError, sleepUnlessAborted } from '../../../shared/index.js';
import type { FetchLike } from './http.js';

export interface RemoteHealthPolicy {
  /** First retry delay after a failed probe, ms; doubles per failure. */
  initialDelayMs: number;
  maxDelayMs: number;
  /** Steady re-check interval while healthy, ms. */
  intervalMs: number;
  /** One probe's timeout, ms. */
  probeTimeoutMs: number;
}

export const DEFAULT_REMOTE_HEALTH: Readonly<RemoteHealthPolicy> = Object.freeze({
  initialDelayMs: 1000,
  maxDelayMs: 60_000,
  intervalMs: 30_000,
  probeTimeoutMs: 10_000,
});

/** Undefined when healthy, else why not. */
export async function probeRemote(
  url: string,
  transport: 'sse' | 'streamable-http',
  options: { fetch?: FetchLike; timeoutMs?: number; headers?: Readonly<Record<string, string>> } = {},
): Promise<string | undefined> {
  const fetchFn = options.fetch ?? fetch;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), options.timeoutMs ?? DEFAULT_REMOTE_HEALTH.probeTimeoutMs);
  try {
    const res =
      transport === 'sse'
        ? await fetchFn(url, {
            headers: { ...options.headers, accept: 'text/event-stream' },
            signal: abort.signal,
          })
        : await fetchFn(url, {
            method: 'POST',
            headers: {
              ...options.headers,
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
            },
            body: JSON.stringify({ jsonrpc: '2.0', id: 'skep-health', method: 'ping' }),
            signal: abort.signal,
          });
    // An SSE stream never ends by itself: only the status matters.
    abort.abort();
    await res.body?.cancel().catch(() => undefined);
    return res.status >= 500 ? `the remote server answered ${res.status}` : undefined;
  } catch (err) {
    if (abort.signal.aborted) return 'the remote server did not answer in time';
    // `fetch failed` says nothing: name the host and the system's reason (DNS, refused, TLS).
    return `the remote server is unreachable: ${describeConnectError(err, url) ?? describeError(err)}`;
  } finally {
    clearTimeout(timer);
  }
}

export interface RemoteWatch {
  url: string;
  transport: 'sse' | 'streamable-http';
  policy?: Partial<RemoteHealthPolicy>;
  fetch?: FetchLike;
  /** Sent with every probe (the headers the proxy adds to every request for the server). */
  headers?: Readonly<Record<string, string>>;
  signal: AbortSignal;
  /** The server became healthy (first time or again); a rejection counts as a failed probe. */
  onHealthy(): Promise<void>;
  /** The server is not usable; the next probe is in `retryInMs`. */
  onUnhealthy(reason: string, retryInMs: number, failures: number): void;
}

const sleep = sleepUnlessAborted;

/** Probes until `signal` aborts; never gives up. */
export async function watchRemote(w: RemoteWatch): Promise<void> {
  const policy = { ...DEFAULT_REMOTE_HEALTH, ...w.policy };
  let healthy = false;
  let failures = 0;
  while (!w.signal.aborted) {
    let reason = await probeRemote(w.url, w.transport, {
      timeoutMs: policy.probeTimeoutMs,
      ...(w.fetch ? { fetch: w.fetch } : {}),
      ...(w.headers ? { headers: w.headers } : {}),
    });
    if (reason === undefined && !healthy) {
      try {
        await w.onHealthy();
      } catch (err) {
        reason = (err as Error).message;
      }
    }
    if (w.signal.aborted) return;
    if (reason === undefined) {
      healthy = true;
      failures = 0;
      await sleep(policy.intervalMs, w.signal);
      continue;
    }
    healthy = false;
    failures++;
    const delay = Math.min(policy.initialDelayMs * 2 ** (failures - 1), policy.maxDelayMs);
    w.onUnhealthy(reason, delay, failures);
    await sleep(delay, w.signal);
  }
}
