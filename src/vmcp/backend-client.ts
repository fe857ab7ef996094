/**
 * One MCP client session at one backend workload (its Skep proxy, streamable HTTP,
 * MCP 2025-11-25 lifecycle), over a shared keep-alive undici pool. The virtual MCP server
 * opens one per (client session, backend), lazily, on the first request that needs it.
 *
 * - A request is a POST; the answer is JSON or an SSE stream on which the backend may send
 *   progress notifications and server → client requests (sampling, elicitation, roots)
 *   before the final response. Those requests are handed to `onServerRequest` — the client
 *   session that caused them — and the answer is POSTed back.
 * - A standing GET stream carries what the backend sends outside a call (list_changed,
 *   resources/updated, logging, requests); it is reopened while the session lives.
 * - Headers for the backend (outgoing auth) are computed per request by `headers()`.
 * - Timeouts are one `setTimeout` per call (no per-call `AbortSignal.timeout`).
 */
import { type Dispatcher, Pool } from 'undici';

export const BACKEND_PROTOCOL_VERSION = '2025-11-25';

export interface RpcMessage {
  jsonrpc?: '2.0';
  id?: string | number | null;
  method?: string;
  params?: Record<string, unknown>;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/** A JSON-RPC error from the backend, or one the client makes up (timeout, unreachable). */
export class BackendError extends Error {
  override readonly name = 'BackendError';
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
    /** True when the backend could not be reached at all (counts against its health). */
    readonly unreachable = false,
  ) {
    super(message);
  }
}

/** HTTP status of a refused request (401/403 from the backend's auth). */
export class BackendHttpError extends BackendError {
  constructor(readonly status: number) {
    super(-32000, `backend answered HTTP ${status}`);
  }
}

export interface BackendCallbacks {
  /** A server → client request; resolves with the result or throws a BackendError. */
  onServerRequest(message: RpcMessage): Promise<unknown>;
  /** Any notification the backend sends (progress inside a call is routed by `onProgress`). */
  onNotification(message: RpcMessage): void;
}

export interface CallOptions {
  timeoutMs: number;
  /** `notifications/progress` params for this call (the call carries a progress token). */
  onProgress?: (params: Record<string, unknown>) => void;
  /** Told the backend request id, e.g. to cancel it later. */
  onId?: (id: string) => void;
}

interface Pending {
  resolve(value: unknown): void;
  reject(err: Error): void;
  onProgress: ((params: Record<string, unknown>) => void) | undefined;
  timer: NodeJS.Timeout;
}

const pools = new Map<string, Pool>();

/** One keep-alive pool per backend origin, shared by every session of this process. */
export function poolFor(origin: string): Pool {
  let pool = pools.get(origin);
  if (pool === undefined) {
    pool = new Pool(origin, { connections: 64, pipelining: 1, keepAliveTimeout: 30_000 });
    pools.set(origin, pool);
  }
  return pool;
}

export async function closePools(): Promise<void> {
  const all = [...pools.values()];
  pools.clear();
  await Promise.allSettled(all.map((p) => p.close()));
}

let seq = 0;

export class BackendSession {
  readonly #url: URL;
  readonly #path: string;
  readonly #pool: Pool;
  readonly #headers: () => Promise<Record<string, string>>;
  readonly #callbacks: BackendCallbacks;
  readonly #pending = new Map<string, Pending>();
  #sessionId: string | undefined;
  #protocol = BACKEND_PROTOCOL_VERSION;
  #closed = false;
  #standing: AbortController | undefined;
  /** The backend's `initialize` result (capabilities). */
  initializeResult: Record<string, unknown> | undefined;

  constructor(url: string, headers: () => Promise<Record<string, string>>, callbacks: BackendCallbacks) {
    this.#url = new URL(url);
    this.#path = this.#url.pathname + this.#url.search;
    this.#pool = poolFor(this.#url.origin);
    this.#headers = headers;
    this.#callbacks = callbacks;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Initializes the session and opens the standing stream. */
  async open(timeoutMs: number, clientCapabilities: Record<string, unknown>): Promise<void> {
    const result = (await this.request(
      'initialize',
      {
        protocolVersion: BACKEND_PROTOCOL_VERSION,
        capabilities: clientCapabilities,
        clientInfo: { name: 'skep-vmcp', version: '1' },
      },
      { timeoutMs },
    )) as Record<string, unknown>;
    this.initializeResult = result;
    if (typeof result['protocolVersion'] === 'string') this.#protocol = result['protocolVersion'];
    await this.notify('notifications/initialized', undefined);
    this.#openStanding();
  }

  /** Sends a request; resolves with its result, rejects with a BackendError. */
  request(
    method: string,
    params: Record<string, unknown> | undefined,
    options: CallOptions,
  ): Promise<unknown> {
    if (this.#closed)
      return Promise.reject(new BackendError(-32000, 'backend session closed', undefined, true));
    const id = `v${++seq}`;
    return new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => {
        if (this.#pending.delete(id)) {
          reject(new BackendError(-32001, `backend did not answer ${method} within ${options.timeoutMs} ms`));
          void this.notify('notifications/cancelled', { requestId: id, reason: 'timeout' }).catch(
            () => undefined,
          );
        }
      }, options.timeoutMs);
      this.#pending.set(id, { resolve, reject, onProgress: options.onProgress, timer });
      options.onId?.(id);
      if (options.onProgress !== undefined && params !== undefined) {
        // The backend's progress for this call names our request id as its token.
        const meta = params['_meta'];
        params['_meta'] =
          typeof meta === 'object' && meta !== null
            ? Object.assign({}, meta, { progressToken: id })
            : { progressToken: id };
      }
      const body =
        params === undefined
          ? `{"jsonrpc":"2.0","id":"${id}","method":${JSON.stringify(method)}}`
          : `{"jsonrpc":"2.0","id":"${id}","method":${JSON.stringify(method)},"params":${JSON.stringify(params)}}`;
      this.#post(body).catch((err: unknown) => this.#fail(id, err));
    });
  }

  /** Cancels an in-flight request (the client cancelled it). */
  cancel(requestId: string, reason: string | undefined): void {
    const p = this.#pending.get(requestId);
    if (p === undefined) return;
    this.#pending.delete(requestId);
    clearTimeout(p.timer);
    p.reject(new BackendError(-32800, 'request cancelled'));
    void this.notify(
      'notifications/cancelled',
      reason === undefined ? { requestId } : { requestId, reason },
    ).catch(() => undefined);
  }

  async notify(method: string, params: Record<string, unknown> | undefined): Promise<void> {
    const body =
      params === undefined
        ? `{"jsonrpc":"2.0","method":${JSON.stringify(method)}}`
        : `{"jsonrpc":"2.0","method":${JSON.stringify(method)},"params":${JSON.stringify(params)}}`;
    await this.#post(body);
  }

  /** Ends the session at the backend (DELETE) and fails what is in flight. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#standing?.abort();
    for (const [id, p] of this.#pending) {
      clearTimeout(p.timer);
      p.reject(new BackendError(-32000, 'backend session closed', undefined, true));
      this.#pending.delete(id);
    }
    if (this.#sessionId !== undefined) {
      const headers: Record<string, string> = { 'mcp-session-id': this.#sessionId };
      this.#pool
        .request({ method: 'DELETE', path: this.#path, headers })
        .then((r) => r.body.dump())
        .catch(() => undefined);
    }
  }

  #fail(id: string, err: unknown): void {
    const p = this.#pending.get(id);
    if (p === undefined) return;
    this.#pending.delete(id);
    clearTimeout(p.timer);
    p.reject(
      err instanceof BackendError
        ? err
        : new BackendError(-32000, `backend unreachable: ${(err as Error).message}`, undefined, true),
    );
  }

  async #baseHeaders(accept: string): Promise<Record<string, string>> {
    const headers = await this.#headers();
    headers['accept'] = accept;
    headers['content-type'] = 'application/json';
    headers['mcp-protocol-version'] = this.#protocol;
    if (this.#sessionId !== undefined) headers['mcp-session-id'] = this.#sessionId;
    return headers;
  }

  async #post(body: string): Promise<void> {
    const headers = await this.#baseHeaders('application/json, text/event-stream');
    const res = await this.#pool.request({ method: 'POST', path: this.#path, headers, body });
    const sid = res.headers['mcp-session-id'];
    if (typeof sid === 'string' && this.#sessionId === undefined) this.#sessionId = sid;
    if (res.statusCode === 202) {
      await res.body.dump();
      return;
    }
    if (res.statusCode === 401 || res.statusCode === 403) {
      await res.body.dump();
      throw new BackendHttpError(res.statusCode);
    }
    const type = String(res.headers['content-type'] ?? '');
    if (type.startsWith('text/event-stream')) {
      await this.#readSse(res.body);
      return;
    }
    const text = await res.body.text();
    if (res.statusCode === 404 && this.#sessionId !== undefined) {
      // The backend forgot the session (it restarted): everything in flight fails; the owner reopens.
      this.close();
      throw new BackendError(-32000, 'backend session expired', undefined, true);
    }
    if (text.length === 0) {
      if (res.statusCode >= 400) throw new BackendError(-32000, `backend answered HTTP ${res.statusCode}`);
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new BackendError(-32000, `backend answered HTTP ${res.statusCode} with a body that is not JSON`);
    }
    if (Array.isArray(parsed)) for (const m of parsed) this.#dispatch(m as RpcMessage);
    else this.#dispatch(parsed as RpcMessage);
  }

  #openStanding(): void {
    if (this.#closed) return;
    const abort = new AbortController();
    this.#standing = abort;
    void (async () => {
      const headers = await this.#baseHeaders('text/event-stream');
      delete headers['content-type'];
      const res = await this.#pool.request({
        method: 'GET',
        path: this.#path,
        headers,
        signal: abort.signal,
      });
      if (res.statusCode !== 200) {
        await res.body.dump();
        return;
      }
      await this.#readSse(res.body);
    })()
      .catch(() => undefined)
      .finally(() => {
        // Reopen after the backend ended it (but not in a tight loop on a refusal).
        if (!this.#closed && this.#standing === abort) setTimeout(() => this.#openStanding(), 1000).unref();
      });
  }

  async #readSse(body: Dispatcher.ResponseData['body']): Promise<void> {
    body.setEncoding('utf8');
    let buffer = '';
    for await (const chunk of body as AsyncIterable<string>) {
      buffer += chunk;
      let end = buffer.indexOf('\n\n');
      while (end !== -1) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let data = '';
        for (const line of event.split('\n')) {
          if (line.startsWith('data:'))
            data += (data ? '\n' : '') + line.slice(line.charCodeAt(5) === 32 ? 6 : 5);
        }
        if (data !== '') {
          try {
            this.#dispatch(JSON.parse(data) as RpcMessage);
          } catch {
            /* a malformed event is skipped */
          }
        }
        end = buffer.indexOf('\n\n');
      }
    }
  }

  #dispatch(m: RpcMessage): void {
    if (m.method === undefined) {
      const id = String(m.id);
      const p = this.#pending.get(id);
      if (p === undefined) return;
      this.#pending.delete(id);
      clearTimeout(p.timer);
      if (m.error !== undefined) p.reject(new BackendError(m.error.code, m.error.message, m.error.data));
      else p.resolve(m.result);
      return;
    }
    if (m.id !== undefined && m.id !== null) {
      const id = m.id;
      this.#callbacks.onServerRequest(m).then(
        (result) =>
          this.#answer(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${JSON.stringify(result)}}`),
        (err: unknown) => {
          const e = err instanceof BackendError ? err : new BackendError(-32603, (err as Error).message);
          this.#answer(
            JSON.stringify({ jsonrpc: '2.0', id, error: { code: e.code, message: e.message, data: e.data } }),
          );
        },
      );
      return;
    }
    if (m.method === 'notifications/progress') {
      const token = m.params?.['progressToken'];
      const p = typeof token === 'string' ? this.#pending.get(token) : undefined;
      if (p?.onProgress !== undefined) {
        p.onProgress(m.params!);
        return;
      }
    }
    this.#callbacks.onNotification(m);
  }

  #answer(body: string): void {
    this.#post(body).catch(() => undefined);
  }
}
