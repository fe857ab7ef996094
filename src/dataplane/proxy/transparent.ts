/**
 * Transparent mode: the server speaks HTTP itself (streamable HTTP or the legacy SSE
 * transport) and the proxy passes traffic through, streaming, keeping the server's session
 * headers (servers that issue no session id work unchanged). What the proxy still does:
 * Host/Origin checks and middlewares (before this module), hop-by-hop and credential
 * stripping (the client's Authorization/Cookie never reach the server; auth middlewares add
 * what the server should see through `outboundHeaders`), and the tools filter/override.
 *
 * After the server restarts it no longer knows the old session ids; it answers 404 and the
 * clients re-initialize (MCP 2025-11-25 "Session Management") — unless the upstream comes with
 * a session store (streamable HTTP; the runner gives one to every such workload): then the
 * proxy re-initializes in the client's place and sessions continue through any proxy sharing
 * the store (`shared-sessions.ts`). Legacy SSE sessions stay with the proxy that holds their
 * event stream: the answers travel on that stream, through that proxy's reply hooks.
 *
 * What the server sends on its own (requests to the client such as `sampling/createMessage`,
 * notifications such as log lines), on any event stream or in a JSON body, passes the
 * middlewares' screen as on the stdio bridge: relayed, rewritten, or stopped (a stopped
 * request is answered to the server with the screen's error). With no screen, nothing that
 * no reply hook needs is parsed.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Agent } from 'undici';
import { type Logger, lazyRequire } from '../../shared/index.js';
import { hasMediaType, NOSNIFF, sendRefusal } from './http-util.js';
import {
  errorMessage,
  INVALID_PARAMS,
  isRequest,
  type JsonRpcId,
  type JsonRpcMessage,
  PROTOCOL_ERRORS,
  SseDecoder,
} from '../../protocol/index.js';
import { messagesEndpoint } from './endpoint-prefix.js';
import type { PublicViewOf } from './public-view.js';
import { oversizedAnswer } from './line-channel.js';
import { SSE_HEADERS } from './outlets.js';
import { runReplyHooks, type ServerMessageScreen } from './reply-hooks.js';
import { SharedSessions } from './shared-sessions.js';
import type { ToolPolicy } from './tool-policy.js';
import type { OutboundSigner, ProxyLimits, ProxyUpstream, ReplyHook } from './types.js';

// undici is only needed for HTTP upstreams; stdio workloads never load it.
const loadUndici = lazyRequire<typeof import('undici')>('undici');

type HttpUpstream = Extract<ProxyUpstream, { kind: 'http' }>;
type UpstreamResponse = Awaited<ReturnType<typeof import('undici').request>>;

/** The notification that completes a replayed initialization (MCP 2025-11-25 "Lifecycle"). */
const INITIALIZED_NOTIFICATION = '{"jsonrpc":"2.0","method":"notifications/initialized"}';

/** Client request headers that mean something to an MCP server. Everything else stays here. */
const FORWARDED_REQUEST_HEADERS = [
  'accept',
  'content-type',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
];
/**
 * Server response headers passed back. Nothing else is: in particular no `Set-Cookie`. The
 * proxy's origin is `http://127.0.0.1:<port>`, and cookies are scoped by host, not port
 * (RFC 6265 §8.5), so a remote server's cookie would be sent to the management API, every
 * other workload and their authorization servers on the same host (cookie tossing over their
 * session and flow cookies). MCP clients authenticate with headers, not cookies.
 */
const FORWARDED_RESPONSE_HEADERS = [
  'content-type',
  'mcp-session-id',
  'mcp-protocol-version',
  'cache-control',
  'www-authenticate',
  'retry-after',
];

/**
 * Makes a relayed response inert on the proxy's origin: the server is remote
 * and not trusted with that origin, where a page could call this workload's tools (same
 * origin) and read the answers. Always `nosniff`; a body that is not JSON or an event stream
 * (an HTML error page, or anything a hostile server sends) gets `Content-Security-Policy:
 * sandbox`: the browser renders it in an opaque origin with scripts, forms and plugins off
 * (the CSP Level 3 `sandbox` directive, with no `allow-*` flags). It is still served, not
 * refused with a 502, because such bodies are mostly real error pages whose status (401 with
 * `WWW-Authenticate`, 404 for an expired session, 429) the client must see unchanged.
 */
function inertRelayHeaders(headers: Record<string, string>): Record<string, string> {
  headers['x-content-type-options'] = NOSNIFF;
  const type = headers['content-type'];
  if (!hasMediaType(type, 'application/json') && !hasMediaType(type, 'text/event-stream'))
    headers['content-security-policy'] = 'sandbox';
  return headers;
}

interface SseSession {
  readonly id: string;
  messagesUrl: string | undefined;
  readonly abort: AbortController;
  /** Reply hooks of in-flight requests, by JSON id (their answers come on the stream). */
  readonly replies: Map<string, ReplyHook[]>;
}

/** What a request body becomes on its way out, and the hooks its answers need. */
interface Rewritten {
  body: string | undefined;
  /** Reply hooks by the JSON text of the request id. */
  replies: Map<string, ReplyHook[]>;
  /** An answer to send instead of forwarding (an unknown tool). */
  error?: string;
}

interface ForwarderDeps {
  logger: Logger;
  limits: ProxyLimits;
  policy: ToolPolicy;
  /** The client's view of the proxy: its prefix goes before `/messages` in the SSE `endpoint` event. */
  publicView: PublicViewOf;
  /** The middlewares' judge of what the server sends on its own (`serverMessageScreen`). */
  screen?: ServerMessageScreen | undefined;
}

/** Sends the server one JSON-RPC message of the proxy's (the answer to a request it stopped). */
type AnswerServer = (message: string) => void;

/** What is relayed of one server message: its text, or nothing (undefined); later when a hook is async. */
type Relayed = string | undefined | Promise<string | undefined>;

export class TransparentForwarder {
  readonly #agent: Agent;
  readonly #sseSessions = new Map<string, SseSession>();
  #up = true;
  #downReason = '';

  readonly #upstream: HttpUpstream;
  readonly #deps: ForwarderDeps;
  /** Streamable-HTTP sessions kept in the upstream's session store, if it has one. */
  readonly #sessions: SharedSessions | undefined;

  constructor(upstream: HttpUpstream, deps: ForwarderDeps) {
    this.#upstream = upstream;
    this.#deps = deps;
    // Validate at construction: a bad URL is a programming error in the caller.
    new URL(upstream.url);
    this.#agent = new (loadUndici().Agent)({ keepAliveTimeout: 30_000, connections: 256 });
    this.#sessions =
      upstream.transport === 'streamable-http' && upstream.sessions !== undefined
        ? new SharedSessions(upstream.sessions, {
            upstreamUrl: upstream.url,
            logger: deps.logger,
            maxCached: deps.limits.maxSessions,
          })
        : undefined;
  }

  get isUp(): boolean {
    return this.#up;
  }

  down(reason: string): void {
    this.#up = false;
    this.#downReason = reason;
    for (const s of this.#sseSessions.values()) s.abort.abort();
    this.#sseSessions.clear();
  }

  close(): void {
    this.down('proxy closed');
    void this.#agent.close().catch(() => {});
  }

  async handle(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    query: string,
    body: string | undefined,
    outbound: Record<string, string> | undefined,
    sign?: OutboundSigner,
    hooks: readonly ReplyHook[] = [],
  ): Promise<void> {
    if (!this.#up) {
      sendRefusal(res, PROTOCOL_ERRORS.upstream_unavailable, `MCP server unavailable: ${this.#downReason}`);
      return;
    }
    if (this.#upstream.transport === 'streamable-http') {
      if (path !== '/mcp') {
        sendRefusal(res, PROTOCOL_ERRORS.no_endpoint, 'This server speaks streamable HTTP; use /mcp');
        return;
      }
      await this.#forwardStreamable(req, res, this.#rewriteRequest(body, hooks), outbound, sign);
      return;
    }
    if (path === '/sse' && req.method === 'GET') await this.#openSse(req, res, outbound, sign);
    else if ((path === '/messages' || path === '/message') && req.method === 'POST')
      await this.#postSse(res, query, this.#rewriteRequest(body, hooks), outbound, sign);
    else
      sendRefusal(
        res,
        PROTOCOL_ERRORS.no_endpoint,
        'This server speaks the SSE transport; use /sse and /messages',
      );
  }

  #headersFor(
    req: IncomingMessage | undefined,
    outbound: Record<string, string> | undefined,
  ): Record<string, string> {
    const headers: Record<string, string> = {};
    if (req !== undefined) {
      for (const name of FORWARDED_REQUEST_HEADERS) {
        const v = req.headers[name];
        if (typeof v === 'string') headers[name] = v;
      }
    }
    Object.assign(headers, this.#upstream.headers, outbound);
    return headers;
  }

  /**
   * Applies the tools policy to a request body and collects the reply hooks its answers need:
   * the policy's for a `tools/list` (outermost: it renames after the middlewares judged the
   * server's own names), then the middlewares' (`hooks`, for a single request). With a screen,
   * every request is listed (with no hooks, maybe): its answer then comes through the
   * bounded reader that screens what the server sends beside it, and an oversized message
   * answers it with an error naming the limit instead of leaving it waiting.
   */
  #rewriteRequest(body: string | undefined, hooks: readonly ReplyHook[]): Rewritten {
    const replies = new Map<string, ReplyHook[]>();
    const policy = this.#deps.policy;
    const screened = this.#deps.screen !== undefined;
    if (body === undefined || (policy.passthrough && hooks.length === 0 && !screened))
      return { body, replies };
    const parsed = JSON.parse(body) as JsonRpcMessage | JsonRpcMessage[];
    const messages = Array.isArray(parsed) ? parsed : [parsed];
    let changed = false;
    for (const m of messages) {
      if (m?.method === undefined || m.id === undefined || m.id === null) continue;
      const key = JSON.stringify(m.id);
      const forThis: ReplyHook[] = [];
      if (!policy.passthrough && m.method === 'tools/list')
        forThis.push((reply) => {
          if (reply.result !== undefined) policy.applyToList(reply.result);
        });
      if (!Array.isArray(parsed)) forThis.push(...hooks);
      if (forThis.length > 0 || screened) replies.set(key, forThis);
      if (!policy.passthrough && m.method === 'tools/call') {
        const name = m.params?.['name'];
        const original = typeof name === 'string' ? policy.resolveCall(name) : undefined;
        if (original === undefined)
          return {
            body,
            replies,
            error: errorMessage(m.id, INVALID_PARAMS, `Unknown tool: ${String(name)}`),
          };
        if (original !== name) {
          (m.params as Record<string, unknown>)['name'] = original;
          changed = true;
        }
      }
    }
    return { body: changed ? JSON.stringify(parsed) : body, replies };
  }

  /**
   * What to relay of one server message (the JSON text of a JSON body or of one SSE event):
   * an answer to a request with reply hooks passes them; a request or notification the server
   * sends on its own passes the screen (its verdict as on the stdio bridge: relayed as written,
   * rewritten, or stopped; a stopped request is answered to the server through `answer`, a
   * stopped notification dropped). Text neither applies to passes unchanged and, with no
   * screen, unparsed. Undefined when nothing of it is left to relay. Asynchronous only when a
   * hook is.
   */
  #judge(text: string, replies: Map<string, ReplyHook[]>, answer: AnswerServer): Relayed {
    const screen = this.#deps.screen;
    const screening = screen !== undefined && maySendOnItsOwn(text);
    if (replies.size === 0 && !screening) return text;
    let parsed: JsonRpcMessage | JsonRpcMessage[];
    try {
      parsed = JSON.parse(text) as JsonRpcMessage | JsonRpcMessage[];
    } catch {
      return text;
    }
    const batch = Array.isArray(parsed);
    const messages = Array.isArray(parsed) ? parsed : [parsed];
    const kept: JsonRpcMessage[] = [];
    const pending: Promise<void>[] = [];
    let changed = false;
    for (const m of messages) {
      if (m === null || typeof m !== 'object') {
        kept.push(m);
        continue;
      }
      if (m.method !== undefined) {
        // `text` is the whole batch when it came in one, as for the reply hooks.
        const verdict = screening ? screen(m, text) : undefined;
        if (verdict === undefined || verdict === 'rewritten') {
          kept.push(m);
          if (verdict === 'rewritten') changed = true;
          continue;
        }
        changed = true;
        const { code, message, data } = verdict.error;
        if (isRequest(m)) answer(errorMessage(m.id, code, message, data));
        continue;
      }
      kept.push(m);
      const key = JSON.stringify(m.id);
      const hooks = replies.get(key);
      if (hooks === undefined) continue;
      replies.delete(key);
      if (hooks.length === 0) continue;
      changed = true;
      const done = runReplyHooks(hooks, m, text);
      if (done !== undefined) pending.push(done);
    }
    if (!changed) return text;
    const serialize = (): string | undefined =>
      kept.length === 0 ? undefined : JSON.stringify(batch ? kept : kept[0]);
    if (pending.length === 0) return serialize();
    return Promise.all(pending).then(serialize);
  }

  /**
   * Sends the server the answer to a request of its own that the screen stopped, as the stdio
   * bridge writes it to the child's stdin, so the server does not wait on it until its own
   * timeout: a streamable-HTTP server gets it POSTed to its MCP endpoint under the session's
   * id (MCP 2025-11-25 "Streamable HTTP": a client POSTs its JSON-RPC responses there), a
   * legacy SSE server to the session's messages endpoint. A failure is only logged; the
   * server's timeout then ends its wait.
   */
  #answerServer(
    url: string,
    headers: Record<string, string>,
    message: string,
    sign: OutboundSigner | undefined,
  ): void {
    headers['content-type'] = 'application/json';
    const signal = AbortSignal.timeout(this.#deps.limits.upstreamWaitMs);
    this.#send('POST', url, headers, message, sign, signal)
      .then(async (answered) => {
        await answered.body.dump();
        if (answered.statusCode >= 400)
          this.#deps.logger.warn(
            { status: answered.statusCode },
            'the server refused the answer to a request of its own that a middleware stopped',
          );
      })
      .catch((err: unknown) =>
        this.#deps.logger.warn(
          { error: (err as Error).message },
          'could not answer a request of the server that a middleware stopped',
        ),
      );
  }

  async #forwardStreamable(
    req: IncomingMessage,
    res: ServerResponse,
    rewritten: Rewritten,
    outbound: Record<string, string> | undefined,
    sign: OutboundSigner | undefined,
  ): Promise<void> {
    if (rewritten.error !== undefined) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(rewritten.error);
      return;
    }
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    const method = req.method ?? 'GET';
    const sessions = this.#sessions;
    const header = req.headers['mcp-session-id'];
    // A session the store follows: the client's id, and the id the server knows it by.
    const session =
      sessions !== undefined && typeof header === 'string'
        ? { clientSid: header, sentSid: header }
        : undefined;
    if (session !== undefined && sessions !== undefined) {
      const route = sessions.route(session.clientSid);
      session.sentSid = (route instanceof Promise ? await route : route).backendSid ?? session.clientSid;
    }
    const clientSid = session?.clientSid;
    const send = (): Promise<UpstreamResponse> =>
      this.#sendStreamable(req, method, session?.sentSid, rewritten.body, outbound, sign, abort.signal);
    let upstreamRes: UpstreamResponse;
    try {
      upstreamRes = await send();
      // The server lost the session (restarted, or it is another replica's): a session the store
      // knows is re-initialized and the request sent again, at most twice (another proxy's
      // re-initialization may be stale too).
      if (session !== undefined && sessions !== undefined && method !== 'DELETE')
        for (let i = 0; i < 2 && upstreamRes.statusCode === 404; i++) {
          const renewed = await sessions.recover(session.clientSid, session.sentSid, (initBody) =>
            this.#reinitialize(initBody, req, outbound, sign),
          );
          if (renewed === undefined) break;
          await upstreamRes.body.dump();
          session.sentSid = renewed;
          upstreamRes = await send();
        }
    } catch (err) {
      if (!abort.signal.aborted) {
        sendRefusal(
          res,
          PROTOCOL_ERRORS.upstream_unreachable,
          `MCP server unreachable: ${(err as Error).message}`,
        );
      }
      return;
    }
    const headers: Record<string, string> = {};
    for (const name of FORWARDED_RESPONSE_HEADERS) {
      const v = upstreamRes.headers[name];
      if (typeof v === 'string') headers[name] = v;
    }
    inertRelayHeaders(headers);
    if (sessions !== undefined) {
      const status = upstreamRes.statusCode;
      const issued = headers['mcp-session-id'];
      // The client keeps its own id whatever the server now calls the session.
      if (clientSid !== undefined && issued !== undefined) headers['mcp-session-id'] = clientSid;
      // Recorded before the client learns the id, so its next request may go to any proxy.
      else if (issued !== undefined && status >= 200 && status < 300 && isInitialize(rewritten.body))
        await sessions.initialized(issued, rewritten.body);
      // 405: the server does not let clients end sessions, so the session goes on.
      if (clientSid !== undefined && method === 'DELETE' && status !== 405 && status < 500)
        await sessions.ended(clientSid);
    }
    const replies = rewritten.replies;
    const contentType = headers['content-type'] ?? '';
    // An answer the reply hooks judge, and with a screen every response (what the server
    // sends on its own may come in any, the GET stream included), is read one message at a
    // time, each at most `maxUpstreamMessageBytes`: a JSON body whole, an event stream event
    // by event.
    const judged = replies.size > 0 || this.#deps.screen !== undefined;
    const max = this.#deps.limits.maxUpstreamMessageBytes;
    const sid = session?.sentSid ?? (typeof header === 'string' ? header : issuedSid(upstreamRes));
    const answer: AnswerServer = (message) => {
      const to = this.#headersFor(undefined, outbound);
      to['accept'] = 'application/json, text/event-stream';
      if (sid !== undefined) to['mcp-session-id'] = sid;
      const version = req.headers['mcp-protocol-version'];
      if (typeof version === 'string') to['mcp-protocol-version'] = version;
      this.#answerServer(this.#upstream.url, to, message, sign);
    };
    if (judged && contentType.startsWith('application/json')) {
      const body = (await boundedText(upstreamRes.body, max)) ?? tooLargeBody(replies, max);
      const text = body === undefined ? undefined : await this.#judge(body, replies, answer);
      if (text === undefined) {
        // Only messages the screen stopped, or one too large to screen that answers no
        // request: nothing is left to relay.
        delete headers['content-type'];
        headers['content-length'] = '0';
        res.writeHead(upstreamRes.statusCode, headers);
        res.end();
        return;
      }
      headers['content-length'] = String(Buffer.byteLength(text));
      res.writeHead(upstreamRes.statusCode, headers);
      res.end(text);
      return;
    }
    res.writeHead(upstreamRes.statusCode, headers);
    if (judged && contentType.startsWith('text/event-stream')) {
      this.#relayEvents(upstreamRes, res, replies, max, answer);
      return;
    }
    // Plain streaming pass-through; pipe() handles backpressure towards a slow client.
    upstreamRes.body.on('error', () => res.destroy());
    upstreamRes.body.pipe(res);
  }

  /**
   * Relays an event stream that is judged (an answer to a request with reply hooks, or any
   * stream when there is a screen), one event (one JSON-RPC message, MCP 2025-11-25
   * "Streamable HTTP") at a time: only the event being read is held, so a long stream never
   * accumulates. The server is paused while the client lags (like `pipe()`). An event larger
   * than `max` ends the stream: the requests still waiting get an error naming the limit, as
   * if the server had answered with it. An event the screen stopped is not relayed.
   */
  #relayEvents(
    upstreamRes: UpstreamResponse,
    res: ServerResponse,
    replies: Map<string, ReplyHook[]>,
    max: number,
    answer: AnswerServer,
  ): void {
    const body = upstreamRes.body;
    const write = orderedWriter(res);
    const events = new SseDecoder(
      {
        onEvent: (e) => {
          const idLine = e.id === undefined ? '' : `id: ${e.id}\n`;
          const eventLine = e.event === undefined ? '' : `event: ${e.event}\n`;
          write(this.#judge(e.data, replies, answer), (data) => `${idLine}${eventLine}data: ${data}\n\n`);
        },
        onRetry: (ms) => write(`retry: ${ms}\n\n`, (text) => text),
        onOverflow: () => {
          body.destroy();
          for (const tooLarge of tooLargeAnswers(replies, max))
            write(this.#judge(tooLarge, replies, answer), (data) => `event: message\ndata: ${data}\n\n`);
          write('', () => '', true);
        },
      },
      { maxBufferSize: max },
    );
    body.on('data', (chunk: Buffer) => {
      events.push(chunk);
      if (!res.writableNeedDrain || body.isPaused()) return;
      body.pause();
      res.once('drain', () => body.resume());
    });
    body.on('end', () => {
      events.end();
      write('', () => '', true);
    });
    body.on('error', () => res.destroy());
  }

  /** One request of the client's to the streamable-HTTP server, under the session id `sid`. */
  async #sendStreamable(
    req: IncomingMessage,
    method: string,
    sid: string | undefined,
    body: string | undefined,
    outbound: Record<string, string> | undefined,
    sign: OutboundSigner | undefined,
    signal: AbortSignal,
  ): Promise<UpstreamResponse> {
    const headers = this.#headersFor(req, outbound);
    if (sid !== undefined) headers['mcp-session-id'] = sid;
    return this.#send(method, this.#upstream.url, headers, body, sign, signal);
  }

  async #send(
    method: string,
    url: string,
    headers: Record<string, string>,
    body: string | undefined,
    sign: OutboundSigner | undefined,
    signal: AbortSignal,
  ): Promise<UpstreamResponse> {
    await sign?.({ method, url, headers, body });
    return loadUndici().request(url, {
      dispatcher: this.#agent,
      method: method as 'GET' | 'POST' | 'DELETE',
      headers,
      body: body ?? null,
      signal,
      headersTimeout: 0,
      bodyTimeout: 0,
    });
  }

  /**
   * Initializes a new server session in a client's place: the client's original `initialize`
   * request, then `notifications/initialized` under the id the server answered with (and the
   * protocol version it chose). With the current request's credentials (`outbound`, `sign`),
   * as the reference does. Resolves the new id, or undefined when the server gave none.
   */
  async #reinitialize(
    initBody: string,
    req: IncomingMessage,
    outbound: Record<string, string> | undefined,
    sign: OutboundSigner | undefined,
  ): Promise<string | undefined> {
    // Not the client's connection: several requests may wait on this one initialization.
    const signal = AbortSignal.timeout(this.#deps.limits.upstreamWaitMs);
    const headers = this.#headersFor(undefined, outbound);
    headers['content-type'] = 'application/json';
    headers['accept'] = 'application/json, text/event-stream';
    const answer = await this.#send('POST', this.#upstream.url, headers, initBody, sign, signal);
    const sid = answer.headers['mcp-session-id'];
    if (answer.statusCode !== 200 || typeof sid !== 'string' || sid === '') {
      await answer.body.dump();
      this.#deps.logger.warn(
        { status: answer.statusCode },
        'the server did not open a session for a replayed initialize request',
      );
      return undefined;
    }
    const reply = await firstMessage(answer, String(answer.headers['content-type'] ?? ''));
    const negotiated = (reply?.result as { protocolVersion?: unknown } | undefined)?.protocolVersion;
    const clientVersion = req.headers['mcp-protocol-version'];
    const version =
      typeof negotiated === 'string'
        ? negotiated
        : typeof clientVersion === 'string'
          ? clientVersion
          : undefined;
    const notify = this.#headersFor(undefined, outbound);
    notify['content-type'] = 'application/json';
    notify['accept'] = 'application/json, text/event-stream';
    notify['mcp-session-id'] = sid;
    if (version !== undefined) notify['mcp-protocol-version'] = version;
    const ack = await this.#send('POST', this.#upstream.url, notify, INITIALIZED_NOTIFICATION, sign, signal);
    await ack.body.dump();
    if (ack.statusCode >= 400) {
      this.#deps.logger.warn(
        { status: ack.statusCode },
        'the server refused notifications/initialized for a replayed session',
      );
      return undefined;
    }
    return sid;
  }

  async #openSse(
    req: IncomingMessage,
    res: ServerResponse,
    outbound: Record<string, string> | undefined,
    sign: OutboundSigner | undefined,
  ): Promise<void> {
    const prefix = this.#deps.publicView(req.headers).prefix;
    const session: SseSession = {
      id: randomUUID(),
      messagesUrl: undefined,
      abort: new AbortController(),
      replies: new Map(),
    };
    res.on('close', () => {
      session.abort.abort();
      this.#sseSessions.delete(session.id);
    });
    let upstreamRes: UpstreamResponse;
    try {
      const headers = this.#headersFor(undefined, outbound);
      headers['accept'] = 'text/event-stream';
      const lastEventId = req.headers['last-event-id'];
      if (typeof lastEventId === 'string') headers['last-event-id'] = lastEventId;
      await sign?.({ method: 'GET', url: this.#upstream.url, headers, body: undefined });
      upstreamRes = await loadUndici().request(this.#upstream.url, {
        dispatcher: this.#agent,
        method: 'GET',
        headers,
        signal: session.abort.signal,
        headersTimeout: 0,
        bodyTimeout: 0,
      });
    } catch (err) {
      if (!session.abort.signal.aborted)
        sendRefusal(
          res,
          PROTOCOL_ERRORS.upstream_unreachable,
          `MCP server unreachable: ${(err as Error).message}`,
        );
      return;
    }
    if (upstreamRes.statusCode !== 200) {
      res.writeHead(
        upstreamRes.statusCode,
        inertRelayHeaders({ 'content-type': String(upstreamRes.headers['content-type'] ?? 'text/plain') }),
      );
      upstreamRes.body.pipe(res);
      return;
    }
    this.#sseSessions.set(session.id, session);
    res.writeHead(200, SSE_HEADERS);
    const write = orderedWriter(res);
    const max = this.#deps.limits.maxUpstreamMessageBytes;
    // The legacy transport answers the server where the client POSTs its messages.
    const answer: AnswerServer = (message) => {
      if (session.messagesUrl !== undefined)
        this.#answerServer(session.messagesUrl, this.#headersFor(undefined, outbound), message, sign);
    };
    const events = new SseDecoder(
      {
        onEvent: (e) => {
          if (e.event === 'endpoint') {
            // The server announces where to POST; clients get the proxy's own endpoint instead,
            // after the prefix of an ingress that strips it (`public-view.ts`).
            session.messagesUrl = new URL(e.data.trim(), this.#upstream.url).toString();
            res.write(`event: endpoint\ndata: ${messagesEndpoint(prefix, session.id)}\n\n`);
            return;
          }
          const idLine = e.id === undefined ? '' : `id: ${e.id}\n`;
          const event = e.event ?? 'message';
          write(
            this.#judge(e.data, session.replies, answer),
            (data) => `${idLine}event: ${event}\ndata: ${data}\n\n`,
          );
          if (res.writableLength > this.#deps.limits.maxClientBufferBytes) res.destroy();
        },
        // One event larger than the proxy reads: the session's waiting requests get an error
        // naming the limit, and the stream ends (the client opens a new session).
        onOverflow: () => {
          upstreamRes.body.destroy();
          for (const tooLarge of tooLargeAnswers(session.replies, max))
            write(
              this.#judge(tooLarge, session.replies, answer),
              (data) => `event: message\ndata: ${data}\n\n`,
            );
          write('', () => '', true);
        },
      },
      { maxBufferSize: max },
    );
    upstreamRes.body.on('data', (chunk: Buffer) => events.push(chunk));
    upstreamRes.body.on('end', () => {
      events.end();
      write('', () => '', true);
    });
    upstreamRes.body.on('error', () => res.destroy());
  }

  async #postSse(
    res: ServerResponse,
    query: string,
    rewritten: Rewritten,
    outbound: Record<string, string> | undefined,
    sign: OutboundSigner | undefined,
  ): Promise<void> {
    const id = new URLSearchParams(query).get('session_id');
    const session = id === null ? undefined : this.#sseSessions.get(id);
    if (session === undefined || session.messagesUrl === undefined) {
      sendRefusal(res, PROTOCOL_ERRORS.session_not_found);
      return;
    }
    if (rewritten.error !== undefined) {
      // Replies travel on the SSE stream in this transport; the POST is only acknowledged.
      res.writeHead(202);
      res.end();
      return;
    }
    for (const [key, hooks] of rewritten.replies) session.replies.set(key, hooks);
    try {
      const headers = this.#headersFor(undefined, outbound);
      headers['content-type'] = 'application/json';
      const sent = rewritten.body ?? '';
      await sign?.({ method: 'POST', url: session.messagesUrl, headers, body: sent });
      const upstreamRes = await loadUndici().request(session.messagesUrl, {
        dispatcher: this.#agent,
        method: 'POST',
        headers,
        body: sent,
        signal: AbortSignal.timeout(this.#deps.limits.upstreamWaitMs),
      });
      const text = await upstreamRes.body.text();
      res.writeHead(
        upstreamRes.statusCode,
        inertRelayHeaders({ 'content-type': String(upstreamRes.headers['content-type'] ?? 'text/plain') }),
      );
      res.end(text);
    } catch (err) {
      sendRefusal(
        res,
        PROTOCOL_ERRORS.upstream_unreachable,
        `MCP server unreachable: ${(err as Error).message}`,
      );
    }
  }
}

/**
 * Writes relayed SSE frames in arrival order even when a frame waits for an asynchronous
 * reply hook: `write(data, frame, end?)` queues `frame(data)` behind the frames before it.
 * Data that comes to nothing (undefined: the screen stopped the message) writes no frame.
 */
function orderedWriter(
  res: ServerResponse,
): (data: Relayed, frame: (data: string) => string, end?: boolean) => void {
  let tail: Promise<void> | undefined;
  const emit = (data: string | undefined, frame: (data: string) => string, end: boolean): void => {
    const text = data === undefined ? '' : frame(data);
    if (text !== '') res.write(text);
    if (end) res.end();
  };
  return (data, frame, end = false) => {
    if (tail === undefined && !(data instanceof Promise)) {
      emit(data, frame, end);
      return;
    }
    const previous = tail ?? Promise.resolve();
    tail = previous.then(async () => emit(await data, frame, end));
  };
}

/**
 * The text of a JSON body, or undefined when it is longer than `max` bytes: reading stops
 * there and the rest is dropped, so the proxy never holds more of one answer.
 */
async function boundedText(body: UpstreamResponse['body'], max: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max) {
      body.destroy();
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

/** The answers of the requests waiting in `replies` when the server's message was too large. */
function tooLargeAnswers(replies: Map<string, ReplyHook[]>, max: number): string[] {
  return [...replies.keys()].map((key) => oversizedAnswer(JSON.parse(key) as JsonRpcId, max));
}

/**
 * What stands for a JSON body larger than `max`: the errors of the requests waiting in
 * `replies` (an array for several, as for a batch); undefined when none waits (a screened
 * response that answers no request is then not relayed: it could not be screened).
 */
function tooLargeBody(replies: Map<string, ReplyHook[]>, max: number): string | undefined {
  const answers = tooLargeAnswers(replies, max);
  if (answers.length === 0) return undefined;
  return answers.length === 1 ? answers[0] : `[${answers.join(',')}]`;
}

/** The session id the server issued with this response (its answer to `initialize`). */
function issuedSid(res: UpstreamResponse): string | undefined {
  const sid = res.headers['mcp-session-id'];
  return typeof sid === 'string' && sid !== '' ? sid : undefined;
}

/**
 * Whether this JSON text may hold a request or notification (a member named `method`), for
 * the screen: cheaper than parsing every answer. The name is written either literally or
 * with a `\u` escape for some letter (JSON allows nothing else in a string), so the test
 * misses none.
 */
function maySendOnItsOwn(text: string): boolean {
  return text.includes('"method"') || text.includes('\\u');
}

/**
 * Whether a request body is one `initialize` request (the only request sent without a session
 * id that opens one). Cheap for everything else: only bodies that name the method are parsed.
 */
function isInitialize(body: string | undefined): body is string {
  if (body === undefined || !body.includes('"initialize"')) return false;
  try {
    const m = JSON.parse(body) as JsonRpcMessage | JsonRpcMessage[];
    return !Array.isArray(m) && m?.method === 'initialize' && m.id !== undefined;
  } catch {
    return false;
  }
}

/**
 * The answer to a request: the JSON body, or the first SSE event that is a JSON-RPC response
 * (the stream is then dropped; a server may keep it open). Undefined when there is none.
 */
async function firstMessage(res: UpstreamResponse, contentType: string): Promise<JsonRpcMessage | undefined> {
  const parse = (text: string): JsonRpcMessage | undefined => {
    try {
      const m = JSON.parse(text) as unknown;
      return m !== null && typeof m === 'object' && !Array.isArray(m) ? (m as JsonRpcMessage) : undefined;
    } catch {
      return undefined;
    }
  };
  if (!hasMediaType(contentType, 'text/event-stream')) return parse(await res.body.text());
  return new Promise((resolve) => {
    let done = false;
    const finish = (m: JsonRpcMessage | undefined): void => {
      if (done) return;
      done = true;
      resolve(m);
      res.body.destroy();
    };
    const events = new SseDecoder({
      onEvent: (e) => {
        // The answer, not a notification the server sends first (a log message).
        const m = parse(e.data);
        if (m !== undefined && (m.result !== undefined || m.error !== undefined)) finish(m);
      },
    });
    res.body.on('data', (chunk: Buffer) => events.push(chunk));
    res.body.on('end', () => {
      events.end();
      finish(undefined);
    });
    res.body.on('error', () => finish(undefined));
  });
}
