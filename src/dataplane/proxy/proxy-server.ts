/**
 * The proxy's HTTP front: `/mcp` (streamable HTTP, MCP 2025-11-25 "Transports"), `/sse` +
 * `/messages` (the 2024-11-05 HTTP+SSE transport) and `/health`. In front of a stdio server the
 * JSON-RPC traffic is routed by the `StdioBridge` (`streamable-http.ts`, `legacy-sse.ts`); in
 * front of an HTTP server it is passed through (`transparent.ts`). This module owns the
 * lifecycle and the route: Host/Origin check, body, middlewares, the wait for an upstream.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import {
  BodyBudget,
  BodyTooLargeError,
  createOriginGuard,
  definedOnly,
  LISTENER_DEFAULTS,
  listenerOptions,
  type Logger,
  type OriginGuard,
  readBody,
  SeqTable,
  silentLogger,
} from '../../shared/index.js';
import { CallerToken, SelfToken } from './caller-token.js';
import { normalizeEndpointPrefix } from './endpoint-prefix.js';
import { declaredLength, hasMediaType, ProxyResponse, sendJson, sendRefusal } from './http-util.js';
import { jsonDepthExceeds, PROTOCOL_ERRORS, refusalBody } from '../../protocol/index.js';
import { LegacySseEndpoint } from './legacy-sse.js';
import {
  HookedTarget,
  type ReplyGate,
  type ServerMessageScreen,
  serverMessageScreen,
} from './reply-hooks.js';
import { type PublicView, type PublicViewOf, publicViewResolver } from './public-view.js';
import { newRequestContext, type RequestBody } from './request-context.js';
import { StdioSessions } from './stdio-sessions.js';
import { StreamableHttpEndpoint } from './streamable-http.js';
import type { ReplyTarget } from './outlets.js';
import { createToolPolicy, type ToolPolicy } from './tool-policy.js';
import type { TransparentForwarder } from './transparent.js';
import type {
  BackendTransport,
  McpRequestInfo,
  OutboundSigner,
  ProxyHttpHandler,
  ProxyLimits,
  ProxyMiddleware,
  ProxyOptions,
  ProxyUpstream,
  ReplyHook,
  RunningProxy,
} from './types.js';

export const PROXY_DEFAULTS: Readonly<ProxyLimits> = Object.freeze(
  Object.assign({}, LISTENER_DEFAULTS, {
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
  }),
);

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

/** The paths of the MCP transports; anything else goes to the mounted handlers. */
const MCP_PATHS = new Set(['/mcp', '/sse', '/messages', '/message']);

/**
 * Stages that account for client traffic (their names, `ProxyMiddleware.name`): the runner's
 * own requests skip them, so its tool report is neither audited nor limited nor counted as a
 * client's call. Stages that shape the request (authentication towards the server,
 * authorization, webhooks) still run.
 */
export const ACCOUNTING_STAGES: ReadonlySet<string> = new Set(['audit', 'ratelimit', 'telemetry']);

const NOT_THE_OWNER =
  'Unauthorized: this workload answers only its owner. Use the URL that `skep list --json` ' +
  '(or the API) gives, which carries the access token, or send it as a bearer token';

/** A request the middlewares let through: the body to serve and what they added to it. */
interface Passed {
  readonly body: RequestBody;
  /** Headers for an HTTP upstream. */
  readonly headers: Record<string, string> | undefined;
  readonly sign: OutboundSigner | undefined;
  /** The middlewares' hooks on the answer (`ProxyRequestContext.onReply`). */
  readonly replyHooks: readonly ReplyHook[];
  /** One of `replyHooks` may rewrite the answer. */
  readonly replyHooksMutate: boolean;
  /** What each of `replyHooks` needs of an answer (`BuiltRequestContext.replyGates`). */
  readonly replyGates: readonly ReplyGate[] | undefined;
  readonly mcp: McpRequestInfo | undefined;
}

const NOTHING_ADDED = {
  headers: undefined,
  sign: undefined,
  replyHooks: [],
  replyHooksMutate: false,
  replyGates: undefined,
  mcp: undefined,
} as const;

class McpProxy implements RunningProxy {
  readonly #server: Server;
  readonly #logger: Logger;
  readonly #limits: ProxyLimits;
  readonly #policy: ToolPolicy;
  /** The client's view of the proxy per request: prefix and origin (`public-view.ts`). */
  readonly #publicView: PublicViewOf;
  readonly #middlewares: readonly ProxyMiddleware[];
  /** The middlewares' judge of what the server sends on its own, for every transport. */
  readonly #screen: ServerMessageScreen | undefined;
  readonly #handlers: readonly ProxyHttpHandler[];
  readonly #guard: OriginGuard;
  readonly #callerToken: CallerToken | undefined;
  readonly #selfToken: SelfToken | undefined;
  /** The middlewares the runner's own requests go through (`ACCOUNTING_STAGES` left out). */
  readonly #selfMiddlewares: readonly ProxyMiddleware[];
  readonly #stdio: StdioSessions;
  readonly #streamableHttp: StreamableHttpEndpoint;
  readonly #legacySse: LegacySseEndpoint;
  #transparent: TransparentForwarder | undefined;
  #mode: 'none' | 'stdio' | 'http' = 'none';
  #httpTransport: BackendTransport = 'streamable-http';
  /** Open connections, destroyed at shutdown (a `SeqTable`, not a `Set`: shared/seq-table.ts). */
  readonly #sockets = new SeqTable<Socket>();
  #socketSeq = 0;
  readonly #bodyBudget: BodyBudget;
  #reaper: NodeJS.Timeout | undefined;
  #closing: Promise<void> | undefined;
  #boundPort = 0;
  readonly #host: string;
  /**
   * Settles when the first upstream, of any kind, is ready (`setUpstream`), or rejects when the
   * proxy closes. Requests that arrive before then wait on it (up to `upstreamWaitMs`), so a
   * server that starts a moment after its proxy loses no request.
   */
  readonly #upstreamReady: Promise<void>;
  #markUpstreamReady!: () => void;
  #failUpstreamReady!: (err: Error) => void;

  readonly #options: ProxyOptions;

  constructor(options: ProxyOptions) {
    this.#options = options;
    if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535) {
      throw new Error(`proxy port must be an integer in 0..65535, got ${options.port}`);
    }
    this.#host = options.host ?? '127.0.0.1';
    this.#logger = options.logger ?? silentLogger;
    this.#limits = Object.assign({}, PROXY_DEFAULTS, options.limits);
    this.#policy = createToolPolicy(options.toolsFilter, options.toolsOverride);
    this.#publicView = publicViewResolver({
      endpointPrefix: normalizeEndpointPrefix(options.endpointPrefix),
      trustProxyHeaders: options.trustProxyHeaders === true,
      logger: this.#logger,
    });
    this.#middlewares = options.middlewares ?? [];
    this.#screen = serverMessageScreen(this.#middlewares);
    this.#handlers = options.handlers ?? [];
    this.#guard = createOriginGuard({
      bindHost: this.#host,
      allowedHosts: options.allowedHosts ?? [],
      allowedOrigins: options.allowedOrigins ?? [],
    });
    this.#callerToken = options.callerToken === undefined ? undefined : new CallerToken(options.callerToken);
    this.#selfToken = options.selfToken === undefined ? undefined : new SelfToken(options.selfToken);
    this.#selfMiddlewares = this.#middlewares.filter((m) => !ACCOUNTING_STAGES.has(m.name));
    this.#upstreamReady = new Promise<void>((resolve, reject) => {
      this.#markUpstreamReady = resolve;
      this.#failUpstreamReady = reject;
    });
    // Nobody may be waiting when the proxy closes; the rejection is then not an error.
    this.#upstreamReady.catch(() => {});
    this.#stdio = new StdioSessions(
      {
        logger: this.#logger,
        limits: this.#limits,
        policy: this.#policy,
        serverName: options.serverName ?? 'mcp-server',
        screen: this.#screen,
      },
      options.perSession,
    );
    if (this.#stdio.children !== undefined) this.#mode = 'stdio';
    this.#streamableHttp = new StreamableHttpEndpoint(this.#stdio, this.#limits, this.#logger);
    this.#legacySse = new LegacySseEndpoint(this.#stdio, this.#limits);
    this.#bodyBudget = new BodyBudget(this.#limits.maxUnfinishedBodyBytes);
    this.#server = createServer(
      // Every response, whoever writes it, is kept from being sniffed into active content.
      { keepAliveTimeout: 65_000, ...listenerOptions(this.#limits), ServerResponse: ProxyResponse },
      (req, res) => {
        this.#onRequest(req, res).catch((err: unknown) => {
          this.#logger.error({ err }, 'proxy request failed');
          sendRefusal(res, PROTOCOL_ERRORS.internal_error);
        });
      },
    );
    this.#server.maxConnections = this.#limits.maxConnections;
    this.#server.on('connection', (socket: Socket) => {
      socket.setNoDelay(true);
      const id = ++this.#socketSeq;
      this.#sockets.set(id, socket);
      socket.on('close', () => this.#sockets.delete(id));
    });
  }

  get port(): number {
    return this.#boundPort;
  }

  get url(): string {
    const host = this.#host.includes(':') ? `[${this.#host}]` : this.#host;
    return `http://${host}:${this.#boundPort}`;
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.#options.port, this.#host, () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
    this.#boundPort = (this.#server.address() as AddressInfo).port;
    const idleMs = this.#stdio.children?.idleMs ?? this.#limits.sessionIdleMs;
    this.#reaper = setInterval(() => this.#stdio.reapIdle(idleMs), Math.min(60_000, idleMs));
    this.#reaper.unref();
  }

  async setUpstream(upstream: ProxyUpstream): Promise<void> {
    if (this.#closing !== undefined) throw new Error('proxy is closed');
    if (this.#stdio.children !== undefined) {
      throw new Error('this proxy runs one server per session (perSession); it starts its own children');
    }
    if (upstream.kind === 'stdio') {
      if (this.#mode === 'http') this.#stdio.endAll();
      this.#mode = 'stdio';
      this.#transparent?.close();
      this.#transparent = undefined;
      await this.#stdio.bridge.attach(upstream);
      this.#markUpstreamReady();
      this.#logger.info({ server: this.#options.serverName }, 'stdio server attached');
    } else {
      // Loaded on first use: undici and the SSE parser cost memory a stdio workload never needs.
      const { TransparentForwarder } = await import('./transparent.js');
      if (this.#mode === 'stdio') {
        this.#stdio.bridge.down('switched to an HTTP server');
        this.#stdio.endAll();
      }
      this.#mode = 'http';
      this.#httpTransport = upstream.transport;
      this.#transparent?.close();
      this.#transparent = new TransparentForwarder(upstream, {
        logger: this.#logger,
        limits: this.#limits,
        policy: this.#policy,
        publicView: this.#publicView,
        screen: this.#screen,
      });
      this.#markUpstreamReady();
      this.#logger.info({ server: this.#options.serverName, url: upstream.url }, 'HTTP server attached');
    }
  }

  upstreamDown(reason: string): void {
    if (this.#mode === 'stdio') this.#stdio.bridge.down(reason);
    else this.#transparent?.down(reason);
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      if (this.#reaper !== undefined) clearInterval(this.#reaper);
      this.#failUpstreamReady(new Error('proxy closed'));
      this.#transparent?.close();
      await this.#stdio.close();
      await new Promise<void>((resolve) => {
        this.#server.close(() => resolve());
        for (const socket of this.#sockets.values()) socket.destroy();
      });
      // Responses emit `close` (and the middlewares' end hooks run) in the turn after their
      // socket went away: let them, so a pipeline closed after the proxy sees every exchange end.
      await new Promise<void>((resolve) => setImmediate(resolve));
    })();
    return this.#closing;
  }

  // ---- request routing ----

  async #onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawUrl = req.url ?? '/';
    const q = rawUrl.indexOf('?');
    const path = q === -1 ? rawUrl : rawUrl.slice(0, q);
    let query = q === -1 ? '' : rawUrl.slice(q + 1);
    const method = req.method ?? 'GET';
    const denied = this.#guard(req.headers);
    if (denied !== undefined) {
      req.resume();
      sendRefusal(res, PROTOCOL_ERRORS.forbidden_host, `Forbidden: ${denied}`);
      return;
    }
    if (path === '/health') {
      req.resume();
      this.#health(res);
      return;
    }
    if (method === 'GET' && path.startsWith('/.well-known/') && this.#wellKnown(req, res, path)) return;
    if (!MCP_PATHS.has(path)) {
      await this.#otherPath(req, res, path);
      return;
    }
    const own = this.#selfToken?.claims(req) === true;
    if (this.#callerToken !== undefined && !own) {
      const access = this.#callerToken.admit(req, query);
      query = access.query;
      // Legacy SSE messages are admitted by their session id (see caller-token.ts).
      if (!access.admitted && path !== '/messages' && path !== '/message') {
        req.resume();
        sendRefusal(res, PROTOCOL_ERRORS.not_the_owner, NOT_THE_OWNER, {
          'www-authenticate': 'Bearer realm="skep"',
        });
        return;
      }
    }
    const body = await this.#readRequestBody(req, res, method);
    if (body === undefined) return;
    const middlewares = own ? this.#selfMiddlewares : this.#middlewares;
    const passed =
      middlewares.length === 0
        ? { body, ...NOTHING_ADDED }
        : await this.#runMiddlewares(req, res, { method, path, query }, body, middlewares);
    if (passed === undefined) return;
    if (this.#mode === 'none') {
      // No server yet: wait for the first one, like a request to a restarting server.
      try {
        await this.#waitForUpstream();
      } catch (err) {
        sendRefusal(res, PROTOCOL_ERRORS.upstream_unavailable, (err as Error).message);
        return;
      }
    }
    if (this.#mode === 'http' && this.#transparent !== undefined) {
      await this.#transparent.handle(
        req,
        res,
        path,
        query,
        passed.body.text,
        passed.headers,
        passed.sign,
        passed.replyHooks,
      );
      return;
    }
    const json = passed.body.json;
    const wrap = this.#stdioReplyWrapper(passed);
    if (path === '/mcp') this.#streamableHttp.handle(req, res, method, json, wrap);
    else if (path === '/sse') this.#legacySse.handleStream(res, method, this.#publicView(req.headers).prefix);
    else this.#legacySse.handleMessages(res, method, query, json, wrap);
  }

  /**
   * The middlewares' reply hooks around a stdio request's reply target, with the tools policy
   * outermost for a `tools/list` (it renames after the middlewares judged the server's names).
   */
  #stdioReplyWrapper(passed: Passed): ((target: ReplyTarget) => ReplyTarget) | undefined {
    if (passed.replyHooks.length === 0) return undefined;
    const policy = this.#policy;
    const renames = !policy.passthrough && passed.mcp?.method === 'tools/list';
    const hooks: ReplyHook[] = renames
      ? [
          (reply) => {
            if (reply.result !== undefined) policy.applyToList(reply.result);
          },
          ...passed.replyHooks,
        ]
      : [...passed.replyHooks];
    const mutate = renames || passed.replyHooksMutate;
    // The tools policy's renaming needs every tools/list answer: no gates then.
    const gates = renames ? undefined : passed.replyGates;
    return (target) => new HookedTarget(target, hooks, mutate, gates);
  }

  /** A document a middleware serves under `/.well-known/` (RFC 8615), e.g. RFC 9728 metadata. */
  #wellKnown(req: IncomingMessage, res: ServerResponse, path: string): boolean {
    let view: PublicView | undefined;
    for (const mw of this.#middlewares) {
      if (mw.wellKnown === undefined) continue;
      view ??= this.#publicView(req.headers);
      const doc = mw.wellKnown(path, view);
      if (doc === undefined) continue;
      req.resume();
      sendJson(res, doc.status, doc.body, { ...doc.headers });
      return true;
    }
    return false;
  }

  /** Not an MCP path: the mounted handlers (an embedded authorization server), else 404. */
  async #otherPath(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    for (const handler of this.#handlers) if (await handler(req, res)) return;
    req.resume();
    sendRefusal(res, PROTOCOL_ERRORS.no_endpoint, `No MCP endpoint at ${path}; use /mcp or /sse`);
  }

  /**
   * Reads and parses a POST body, once, whatever serves it afterwards; other methods have none.
   * Undefined when the request was refused (the response is sent).
   */
  async #readRequestBody(
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
  ): Promise<RequestBody | undefined> {
    if (method !== 'POST') {
      req.resume();
      return { text: undefined, json: undefined };
    }
    // MCP clients POST JSON-RPC messages as application/json (both SDK generations do).
    // Other types are what a browser page of any origin can send without a CORS preflight
    // (a "simple request": text/plain and the form encodings, Fetch "CORS-safelisted
    // request-header"), so nothing else is read, for stdio and HTTP servers alike.
    const type = req.headers['content-type'];
    if (!hasMediaType(type, 'application/json')) {
      req.resume();
      sendRefusal(
        res,
        PROTOCOL_ERRORS.unsupported_media_type,
        `Unsupported Media Type: send the JSON-RPC body with Content-Type: application/json` +
          (type === undefined ? ' (none was given)' : ` (got '${type.slice(0, 100)}')`),
      );
      return undefined;
    }
    let text: string;
    try {
      text = await readBody(req, this.#limits.maxBodyBytes, this.#bodyBudget);
    } catch (err) {
      if (err instanceof BodyTooLargeError) {
        sendRefusal(
          res,
          PROTOCOL_ERRORS.payload_too_large,
          `Request body exceeds ${this.#limits.maxBodyBytes} bytes`,
        );
      } else {
        res.destroy();
      }
      return undefined;
    }
    if (jsonDepthExceeds(text, this.#limits.maxJsonDepth)) {
      sendRefusal(
        res,
        PROTOCOL_ERRORS.parse_error,
        `Parse error: JSON nested deeper than ${this.#limits.maxJsonDepth}`,
      );
      return undefined;
    }
    try {
      return { text, json: JSON.parse(text) as unknown };
    } catch {
      sendRefusal(res, PROTOCOL_ERRORS.parse_error);
      return undefined;
    }
  }

  /**
   * Runs the middleware pipeline (src/dataplane/pipeline: audit, auth, webhooks, authorization, ...).
   * Undefined when one of them refused the request (its answer is sent); else what they
   * added. A batch is refused first: the middlewares judge one message at a time.
   */
  async #runMiddlewares(
    req: IncomingMessage,
    res: ServerResponse,
    request: { method: string; path: string; query: string },
    received: RequestBody,
    middlewares: readonly ProxyMiddleware[],
  ): Promise<Passed | undefined> {
    if (Array.isArray(received.json)) {
      sendJson(res, PROTOCOL_ERRORS.batch_refused.status, refusalBody('batch_refused', undefined));
      return undefined;
    }
    const policy = this.#policy;
    const built = newRequestContext({
      method: request.method,
      path: request.path,
      query: request.query,
      headers: req.headers,
      remoteAddress: req.socket.remoteAddress,
      remotePort: req.socket.remotePort,
      httpVersion: req.httpVersion,
      publicView: this.#publicView(req.headers),
      body: received,
      serverName: this.#options.serverName ?? 'mcp-server',
      backendTransport: this.#options.transport ?? (this.#mode === 'http' ? this.#httpTransport : 'stdio'),
      toolName: policy.passthrough ? undefined : (n: string) => policy.resolveCall(n) ?? n,
      whenEnded: (fire) =>
        res.once('close', () =>
          fire({
            status: res.statusCode,
            completed: res.writableFinished,
            responseBytes: declaredLength(res),
          }),
        ),
      logger: this.#logger,
    });
    const ctx = built.ctx;
    for (const mw of middlewares) {
      const verdict = mw.handle(ctx);
      const rejected = verdict instanceof Promise ? await verdict : verdict;
      if (rejected === undefined) continue;
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
      return undefined;
    }
    const { body, mcp } = built.current();
    return {
      body,
      headers: ctx.outboundHeaders,
      sign: ctx.signOutbound,
      replyHooks: built.replyHooks,
      replyHooksMutate: built.replyHooksMutate,
      replyGates: built.replyGates,
      mcp,
    };
  }

  /** `upstreamReady`, bounded by `upstreamWaitMs`. */
  async #waitForUpstream(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error('MCP server unavailable: no server attached yet')),
        this.#limits.upstreamWaitMs,
      );
    });
    try {
      await Promise.race([this.#upstreamReady, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  #health(res: ServerResponse): void {
    const children = this.#stdio.children;
    if (children !== undefined) {
      sendJson(res, 200, {
        status: 'ok',
        mode: 'stdio-per-session',
        sessions: this.#stdio.all.size,
        children: children.count,
        maxChildren: children.max,
      });
      return;
    }
    const bridge = this.#stdio.bridge;
    const up =
      this.#mode === 'stdio' ? bridge.isReady : this.#mode === 'http' && this.#transparent?.isUp === true;
    const server = this.#mode === 'stdio' ? bridge.server?.serverInfo : undefined;
    sendJson(res, up ? 200 : 503, {
      status: up ? 'ok' : 'unavailable',
      mode: this.#mode,
      sessions: this.#stdio.all.size,
      ...definedOnly({ server }),
    });
  }
}
