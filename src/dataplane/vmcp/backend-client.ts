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
 * - Per call, nothing but the request itself: a POST's answer is read straight from undici's
 *   dispatch callbacks (no response body stream, no promise per chunk), and timeouts are
 *   deadlines that one shared sweep checks every `SWEEP_MS` (no timer per call), so a call
 *   times out within `SWEEP_MS` after its deadline.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { type Dispatcher, Pool } from 'undici';
import {
  INTERNAL_ERROR,
  jsonEvents,
  jsonRpcError,
  type JsonRpcMessage,
  REQUEST_CANCELLED,
  REQUEST_TIMEOUT,
  SseDecoder,
  UPSTREAM_UNAVAILABLE,
} from '../../protocol/index.js';
import { type ErrorCode, SeqTable } from '../../shared/index.js';

export const BACKEND_PROTOCOL_VERSION = '2025-11-25';

/**
 * A JSON-RPC error from the backend, or one the client makes up (timeout, unreachable). `code`
 * is the JSON-RPC code relayed to the client; `errorCode` is Skep's (`src/shared/errors.ts`)
 * for surfaces that report it: `gateway_timeout`, `unavailable` (not reached, or gone), else
 * `bad_gateway` (the backend answered with an error).
 */
export class BackendError extends Error {
  override readonly name = 'BackendError';
  readonly errorCode: ErrorCode;
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
    /** True when the backend could not be reached at all (counts against its health). */
    readonly unreachable = false,
  ) {
    super(message);
    this.errorCode =
      code === REQUEST_TIMEOUT
        ? 'gateway_timeout'
        : unreachable || code === UPSTREAM_UNAVAILABLE
          ? 'unavailable'
          : 'bad_gateway';
  }
}

/** HTTP status of a refused request (401/403 from the backend's auth). */
export class BackendHttpError extends BackendError {
  constructor(readonly status: number) {
    super(UPSTREAM_UNAVAILABLE, `backend answered HTTP ${status}`);
  }
}

export interface BackendCallbacks {
  /** A server → client request; resolves with the result or throws a BackendError. */
  onServerRequest(message: JsonRpcMessage): Promise<unknown>;
  /** Any notification the backend sends (progress inside a call is routed by `onProgress`). */
  onNotification(message: JsonRpcMessage): void;
}

/**
 * A result passed through as the backend sent it (its JSON text), so that the virtual session
 * relays it without re-serialising it (`CallOptions.raw`).
 */
export class RawJson {
  constructor(readonly json: string) {}
}

export interface CallOptions {
  timeoutMs: number;
  /**
   * The caller relays the result: when the answer is a plain JSON body in one of the two usual
   * layouts, resolve with a `RawJson` of the result's own text instead of the parsed value.
   */
  raw?: boolean;
  /** `notifications/progress` params for this call (the call carries a progress token). */
  onProgress?: (params: Record<string, unknown>) => void;
  /** Told the backend request id, e.g. to cancel it later. */
  onId?: (id: string) => void;
}

interface Pending {
  resolve(value: unknown): void;
  reject(err: Error): void;
  onProgress: ((params: Record<string, unknown>) => void) | undefined;
  /** `performance.now()` after which the call fails. */
  deadline: number;
  raw: boolean;
  method: string;
  timeoutMs: number;
}

/** How often the shared sweep looks for calls past their deadline, ms. */
export const SWEEP_MS = 100;

/** Sessions that may have calls in flight; the sweep runs while there are any. */
const watched = new Set<BackendSession>();
let sweeper: NodeJS.Timeout | undefined;

function watch(session: BackendSession): void {
  watched.add(session);
  if (sweeper === undefined) {
    sweeper = setInterval(sweep, SWEEP_MS);
    sweeper.unref();
  }
}

function sweep(): void {
  const now = performance.now();
  for (const session of watched) if (!session.expire(now)) watched.delete(session);
  if (watched.size === 0 && sweeper !== undefined) {
    clearInterval(sweeper);
    sweeper = undefined;
  }
}

const pools = new Map<string, Pool>();

/**
 * One keep-alive pool per backend origin, shared by every session of this process. It has no
 * connection cap: each backend session's standing GET holds a connection for as long as the
 * session lives, so a cap would let open sessions starve every call at that backend (with 64,
 * the 65th client session's calls waited for a connection until they timed out).
 */
export function poolFor(origin: string): Pool {
  let pool = pools.get(origin);
  if (pool === undefined) {
    pool = new Pool(origin, { pipelining: 1, keepAliveTimeout: 30_000 });
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

/** The number in a request id this module made (`v<n>`); 0, never a key, for any other id. */
function seqOf(id: string): number {
  const length = id.length;
  if (length < 2 || length > 16 || id.charCodeAt(0) !== 118 /* v */ || id.charCodeAt(1) === 48 /* 0 */)
    return 0;
  let n = 0;
  for (let i = 1; i < length; i++) {
    const digit = id.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return 0;
    n = n * 10 + digit;
  }
  return n;
}

/** How many own enumerable keys `m` has, without an array of them. */
function keyCount(m: object): number {
  let count = 0;
  for (const key in m) if (Object.hasOwn(m, key)) count++;
  return count;
}

export class BackendSession {
  readonly #url: URL;
  readonly #path: string;
  readonly #pool: Pool;
  /** A fresh object each call (the session adds its own headers to it); a promise only when auth must work for it. */
  readonly #headers: () => Record<string, string> | Promise<Record<string, string>>;
  readonly #callbacks: BackendCallbacks;
  /** Requests sent and not answered yet, by the number in their id (not a `Map`: seq-table.ts). */
  readonly #pending = new SeqTable<Pending>();
  #sessionId: string | undefined;
  #protocol = BACKEND_PROTOCOL_VERSION;
  #closed = false;
  #standing: AbortController | undefined;
  /** The backend's `initialize` result (capabilities). */
  initializeResult: Record<string, unknown> | undefined;
  /** The id of the last request sent (set synchronously by `request`, e.g. to cancel it later). */
  lastRequestId: string | undefined;

  constructor(
    url: string,
    headers: () => Record<string, string> | Promise<Record<string, string>>,
    callbacks: BackendCallbacks,
  ) {
    this.#url = new URL(url);
    this.#path = this.#url.pathname + this.#url.search;
    this.#pool = poolFor(this.#url.origin);
    this.#headers = headers;
    this.#callbacks = callbacks;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Initializes the session and opens the standing stream. `clientInfo` names the client in
   * the backend's logs and audit records (the virtual MCP server by default).
   */
  async open(
    timeoutMs: number,
    clientCapabilities: Record<string, unknown>,
    clientInfo: { name: string; version: string } = { name: 'skep-vmcp', version: '1' },
  ): Promise<void> {
    const result = (await this.request(
      'initialize',
      {
        protocolVersion: BACKEND_PROTOCOL_VERSION,
        capabilities: clientCapabilities,
        clientInfo,
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
      return Promise.reject(
        new BackendError(UPSTREAM_UNAVAILABLE, 'backend session closed', undefined, true),
      );
    const n = ++seq;
    const id = `v${n}`;
    this.lastRequestId = id;
    return new Promise<unknown>((resolve, reject) => {
      this.#pending.set(n, {
        resolve,
        reject,
        onProgress: options.onProgress,
        deadline: performance.now() + options.timeoutMs,
        raw: options.raw === true,
        method,
        timeoutMs: options.timeoutMs,
      });
      watch(this);
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
      this.#post(body, (err) => this.#fail(id, err));
    });
  }

  /**
   * Fails the calls whose deadline is past (the shared sweep calls it); false when nothing is
   * in flight any more.
   */
  expire(now: number): boolean {
    for (const [n, p] of this.#pending) {
      if (p.deadline > now) continue;
      this.#pending.delete(n);
      const id = `v${n}`;
      p.reject(
        new BackendError(REQUEST_TIMEOUT, `backend did not answer ${p.method} within ${p.timeoutMs} ms`),
      );
      void this.notify('notifications/cancelled', { requestId: id, reason: 'timeout' }).catch(
        () => undefined,
      );
    }
    return this.#pending.size > 0;
  }

  /** Cancels an in-flight request (the client cancelled it). */
  cancel(requestId: string, reason: string | undefined): void {
    const n = seqOf(requestId);
    const p = this.#pending.get(n);
    if (p === undefined) return;
    this.#pending.delete(n);
    p.reject(new BackendError(REQUEST_CANCELLED, 'request cancelled'));
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
    await new Promise<void>((resolve, reject) => this.#post(body, reject, resolve));
  }

  /** Ends the session at the backend (DELETE) and fails what is in flight. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#standing?.abort();
    watched.delete(this);
    for (const [n, p] of this.#pending) {
      p.reject(new BackendError(UPSTREAM_UNAVAILABLE, 'backend session closed', undefined, true));
      this.#pending.delete(n);
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
    const n = seqOf(id);
    const p = this.#pending.get(n);
    if (p === undefined) return;
    this.#pending.delete(n);
    p.reject(
      err instanceof BackendError
        ? err
        : new BackendError(
            UPSTREAM_UNAVAILABLE,
            `backend unreachable: ${(err as Error).message}`,
            undefined,
            true,
          ),
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

  /**
   * POSTs `body`; its answer is handled as it ends (`#answered`), in undici's callback: no
   * promise per call. `failed` gets what went wrong (the backend not reached, or its answer);
   * `done`, when given, is called once the answer was handled.
   */
  #post(body: string, failed: (err: unknown) => void, done?: () => void): void {
    // Without outgoing auth the headers are at hand: no promise, no microtask.
    const given = this.#headers();
    if (given instanceof Promise) {
      given.then((headers) => this.#postWith(headers, body, failed, done), failed);
      return;
    }
    this.#postWith(given, body, failed, done);
  }

  #postWith(
    headers: Record<string, string>,
    body: string,
    failed: (err: unknown) => void,
    done: (() => void) | undefined,
  ): void {
    headers['accept'] = 'application/json, text/event-stream';
    headers['content-type'] = 'application/json';
    headers['mcp-protocol-version'] = this.#protocol;
    if (this.#sessionId !== undefined) headers['mcp-session-id'] = this.#sessionId;
    const answered = (answer: PostAnswer): void => {
      try {
        this.#answered(answer);
      } catch (err) {
        failed(err);
        return;
      }
      done?.();
    };
    try {
      this.#pool.dispatch(
        { method: 'POST', path: this.#path, headers, body },
        new PostReader(this.#onMessage, answered, failed),
      );
    } catch (err) {
      failed(err);
    }
  }

  /** Handles the answer to a POST; throws a BackendError when it fails what was asked. */
  #answered(answer: PostAnswer): void {
    const sid = answer.headers['mcp-session-id'];
    if (typeof sid === 'string' && this.#sessionId === undefined) this.#sessionId = sid;
    const status = answer.status;
    if (status === 202) return;
    if (status === 401 || status === 403) throw new BackendHttpError(status);
    // An event stream was dispatched as it arrived.
    const text = answer.text;
    if (text === undefined) return;
    if (status === 404 && this.#sessionId !== undefined) {
      // The backend forgot the session (it restarted): everything in flight fails; the owner reopens.
      this.close();
      throw new BackendError(UPSTREAM_UNAVAILABLE, 'backend session expired', undefined, true);
    }
    if (text.length === 0) {
      if (status >= 400) throw new BackendError(UPSTREAM_UNAVAILABLE, `backend answered HTTP ${status}`);
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new BackendError(
        UPSTREAM_UNAVAILABLE,
        `backend answered HTTP ${status} with a body that is not JSON`,
      );
    }
    if (Array.isArray(parsed)) for (const m of parsed) this.#route(m as JsonRpcMessage);
    else if (!this.#passRaw(parsed as JsonRpcMessage, text)) this.#route(parsed as JsonRpcMessage);
  }

  /**
   * Settles a `raw` call with its result's own JSON text, when the answer (already parsed, so
   * valid) has exactly the keys jsonrpc, id and result laid out as `{"jsonrpc":"2.0","id":ID,
   * "result":R}` or as `{"result":R,"jsonrpc":"2.0","id":ID}` (the MCP SDK's): R is then exactly
   * the text between. Anything else is dispatched as usual.
   */
  #passRaw(m: JsonRpcMessage, text: string): boolean {
    const id = m.id;
    if (typeof id !== 'string' || m.method !== undefined || !('result' in m)) return false;
    const n = seqOf(id);
    const p = this.#pending.get(n);
    if (p === undefined || !p.raw || keyCount(m) !== 3) return false;
    // One of our ids (`seqOf` took it): `v` and digits, nothing to escape.
    const idJson = `"${id}"`;
    let json: string | undefined;
    const head = `{"jsonrpc":"2.0","id":${idJson},"result":`;
    if (text.startsWith(head) && text.endsWith('}')) json = text.slice(head.length, -1);
    else {
      const tail = `,"jsonrpc":"2.0","id":${idJson}}`;
      if (text.startsWith('{"result":') && text.endsWith(tail))
        json = text.slice(10, text.length - tail.length);
    }
    if (json === undefined) return false;
    this.#pending.delete(n);
    p.resolve(new RawJson(json));
    return true;
  }

  readonly #onMessage = (m: JsonRpcMessage): void => this.#route(m);

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
      const events = new SseDecoder({ onEvent: jsonEvents(this.#onMessage) });
      for await (const chunk of res.body as AsyncIterable<Buffer>) events.push(chunk);
      events.end();
    })()
      .catch(() => undefined)
      .finally(() => {
        // Reopen after the backend ended it (but not in a tight loop on a refusal).
        if (!this.#closed && this.#standing === abort) setTimeout(() => this.#openStanding(), 1000).unref();
      });
  }

  /**
   * One message from the backend: a response settles its call; requests and notifications go
   * to the callbacks.
   */
  #route(m: JsonRpcMessage): void {
    if (m.method === undefined) {
      const n = typeof m.id === 'string' ? seqOf(m.id) : 0;
      const p = this.#pending.get(n);
      if (p === undefined) return;
      this.#pending.delete(n);
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
          const e =
            err instanceof BackendError ? err : new BackendError(INTERNAL_ERROR, (err as Error).message);
          this.#answer(JSON.stringify(jsonRpcError(id, e.code, e.message, e.data)));
        },
      );
      return;
    }
    if (m.method === 'notifications/progress') {
      const token = m.params?.['progressToken'];
      const p = typeof token === 'string' ? this.#pending.get(seqOf(token)) : undefined;
      if (p?.onProgress !== undefined) {
        p.onProgress(m.params!);
        return;
      }
    }
    this.#callbacks.onNotification(m);
  }

  #answer(body: string): void {
    this.#post(body, () => undefined);
  }
}

interface PostAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  /** The JSON body; undefined for an event stream (its messages were dispatched). */
  text: string | undefined;
}

/**
 * Reads one POST's answer from undici's dispatch callbacks: a JSON body is collected, an event
 * stream is parsed and its messages dispatched as they arrive (progress and server requests
 * come before the final answer).
 */
class PostReader implements Dispatcher.DispatchHandler {
  #status = 0;
  #headers: IncomingHttpHeaders = {};
  #events: SseDecoder | undefined;
  #chunks: Buffer[] = [];
  readonly #onMessage: (m: JsonRpcMessage) => void;
  readonly #resolve: (answer: PostAnswer) => void;
  readonly #reject: (err: Error) => void;

  constructor(
    onMessage: (m: JsonRpcMessage) => void,
    resolve: (answer: PostAnswer) => void,
    reject: (err: Error) => void,
  ) {
    this.#onMessage = onMessage;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  /** Present so undici treats this as a (non-deprecated) dispatch handler. */
  onRequestStart(): void {}

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    this.#status = statusCode;
    this.#headers = headers;
    const type = headers['content-type'];
    if (typeof type === 'string' && type.startsWith('text/event-stream'))
      this.#events = new SseDecoder({ onEvent: jsonEvents(this.#onMessage) });
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#events !== undefined) this.#events.push(chunk);
    else this.#chunks.push(chunk);
  }

  onResponseEnd(): void {
    const chunks = this.#chunks;
    let text: string | undefined;
    this.#events?.end();
    if (this.#events === undefined)
      text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
    this.#resolve({ status: this.#status, headers: this.#headers, text });
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.#reject(err);
  }
}
