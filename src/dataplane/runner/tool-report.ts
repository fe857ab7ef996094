/**
 * The tool names a workload's clients see, reported to the store by its runner (`skep list`,
 * the API's `tools`, the UI). The runner is a client of its own proxy: one MCP session over
 * streamable HTTP on loopback (MCP 2025-11-25 "Transports / Streamable HTTP"), so
 * `tools_filter`, `tools_override` and the middleware chain shape the list exactly as they do
 * for every other client. It lists the tools (following `nextCursor`, "Server Features /
 * Pagination") each time it is told the server (re)attached and, when the server declares
 * `capabilities.tools.listChanged` ("Server Features / Tools / List Changed Notification"),
 * keeps the session's GET stream open and lists again on each
 * `notifications/tools/list_changed`. Nothing here is on the path of a client's request.
 *
 * It speaks HTTP with `node:http`, which the proxy has loaded already: undici would add about
 * 17 MB to every runner (`scripts/runner-footprint.mjs` keeps it on demand).
 */
import { type ClientRequest, type IncomingMessage, request as httpRequest } from 'node:http';
import {
  jsonEvents,
  jsonRpcError,
  type JsonRpcMessage,
  METHOD_NOT_FOUND,
  resultMessage,
  SseDecoder,
} from '../../protocol/index.js';
import { describeError, type ErrorCode, type Logger, SKEP_VERSION } from '../../shared/index.js';

export interface ToolReportOptions {
  /** The proxy's streamable-HTTP endpoint on loopback, `http://127.0.0.1:<port>/mcp`. */
  url: string;
  /** The runner's own token at its proxy (`SelfToken`): admitted, stripped, not accounted. */
  accessToken: string | undefined;
  /**
   * Keep the session for list changes. False lists once and ends the session: in per-session
   * mode each session costs a server process of its own.
   */
  watch: boolean;
  /** Records the names (called when they differ from the last recorded); false: not recorded. */
  record(names: string[]): boolean;
  logger: Logger;
  workload: string;
  /** The workload is stopping: nothing more is listed (the session is ended by `close`). */
  signal: AbortSignal;
}

const PROTOCOL_VERSION = '2025-11-25';
/** Each request to the proxy, ms (convention: every outgoing call has a timeout). */
const REQUEST_TIMEOUT_MS = 30_000;
/** Ending the session at shutdown, ms. */
const DELETE_TIMEOUT_MS = 2000;
/** Pages of `tools/list` followed; a server that never stops paging is cut here. */
const MAX_PAGES = 100;
/** Largest JSON answer read, bytes. */
const MAX_ANSWER_BYTES = 16 * 1024 * 1024;
/** Reopening the GET stream after it ended: first delay and cap, ms. */
const STREAM_RETRY_MS = 1000;
const STREAM_RETRY_MAX_MS = 30_000;

/** The proxy no longer knows the session (HTTP 404, MCP 2025-11-25 "Session Management"). */
class SessionGone extends Error {
  override readonly name = 'SessionGone';
  readonly code: ErrorCode = 'not_found';
}

export class ToolReport {
  readonly #options: ToolReportOptions;
  readonly #stop = new AbortController();
  /** Closed, or the workload is stopping. */
  readonly #quiet: AbortSignal;
  #sessionId: string | undefined;
  #protocol = PROTOCOL_VERSION;
  #stream: ClientRequest | undefined;
  #streamRetryMs = STREAM_RETRY_MS;
  #running: Promise<void> | undefined;
  #again = false;
  #recorded: string | undefined;
  #seq = 0;
  /** The session is kept for the server's change notifications. */
  #hold = false;

  constructor(options: ToolReportOptions) {
    this.#options = options;
    this.#quiet = AbortSignal.any([this.#stop.signal, options.signal]);
  }

  /** Lists the tools again (the server attached, or announced a change); calls coalesce. */
  refresh(): void {
    if (this.#quiet.aborted) return;
    if (this.#running !== undefined) {
      this.#again = true;
      return;
    }
    this.#running = this.#listUntilCurrent().finally(() => {
      this.#running = undefined;
    });
  }

  /** Stops listening and ends the session at the proxy. Idempotent. */
  async close(): Promise<void> {
    if (this.#stop.signal.aborted) return;
    this.#stop.abort();
    this.#stream?.destroy();
    await this.#endSession();
  }

  async #listUntilCurrent(): Promise<void> {
    do {
      this.#again = false;
      try {
        await this.#listOnce();
      } catch (err) {
        if (this.#quiet.aborted) return;
        this.#options.logger.warn(
          { workload: this.#options.workload, reason: describeError(err) },
          'cannot list the server’s tools at the proxy; skep list shows the configured ones',
        );
      }
    } while (this.#again && !this.#quiet.aborted);
    // Nothing will be announced on a session that is not held: it ends here.
    if (!this.#hold) await this.#endSession();
  }

  async #listOnce(): Promise<void> {
    let names: string[];
    try {
      names = await this.#listTools();
    } catch (err) {
      if (!(err instanceof SessionGone)) throw err;
      // The proxy lost the session (an HTTP server it passes through restarted): open another.
      this.#sessionId = undefined;
      names = await this.#listTools();
    }
    if (this.#quiet.aborted) return;
    const text = JSON.stringify(names);
    if (text !== this.#recorded && this.#options.record(names)) this.#recorded = text;
  }

  async #listTools(): Promise<string[]> {
    if (this.#sessionId === undefined) await this.#open();
    const names: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = await this.#call('tools/list', cursor === undefined ? undefined : { cursor });
      const { tools, nextCursor } = (result ?? {}) as { tools?: unknown; nextCursor?: unknown };
      if (Array.isArray(tools)) {
        for (const tool of tools as unknown[]) {
          const name = (tool as { name?: unknown } | null)?.name;
          if (typeof name === 'string') names.push(name);
        }
      }
      cursor = typeof nextCursor === 'string' && nextCursor !== '' ? nextCursor : undefined;
      if (cursor === undefined) break;
    }
    return names;
  }

  /** MCP 2025-11-25 "Lifecycle / Initialization": initialize, then notifications/initialized. */
  async #open(): Promise<void> {
    this.#protocol = PROTOCOL_VERSION;
    const result = (await this.#call('initialize', {
      protocolVersion: PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: 'skep-runner', version: SKEP_VERSION },
    })) as { protocolVersion?: unknown; capabilities?: { tools?: { listChanged?: unknown } } } | null;
    if (typeof result?.protocolVersion === 'string') this.#protocol = result.protocolVersion;
    await this.#post('{"jsonrpc":"2.0","method":"notifications/initialized"}', undefined);
    // Without the capability the server never announces changes: no session to hold open.
    this.#hold = this.#options.watch && result?.capabilities?.tools?.listChanged === true;
    if (this.#hold) this.#openStream();
  }

  async #call(method: string, params: Record<string, unknown> | undefined): Promise<unknown> {
    const id = `skep-runner-${++this.#seq}`;
    const body = JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
    const reply = await this.#post(body, id);
    if (reply === undefined) throw new Error(`the proxy sent no answer to ${method}`);
    if (reply.error !== undefined)
      throw new Error(`${method} failed: ${String(reply.error.message ?? reply.error.code)}`);
    return reply.result;
  }

  /** POSTs one message; resolves with the answer to `id` (JSON or an SSE stream). */
  #post(body: string, id: string | undefined): Promise<JsonRpcMessage | undefined> {
    const signal = AbortSignal.any([this.#quiet, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]);
    return new Promise<JsonRpcMessage | undefined>((resolve, reject) => {
      const req = httpRequest(this.#options.url, {
        method: 'POST',
        headers: {
          ...this.#headers(),
          accept: 'application/json, text/event-stream',
          'content-type': 'application/json',
        },
        signal,
      });
      req.on('error', reject);
      req.on('response', (res) => {
        res.on('error', reject);
        const sid = res.headers['mcp-session-id'];
        if (typeof sid === 'string' && this.#sessionId === undefined) this.#sessionId = sid;
        const status = res.statusCode ?? 0;
        if (status === 404 && this.#sessionId !== undefined && id !== undefined) {
          res.resume();
          reject(new SessionGone('the proxy no longer knows the session'));
          return;
        }
        if (status < 200 || status >= 300) {
          res.resume();
          reject(new Error(`the proxy answered HTTP ${status}`));
          return;
        }
        if (id === undefined || status === 202) {
          res.resume();
          resolve(undefined);
          return;
        }
        if (String(res.headers['content-type']).startsWith('text/event-stream')) {
          // The answer comes as an event on this stream, possibly after notifications.
          readEvents(res, (m) => {
            if (m.id === id && m.method === undefined) {
              resolve(m);
              res.destroy();
            } else this.#onServerMessage(m);
          });
          res.on('end', () => resolve(undefined));
          return;
        }
        readJson(res).then((m) => resolve(m as JsonRpcMessage), reject);
      });
      req.end(body);
    });
  }

  /** The session's GET stream, where a server announces changes outside any request. */
  #openStream(): void {
    if (this.#quiet.aborted || this.#sessionId === undefined) return;
    this.#stream?.destroy();
    const req = httpRequest(this.#options.url, {
      method: 'GET',
      headers: { ...this.#headers(), accept: 'text/event-stream' },
      signal: this.#quiet,
    });
    this.#stream = req;
    let retry = true;
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      if (status === 200) {
        this.#streamRetryMs = STREAM_RETRY_MS;
        readEvents(res, (m) => this.#onServerMessage(m));
        res.on('error', () => undefined);
        return;
      }
      res.resume();
      // 405: the server offers no such stream. 404: the session is gone; the next listing
      // opens another session (and stream).
      if (status === 405) retry = false;
      if (status === 404) {
        retry = false;
        this.#sessionId = undefined;
        this.refresh();
      }
    });
    req.on('error', () => undefined);
    req.on('close', () => {
      if (this.#stream !== req) return;
      this.#stream = undefined;
      if (!retry || this.#quiet.aborted) return;
      const delay = this.#streamRetryMs;
      this.#streamRetryMs = Math.min(delay * 2, STREAM_RETRY_MAX_MS);
      setTimeout(() => this.#openStream(), delay).unref();
    });
    req.end();
  }

  #onServerMessage(m: JsonRpcMessage): void {
    if (m.method === 'notifications/tools/list_changed') {
      this.refresh();
      return;
    }
    if (m.method === undefined || m.id === undefined || m.id === null) return;
    // A request to this client: ping is answered (MCP 2025-11-25 "Utilities / Ping"); this
    // client declared no capabilities, so anything else is a method it does not have.
    const answer =
      m.method === 'ping'
        ? resultMessage(m.id, {})
        : JSON.stringify(jsonRpcError(m.id, METHOD_NOT_FOUND, 'Method not found'));
    this.#post(answer, undefined).catch(() => undefined);
  }

  async #endSession(): Promise<void> {
    const sessionId = this.#sessionId;
    this.#sessionId = undefined;
    this.#stream?.destroy();
    if (sessionId === undefined) return;
    // MCP 2025-11-25 "Session Management": a client that no longer needs a session ends it.
    await new Promise<void>((resolve) => {
      const req = httpRequest(this.#options.url, {
        method: 'DELETE',
        headers: { ...this.#headers(), 'mcp-session-id': sessionId },
        signal: AbortSignal.timeout(DELETE_TIMEOUT_MS),
      });
      req.on('error', () => resolve());
      req.on('response', (res) => {
        res.resume();
        res.on('end', resolve);
        res.on('error', () => resolve());
      });
      req.end();
    });
  }

  #headers(): Record<string, string> {
    const headers: Record<string, string> = { 'mcp-protocol-version': this.#protocol };
    if (this.#sessionId !== undefined) headers['mcp-session-id'] = this.#sessionId;
    if (this.#options.accessToken !== undefined)
      headers['authorization'] = `Bearer ${this.#options.accessToken}`;
    return headers;
  }
}

/** Reads a JSON body of at most `MAX_ANSWER_BYTES`. */
function readJson(res: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_ANSWER_BYTES) {
        res.destroy();
        reject(new Error('the answer is too large'));
      } else chunks.push(chunk);
    });
    res.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(new Error('the answer is not JSON'));
      }
    });
  });
}

/**
 * Server-sent events carrying JSON-RPC messages, one per event's `data`; malformed ones are
 * skipped, and a stream whose pending event outgrows `MAX_ANSWER_BYTES` is dropped.
 */
function readEvents(res: IncomingMessage, onMessage: (m: JsonRpcMessage) => void): void {
  const events = new SseDecoder(
    { onEvent: jsonEvents(onMessage), onOverflow: () => res.destroy() },
    { maxBufferSize: MAX_ANSWER_BYTES },
  );
  res.on('data', (chunk: Buffer) => events.push(chunk));
  res.on('end', () => events.end());
}
