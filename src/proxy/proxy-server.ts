/**
 * The proxy's HTTP front: `/mcp` (streamable HTTP, MCP 2025-11-25 "Transports"), `/sse` +
 * `/messages` (the 2024-11-05 HTTP+SSE transport) and `/health`. In front of a stdio server the
 * JSON-RPC traffic is routed by the `StdioBridge`; in front of an HTTP server it is passed
 * through (`transparent.ts`).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createOriginGuard, type Logger, type OriginGuard, silentLogger } from '../shared/index.js';
import {
  BodyTooLarge,
  badRequest,
  hasMediaType,
  NOSNIFF,
  readBody,
  sendJson,
  sendRpcError,
} from './http-util.js';
import {
  INTERNAL_ERROR,
  INVALID_REQUEST,
  invalidReason,
  isRequest,
  type JsonRpcMessage,
  jsonDepthExceeds,
  PARSE_ERROR,
  SESSION_NOT_FOUND,
  UPSTREAM_UNAVAILABLE,
} from './json-rpc.js';
import { BatchExchange, OutletTarget, PostExchange, SSE_HEADERS, SseOutlet } from './outlets.js';
import { ChildCapReached, SessionChildren } from './per-session.js';
import { Session } from './session.js';
import { modernVersionOf } from './stateless-flow.js';
import { LEGACY_PROTOCOL_VERSIONS, StdioBridge } from './stdio-bridge.js';
import { createToolPolicy, type ToolPolicy } from './tool-policy.js';
import type { TransparentForwarder } from './transparent.js';
import type {
  OutboundSigner,
  ProxyHttpHandler,
  ProxyLimits,
  ProxyMiddleware,
  ProxyOptions,
  ProxyRequestContext,
  ProxyUpstream,
  RunningProxy,
} from './types.js';

export const PROXY_DEFAULTS: Readonly<ProxyLimits> = Object.freeze({
  maxBodyBytes: 4 * 1024 * 1024,
  maxJsonDepth: 64,
  maxUpstreamMessageBytes: 32 * 1024 * 1024,
  upstreamWaitMs: 30_000,
  upstreamInitTimeoutMs: 60_000,
  serverRequestTimeoutMs: 5 * 60_000,
  maxClientBufferBytes: 8 * 1024 * 1024,
  maxUpstreamBufferBytes: 16 * 1024 * 1024,
  sessionIdleMs: 30 * 60_000,
  maxSessions: 10_000,
  replayEvents: 100,
  streamResumeMs: 60_000,
});

const HEADER_SESSION = 'mcp-session-id';
const HEADER_VERSION = 'mcp-protocol-version';

export async function startProxy(options: ProxyOptions): Promise<RunningProxy> {
  const proxy = new McpProxy(options);
  await proxy.listen();
  if (options.upstream !== undefined) {
    try {
      await proxy.setUpstream(options.upstream);
    } catch (err) {
      await proxy.close();
      throw err;
    }
  }
  return proxy;
}

class McpProxy implements RunningProxy {
  private readonly server: Server;
  private readonly logger: Logger;
  private readonly limits: ProxyLimits;
  private readonly policy: ToolPolicy;
  private readonly middlewares: readonly ProxyMiddleware[];
  private readonly handlers: readonly ProxyHttpHandler[];
  private readonly guard: OriginGuard;
  private readonly sessions = new Map<string, Session>();
  private readonly bridge: StdioBridge;
  /** Only with `perSession`: one child (and bridge) per session instead of `bridge`. */
  private readonly children: SessionChildren | undefined;
  private transparent: TransparentForwarder | undefined;
  private mode: 'none' | 'stdio' | 'http' = 'none';
  private readonly sockets = new Set<Socket>();
  private reaper: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;
  private boundPort = 0;
  private readonly host: string;
  /**
   * Settles when the first upstream, of any kind, is ready (`setUpstream`), or rejects when the
   * proxy closes. Requests that arrive before then wait on it (up to `upstreamWaitMs`), so a
   * server that starts a moment after its proxy loses no request.
   */
  private readonly upstreamReady: Promise<void>;
  private markUpstreamReady!: () => void;
  private failUpstreamReady!: (err: Error) => void;

  constructor(private readonly options: ProxyOptions) {
    if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535) {
      throw new Error(`proxy port must be an integer in 0..65535, got ${options.port}`);
    }
    this.host = options.host ?? '127.0.0.1';
    this.logger = options.logger ?? silentLogger;
    this.limits = { ...PROXY_DEFAULTS, ...options.limits };
    this.policy = createToolPolicy(options.toolsFilter, options.toolsOverride);
    this.middlewares = options.middlewares ?? [];
    this.handlers = options.handlers ?? [];
    this.guard = createOriginGuard({
      bindHost: this.host,
      allowedHosts: options.allowedHosts ?? [],
      allowedOrigins: options.allowedOrigins ?? [],
    });
    this.upstreamReady = new Promise<void>((resolve, reject) => {
      this.markUpstreamReady = resolve;
      this.failUpstreamReady = reject;
    });
    // Nobody may be waiting when the proxy closes; the rejection is then not an error.
    this.upstreamReady.catch(() => {});
    this.bridge = new StdioBridge({
      logger: this.logger,
      limits: this.limits,
      policy: this.policy,
      serverName: options.serverName ?? 'mcp-server',
      sessions: () => this.sessions.values(),
    });
    if (options.perSession !== undefined) {
      this.children = new SessionChildren(
        options.perSession,
        {
          logger: this.logger,
          limits: this.limits,
          policy: this.policy,
          serverName: options.serverName ?? 'mcp-server',
        },
        this.logger,
        (session) => this.endSession(session),
      );
      this.mode = 'stdio';
    }
    this.server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, (req, res) => {
      this.onRequest(req, res).catch((err: unknown) => {
        this.logger.error({ err }, 'proxy request failed');
        sendRpcError(res, 500, INTERNAL_ERROR, 'internal proxy error');
      });
    });
    this.server.on('connection', (socket: Socket) => {
      socket.setNoDelay(true);
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  get port(): number {
    return this.boundPort;
  }

  get url(): string {
    const host = this.host.includes(':') ? `[${this.host}]` : this.host;
    return `http://${host}:${this.boundPort}`;
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.options.port, this.host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.boundPort = (this.server.address() as AddressInfo).port;
    const idleMs = this.children?.idleMs ?? this.limits.sessionIdleMs;
    this.reaper = setInterval(() => this.reapIdle(), Math.min(60_000, idleMs));
    this.reaper.unref();
  }

  async setUpstream(upstream: ProxyUpstream): Promise<void> {
    if (this.closing !== undefined) throw new Error('proxy is closed');
    if (this.children !== undefined) {
      throw new Error('this proxy runs one server per session (perSession); it starts its own children');
    }
    if (upstream.kind === 'stdio') {
      if (this.mode === 'http') this.resetSessions();
      this.mode = 'stdio';
      this.transparent?.close();
      this.transparent = undefined;
      await this.bridge.attach(upstream.stdin, upstream.stdout);
      this.markUpstreamReady();
      this.logger.info({ server: this.options.serverName }, 'stdio server attached');
    } else {
      // Loaded on first use: undici and the SSE parser cost memory a stdio workload never needs.
      const { TransparentForwarder } = await import('./transparent.js');
      if (this.mode === 'stdio') {
        this.bridge.down('switched to an HTTP server');
        this.resetSessions();
      }
      this.mode = 'http';
      this.transparent?.close();
      this.transparent = new TransparentForwarder(upstream, {
        logger: this.logger,
        limits: this.limits,
        policy: this.policy,
      });
      this.markUpstreamReady();
      this.logger.info({ server: this.options.serverName, url: upstream.url }, 'HTTP server attached');
    }
  }

  upstreamDown(reason: string): void {
    if (this.mode === 'stdio') this.bridge.down(reason);
    else this.transparent?.down(reason);
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.reaper !== undefined) clearInterval(this.reaper);
      this.failUpstreamReady(new Error('proxy closed'));
      this.bridge.close();
      this.transparent?.close();
      this.resetSessions();
      await this.children?.closeAll();
      await new Promise<void>((resolve) => {
        this.server.close(() => resolve());
        for (const socket of this.sockets) socket.destroy();
      });
    })();
    return this.closing;
  }

  // ---- request dispatch ----

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Every response, whoever writes it (this class, the outlets, the transparent relay, the
    // mounted authorization server), is kept from being sniffed into active content.
    res.setHeader('x-content-type-options', NOSNIFF);
    const rawUrl = req.url ?? '/';
    const q = rawUrl.indexOf('?');
    const path = q === -1 ? rawUrl : rawUrl.slice(0, q);
    const query = q === -1 ? '' : rawUrl.slice(q + 1);
    const denied = this.guard(req.headers);
    if (denied !== undefined) {
      req.resume();
      sendRpcError(res, 403, INVALID_REQUEST, `Forbidden: ${denied}`);
      return;
    }
    if (path === '/health') {
      req.resume();
      this.health(res);
      return;
    }
    const method = req.method ?? 'GET';
    if (method === 'GET' && path.startsWith('/.well-known/')) {
      for (const mw of this.middlewares) {
        const doc = mw.wellKnown?.(path);
        if (doc === undefined) continue;
        req.resume();
        sendJson(res, doc.status, doc.body, { ...doc.headers });
        return;
      }
    }
    if (path !== '/mcp' && path !== '/sse' && path !== '/messages' && path !== '/message') {
      for (const handler of this.handlers) if (await handler(req, res)) return;
      req.resume();
      sendRpcError(res, 404, INVALID_REQUEST, `No MCP endpoint at ${path}; use /mcp or /sse`);
      return;
    }
    let body: unknown;
    let text: string | undefined;
    if (method === 'POST') {
      // MCP clients POST JSON-RPC messages as application/json (both SDK generations do).
      // Other types are what a browser page of any origin can send without a CORS preflight
      // (a "simple request": text/plain and the form encodings, Fetch "CORS-safelisted
      // request-header"), so nothing else is read, for stdio and HTTP servers alike (issue 16, F3).
      const type = req.headers['content-type'];
      if (!hasMediaType(type, 'application/json')) {
        req.resume();
        sendRpcError(
          res,
          415,
          INVALID_REQUEST,
          `Unsupported Media Type: send the JSON-RPC body with Content-Type: application/json` +
            (type === undefined ? ' (none was given)' : ` (got '${type.slice(0, 100)}')`),
        );
        return;
      }
      try {
        text = await readBody(req, this.limits.maxBodyBytes);
      } catch (err) {
        if (err instanceof BodyTooLarge) {
          sendRpcError(res, 413, INVALID_REQUEST, `Request body exceeds ${this.limits.maxBodyBytes} bytes`);
        } else {
          res.destroy();
        }
        return;
      }
      if (jsonDepthExceeds(text, this.limits.maxJsonDepth)) {
        sendRpcError(
          res,
          400,
          PARSE_ERROR,
          `Parse error: JSON nested deeper than ${this.limits.maxJsonDepth}`,
        );
        return;
      }
      try {
        body = JSON.parse(text);
      } catch {
        sendRpcError(res, 400, PARSE_ERROR, 'Parse error: request body is not valid JSON');
        return;
      }
    } else {
      req.resume();
    }
    let outboundHeaders: Record<string, string> | undefined;
    let signOutbound: OutboundSigner | undefined;
    if (this.middlewares.length > 0) {
      const ctx: ProxyRequestContext = {
        method,
        path,
        query,
        headers: req.headers,
        remoteAddress: req.socket.remoteAddress,
        identity: {},
        outboundHeaders: {},
        body,
      };
      for (const mw of this.middlewares) {
        const rejected = await mw.handle(ctx);
        if (rejected !== undefined) {
          const headers = { ...rejected.headers };
          if (rejected.body === undefined) {
            res.writeHead(rejected.status, headers);
            res.end();
          } else if (typeof rejected.body === 'string') {
            res.writeHead(rejected.status, headers);
            res.end(rejected.body);
          } else {
            sendJson(res, rejected.status, rejected.body, headers);
          }
          return;
        }
      }
      outboundHeaders = ctx.outboundHeaders;
      signOutbound = ctx.signOutbound;
    }
    if (this.mode === 'none') {
      // No server yet: wait for the first one, like a request to a restarting server.
      try {
        await this.waitForUpstream();
      } catch (err) {
        sendRpcError(res, 503, UPSTREAM_UNAVAILABLE, (err as Error).message);
        return;
      }
    }
    if (this.mode === 'http' && this.transparent !== undefined) {
      await this.transparent.handle(req, res, path, query, text, outboundHeaders, signOutbound);
      return;
    }
    if (path === '/mcp') {
      if (method === 'POST') this.mcpPost(req, res, body);
      else if (method === 'GET') this.mcpGet(req, res);
      else if (method === 'DELETE') this.mcpDelete(req, res);
      else {
        res.writeHead(405, { allow: 'GET, POST, DELETE' });
        res.end();
      }
    } else if (path === '/sse') {
      if (method === 'GET') this.sseOpen(res);
      else {
        res.writeHead(405, { allow: 'GET' });
        res.end();
      }
    } else if (method === 'POST') {
      this.ssePost(res, query, body);
    } else {
      res.writeHead(405, { allow: 'POST' });
      res.end();
    }
  }

  /** `upstreamReady`, bounded by `upstreamWaitMs`. */
  private async waitForUpstream(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error('MCP server unavailable: no server attached yet')),
        this.limits.upstreamWaitMs,
      );
    });
    try {
      await Promise.race([this.upstreamReady, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private health(res: ServerResponse): void {
    if (this.children !== undefined) {
      sendJson(res, 200, {
        status: 'ok',
        mode: 'stdio-per-session',
        sessions: this.sessions.size,
        children: this.children.count,
        maxChildren: this.children.max,
      });
      return;
    }
    const up =
      this.mode === 'stdio' ? this.bridge.isReady : this.mode === 'http' && this.transparent?.isUp === true;
    const server = this.mode === 'stdio' ? this.bridge.server?.serverInfo : undefined;
    sendJson(res, up ? 200 : 503, {
      status: up ? 'ok' : 'unavailable',
      mode: this.mode,
      sessions: this.sessions.size,
      ...(server === undefined ? {} : { server }),
    });
  }

  /** The bridge serving a session: the shared one, or the session's own in per-session mode. */
  private bridgeOf(session: Session): StdioBridge {
    return this.children === undefined ? this.bridge : (this.children.bridgeOf(session) ?? this.bridge);
  }

  // ---- streamable HTTP over a stdio server ----

  private mcpPost(req: IncomingMessage, res: ServerResponse, body: unknown): void {
    const messages = Array.isArray(body) ? (body as unknown[]) : [body];
    if (messages.length === 0) {
      badRequest(res, 'Invalid Request: empty batch');
      return;
    }
    for (const m of messages) {
      const why = invalidReason(m);
      if (why !== undefined) {
        badRequest(res, `Invalid Request: ${why}`);
        return;
      }
    }
    const accept = req.headers.accept;
    const acceptsSse = accept === undefined || accept.includes('text/event-stream') || accept.includes('*/*');
    const sessionId = req.headers[HEADER_SESSION];
    const first = messages[0] as JsonRpcMessage;
    let session: Session | undefined;
    const headers: Record<string, string> = {};
    if (first.method === 'initialize') {
      if (messages.length > 1) {
        badRequest(res, 'Invalid Request: initialize must be sent alone');
        return;
      }
      if (this.sessions.size >= this.limits.maxSessions) {
        sendRpcError(res, 503, UPSTREAM_UNAVAILABLE, 'Too many sessions; try again later');
        return;
      }
      if (this.children !== undefined) {
        const reply = new PostExchange(res, acceptsSse, headers, this.limits.maxClientBufferBytes);
        this.openWithChild(res, 'streamable-http', (s, bridge) => {
          headers[HEADER_SESSION] = s.id;
          bridge.handle(s, first, reply);
        });
        return;
      }
      session = new Session(randomUUID(), 'streamable-http');
      this.sessions.set(session.id, session);
      headers[HEADER_SESSION] = session.id;
    } else if (typeof sessionId === 'string') {
      session = this.sessions.get(sessionId);
      if (session === undefined) {
        // MCP 2025-11-25 "Session Management": 404 tells the client to start a new session.
        sendRpcError(res, 404, SESSION_NOT_FOUND, 'Session not found');
        return;
      }
      const version = req.headers[HEADER_VERSION];
      if (typeof version === 'string' && !(LEGACY_PROTOCOL_VERSIONS as readonly string[]).includes(version)) {
        badRequest(res, `Bad Request: unsupported MCP-Protocol-Version: ${version}`);
        return;
      }
    } else if (messages.length === 1 && modernVersionOf(first) !== undefined && isRequest(first)) {
      if (this.children !== undefined) {
        badRequest(
          res,
          'Bad Request: this server runs one process per session; stateless (2026-07-28) requests ' +
            'are not served, send initialize to open a session',
        );
        return;
      }
      // MCP 2026-07-28: no initialize, no session; the request carries its own envelope.
      const stateless = new Session(randomUUID(), 'stateless');
      res.on('close', () => this.bridge.sessionClosed(stateless));
      this.bridge.handleModern(
        stateless,
        first,
        new PostExchange(res, acceptsSse, headers, this.limits.maxClientBufferBytes),
      );
      return;
    } else {
      badRequest(res, 'Bad Request: Mcp-Session-Id header is required (send initialize first)');
      return;
    }
    const bridge = this.bridgeOf(session);
    let requests = 0;
    for (const m of messages)
      if ((m as JsonRpcMessage).method !== undefined && (m as JsonRpcMessage).id != null) requests++;
    if (requests === 0) {
      for (const m of messages) bridge.handle(session, m as JsonRpcMessage, undefined);
      res.writeHead(202);
      res.end();
      return;
    }
    if (messages.length === 1) {
      bridge.handle(
        session,
        first,
        new PostExchange(res, acceptsSse, headers, this.limits.maxClientBufferBytes, {
          streams: session,
          keep: this.limits.replayEvents,
          graceMs: this.limits.streamResumeMs,
        }),
      );
      return;
    }
    const batch = new BatchExchange(requests, (text) => sendJson(res, 200, text, headers));
    for (const m of messages) {
      const msg = m as JsonRpcMessage;
      bridge.handle(session, msg, msg.method !== undefined && msg.id != null ? batch : undefined);
    }
  }

  private mcpGet(req: IncomingMessage, res: ServerResponse): void {
    const session = this.sessionFor(req, res);
    if (session === undefined) return;
    const accept = req.headers.accept ?? '';
    if (!accept.includes('text/event-stream')) {
      sendRpcError(res, 406, INVALID_REQUEST, 'Not Acceptable: GET needs Accept: text/event-stream');
      return;
    }
    const lastEventId = req.headers['last-event-id'];
    // `<stream>-<seq>`: the client resumes the SSE answer to one of its POSTs.
    const post = typeof lastEventId === 'string' ? /^(\d+)-(\d+)$/.exec(lastEventId) : null;
    if (post !== null) {
      const stream = session.stream(Number(post[1]));
      if (stream === undefined) {
        badRequest(res, `Bad Request: stream ${post[1]} cannot be resumed (it ended, or waited too long)`);
        return;
      }
      stream.resume(res, Number(post[2]));
      return;
    }
    const previous = session.standing instanceof SseOutlet ? session.standing : undefined;
    if (previous?.open === true) {
      sendRpcError(res, 409, INVALID_REQUEST, 'Conflict: this session already has an open stream');
      return;
    }
    res.writeHead(200, SSE_HEADERS);
    const outlet = new SseOutlet(
      res,
      this.limits.maxClientBufferBytes,
      this.limits.replayEvents,
      () => {},
      previous,
    );
    session.standing = outlet;
    if (typeof lastEventId === 'string' && previous !== undefined) outlet.replayAfter(Number(lastEventId));
    res.flushHeaders();
    this.bridgeOf(session).announceRoots(session);
  }

  private mcpDelete(req: IncomingMessage, res: ServerResponse): void {
    const session = this.sessionFor(req, res);
    if (session === undefined) return;
    this.endSession(session);
    res.writeHead(200);
    res.end();
  }

  private sessionFor(req: IncomingMessage, res: ServerResponse): Session | undefined {
    const id = req.headers[HEADER_SESSION];
    if (typeof id !== 'string') {
      badRequest(res, 'Bad Request: Mcp-Session-Id header is required');
      return undefined;
    }
    const session = this.sessions.get(id);
    if (session === undefined) sendRpcError(res, 404, SESSION_NOT_FOUND, 'Session not found');
    return session;
  }

  // ---- legacy HTTP+SSE (2024-11-05) over a stdio server ----

  private sseOpen(res: ServerResponse): void {
    if (this.sessions.size >= this.limits.maxSessions) {
      sendRpcError(res, 503, UPSTREAM_UNAVAILABLE, 'Too many sessions; try again later');
      return;
    }
    if (this.children !== undefined) {
      this.openWithChild(res, 'sse', (session) => this.announceSse(res, session));
      return;
    }
    const session = new Session(randomUUID(), 'sse');
    this.sessions.set(session.id, session);
    this.announceSse(res, session);
  }

  private announceSse(res: ServerResponse, session: Session): void {
    res.writeHead(200, SSE_HEADERS);
    const outlet = new SseOutlet(res, this.limits.maxClientBufferBytes, 0, () => this.endSession(session));
    session.standing = outlet;
    outlet.writeEvent('endpoint', `/messages?session_id=${session.id}`);
  }

  private ssePost(res: ServerResponse, query: string, body: unknown): void {
    const sessionId =
      new URLSearchParams(query).get('session_id') ?? new URLSearchParams(query).get('sessionId');
    const session = sessionId === null ? undefined : this.sessions.get(sessionId);
    if (session === undefined || session.transport !== 'sse' || session.standing?.open !== true) {
      sendRpcError(res, 404, SESSION_NOT_FOUND, 'Session not found');
      return;
    }
    const messages = Array.isArray(body) ? (body as unknown[]) : [body];
    for (const m of messages) {
      const why = invalidReason(m);
      if (why !== undefined) {
        badRequest(res, `Invalid Request: ${why}`);
        return;
      }
    }
    const target = new OutletTarget(session.standing);
    const bridge = this.bridgeOf(session);
    for (const m of messages) bridge.handle(session, m as JsonRpcMessage, target);
    res.writeHead(202, { 'content-type': 'text/plain' });
    res.end('Accepted');
  }

  // ---- sessions ----

  private endSession(session: Session): void {
    if (this.sessions.get(session.id) === session) this.sessions.delete(session.id);
    session.abandonStreams();
    if (this.children === undefined) this.bridge.sessionClosed(session);
    else this.children.release(session);
  }

  /**
   * Per-session mode: starts the new session's own child, then registers the session and
   * calls `ready`. At the cap, or when the child cannot start, the client gets HTTP 503 with a
   * JSON-RPC error; a client that leaves while its child starts gets the child stopped.
   */
  private openWithChild(
    res: ServerResponse,
    transport: 'streamable-http' | 'sse',
    ready: (session: Session, bridge: StdioBridge) => void,
  ): void {
    const children = this.children as SessionChildren;
    const session = new Session(randomUUID(), transport);
    const gone = (): void => {
      session.closed = true;
    };
    res.once('close', gone);
    children.start(session).then(
      (bridge) => {
        res.off('close', gone);
        if (session.closed || this.closing !== undefined) {
          children.release(session);
          if (!res.destroyed && !res.writableEnded)
            sendRpcError(res, 503, UPSTREAM_UNAVAILABLE, 'the session ended while its server was starting');
          return;
        }
        this.sessions.set(session.id, session);
        ready(session, bridge);
      },
      (err: unknown) => {
        res.off('close', gone);
        if (err instanceof ChildCapReached) {
          sendRpcError(res, 503, UPSTREAM_UNAVAILABLE, `Too many sessions: ${err.message}; try again later`);
          return;
        }
        this.logger.warn({ err: (err as Error).message }, 'cannot start a server for a new session');
        sendRpcError(
          res,
          503,
          UPSTREAM_UNAVAILABLE,
          `cannot start an MCP server for this session: ${(err as Error).message}`,
        );
      },
    );
  }

  private resetSessions(): void {
    for (const s of [...this.sessions.values()]) this.endSession(s);
  }

  private reapIdle(): void {
    const cutoff = Date.now() - (this.children?.idleMs ?? this.limits.sessionIdleMs);
    for (const s of [...this.sessions.values()]) {
      if (
        s.transport === 'streamable-http' &&
        s.inflight === 0 &&
        s.standing?.open !== true &&
        s.lastActive < cutoff
      ) {
        this.endSession(s);
      }
    }
  }
}
