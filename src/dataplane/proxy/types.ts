/**
 * Public contract of the MCP proxy: what the runner passes in (`ProxyOptions`), what it gets
 * back (`RunningProxy`) and the auth middleware contract (`ProxyMiddleware`). The runner owns
 * the server process; the proxy owns the client-facing transports and the JSON-RPC routing.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Readable, Writable } from 'node:stream';
import type { ListenerLimits, Logger } from '../../shared/index.js';
import type { JsonRpcId, JsonRpcMessage } from '../../protocol/index.js';
import type { PublicView } from './public-view.js';
import type { SessionStore } from './session-store.js';

export type ProxyUpstream =
  /** A stdio MCP server (child process or container attach). One child serves every session. */
  | { kind: 'stdio'; stdin: Writable; stdout: Readable }
  /** A server speaking HTTP itself; the proxy passes traffic through (transparent mode). */
  | {
      kind: 'http';
      url: string;
      transport: 'sse' | 'streamable-http';
      headers?: Record<string, string>;
      /**
       * Streamable HTTP only: where the sessions this server issues are recorded, so that they
       * continue through another proxy of the workload or after the server lost them
       * (`shared-sessions.ts`). Owned (and closed) by the caller; it outlives upstream changes.
       */
      sessions?: SessionStore;
    };

/**
 * Serves a request it owns (reading the body itself) and resolves true; resolves false,
 * without touching the request, for any other path. A rejection becomes an opaque 500.
 */
export type ProxyHttpHandler = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

/** MCP 2025-11-25 `ToolAnnotations`: hints about a tool's behaviour shown to clients. */
export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

export interface ToolOverride {
  name?: string;
  description?: string;
  /** Set over the tool's own annotations, field by field; unset fields keep the server's. */
  annotations?: ToolAnnotations;
}

export interface ProxyOptions {
  /** Bind address; default 127.0.0.1 (loopback unless told otherwise). */
  host?: string;
  /** 0 picks a free port. */
  port: number;
  /** May be attached later with `setUpstream`. */
  upstream?: ProxyUpstream;
  /** Only these tools are listed and callable (matched against the original or the overridden name). */
  toolsFilter?: string[];
  /**
   * Rename, re-describe or re-annotate tools, keyed by the original name; calls to the new name
   * reach the original.
   */
  toolsOverride?: Record<string, ToolOverride>;
  /**
   * Put before `/messages` in the SSE transport's `endpoint` event, for an ingress that serves the
   * proxy under this path and strips it (`endpoint-prefix.ts`). Checked at construction.
   */
  endpointPrefix?: string;
  /**
   * `trust_proxy_headers`: the URLs the proxy hands out follow the request's
   * `X-Forwarded-Prefix` (unless `endpointPrefix` is set), `-Proto`, `-Host` and `-Port`
   * (`public-view.ts`). Off: those headers are ignored.
   */
  trustProxyHeaders?: boolean;
  /** Run in order for every client HTTP request before it is handled or forwarded. */
  middlewares?: readonly ProxyMiddleware[];
  /**
   * HTTP handlers mounted beside the MCP endpoints (the embedded authorization server):
   * tried in order for every path that is not an MCP endpoint (`/mcp`, `/sse`, `/messages`)
   * nor `/health`, before the 404, without running the middleware chain — their endpoints
   * are how a client gets a token in the first place. Middlewares' `wellKnown` documents
   * are answered first. MCP requests never reach them, so they cost nothing on the hot path.
   */
  handlers?: ProxyHttpHandler[];
  /** Host names accepted besides loopback names and the bind address (DNS-rebinding guard). */
  allowedHosts?: string[];
  /** Browser origins accepted besides the proxy's own (exact `scheme://host:port`). */
  allowedOrigins?: string[];
  /**
   * The owner's access token (`caller-token.ts`): when set, every MCP request must carry it.
   * Unset for a workload that authenticates its callers itself, or that its owner opened.
   */
  callerToken?: string;
  /**
   * The runner's own token (`caller-token.ts`, `SelfToken`): a request that carries it as a
   * bearer is the runner's (its tool report). It is admitted, and the stages that account for
   * client traffic (`ACCOUNTING_STAGES`: audit, rate limits, telemetry) do not see it.
   */
  selfToken?: string;
  logger?: Logger;
  /** For logs and the client info the proxy presents to the server; middlewares see it too. */
  serverName?: string;
  /** How the server is reached, for middlewares (audit, webhooks); default from the upstream. */
  transport?: BackendTransport;
  /** Limits and timeouts; defaults in `PROXY_DEFAULTS`. */
  limits?: Partial<ProxyLimits>;
  /**
   * Opt-in: one stdio child per client session, for servers that keep per-client state.
   * Unset (the default), every session shares the child attached with `setUpstream`.
   */
  perSession?: PerSessionOptions;
}

/**
 * What the proxy's stdio bridge talks to: a server process's stdin and stdout (one message per
 * line), or an MCP server in the proxy's own process.
 */
export type ServerLink = { stdin: Writable; stdout: Readable } | { inProcess: InProcessServer };

/**
 * An MCP server in the proxy's process (a virtual MCP session), spoken to in whole JSON-RPC
 * messages: no pipes and no line framing between two parts of one process. The proxy's
 * messages reach it as objects, never serialised: each is the server's own once handed over
 * (it may change it). Its messages reach the proxy as JSON text, which the proxy relays to
 * clients with no parse (it rewrites only the id).
 */
export interface InProcessServer {
  /**
   * Connects the proxy, once: `peer.message` takes each message the server sends,
   * `peer.closed` is called when it stops. Returns what takes the proxy's messages, one a call.
   */
  connect(peer: InProcessPeer): (message: JsonRpcMessage) => void;
}

/** The proxy's side of an `InProcessServer`. */
export interface InProcessPeer {
  message(text: string): void;
  closed(reason: string): void;
}

/** A server started for one client session: a stdio child, or an in-process server. */
export type SessionChild = ServerLink & {
  /** Stops the server (graceful, then forceful) and resolves once it is gone; idempotent. */
  stop(): Promise<void>;
  /** Settles when the server stops on its own; the proxy then ends the session (clients get 404). */
  exited?: Promise<unknown>;
};

export interface PerSessionOptions {
  /** Starts a fresh child for a new session (2025-era `initialize` or `GET /sse`). */
  spawn: () => Promise<SessionChild>;
  /** Most live children (starting ones included); beyond it new sessions get HTTP 503. */
  maxChildren: number;
  /**
   * A session with no traffic, nothing in flight and no open stream for this long is ended
   * and its child stopped, ms. Used instead of `limits.sessionIdleMs` in this mode.
   */
  idleMs: number;
}

/** With the listener's bounds (`shared/listener-limits.ts`): timeouts, connections, body bytes. */
export interface ProxyLimits extends ListenerLimits {
  /** Largest accepted request body, bytes. */
  maxBodyBytes: number;
  /** Deepest accepted JSON nesting in a request body. */
  maxJsonDepth: number;
  /**
   * Largest message read from a server, bytes (characters): a stdio line, and in transparent
   * mode a JSON answer or one SSE event the reply hooks or the server-message screen judge (a
   * larger one is refused with a JSON-RPC error naming this limit). Answers nobody judges
   * stream through unread.
   */
  maxUpstreamMessageBytes: number;
  /** How long a request waits for an upstream while none is attached, ms. */
  upstreamWaitMs: number;
  /** How long the server's `initialize` may take after `setUpstream`, ms. */
  upstreamInitTimeoutMs: number;
  /** How long a client has to answer a server → client request (sampling, elicitation, roots), ms. */
  serverRequestTimeoutMs: number;
  /** Bytes buffered towards one client before it is treated as stuck and its stream is cut. */
  maxClientBufferBytes: number;
  /** Bytes buffered towards the server's stdin before new requests are refused. */
  maxUpstreamBufferBytes: number;
  /** A session with no traffic and no open stream for this long is forgotten, ms. */
  sessionIdleMs: number;
  /** Most concurrent client sessions. */
  maxSessions: number;
  /** Messages kept per stream (the GET stream, each SSE answer to a POST) for `Last-Event-ID` replay. */
  replayEvents: number;
  /** How long an SSE answer to a POST that lost its connection waits to be resumed, ms. */
  streamResumeMs: number;
}

export interface RunningProxy {
  /** `http://<host>:<port>` */
  readonly url: string;
  readonly port: number;
  /**
   * (Re)attaches the server after it (re)started (rejects with `perSession`, which starts
   * its own children). For stdio, the proxy initializes the child
   * with its own client info and re-applies session state (log level, subscriptions);
   * client sessions keep working with their existing session ids. Resolves once the upstream
   * is usable; rejects when it cannot be initialized (the proxy then stays "down").
   */
  setUpstream(upstream: ProxyUpstream): Promise<void>;
  /**
   * The server died: in-flight requests fail now with JSON-RPC errors; new requests wait up
   * to `limits.upstreamWaitMs` for `setUpstream`, then fail.
   */
  upstreamDown(reason: string): void;
  /** Closes every client connection and the listener. Does not stop the server. Idempotent. */
  close(): Promise<void>;
}

/** What inbound auth established about the caller. */
export interface ProxyIdentity {
  /** The bearer token as presented (never logged). */
  token?: string;
  claims?: Record<string, unknown>;
  subject?: string;
}

/**
 * One client HTTP request as seen by the middleware chain. Middlewares run in order; each may
 * read and extend it. `outboundHeaders` are added to requests sent to an HTTP upstream
 * (transparent mode); they are not used for stdio servers, which have no headers.
 */
export interface ProxyRequestContext {
  /** HTTP method, upper case. */
  readonly method: string;
  /** Path without the query string, e.g. `/mcp`. */
  readonly path: string;
  /** Raw query string without `?` ('' when none). */
  readonly query: string;
  /** Incoming request headers (lower-case names). */
  readonly headers: IncomingHttpHeaders;
  readonly remoteAddress: string | undefined;
  readonly remotePort: number | undefined;
  /** The client's HTTP version (`1.1`, `2.0`). */
  readonly httpVersion: string;
  /**
   * How the client reaches the proxy (an ingress's prefix and origin): URLs handed out follow
   * it. The proxy always sets it; absent (a context built by hand): no prefix, its own origin.
   */
  readonly publicView?: PublicView;
  /** Set by an inbound auth middleware. */
  identity: ProxyIdentity;
  /** Headers to send to an HTTP upstream, e.g. an exchanged token. */
  outboundHeaders: Record<string, string>;
  /**
   * The parsed JSON-RPC body of a POST (one message, or a batch array when no middleware
   * judges messages); undefined for GET/DELETE. Read only: change it with `replaceBody`.
   */
  readonly body: unknown;
  /** The body exactly as received (or as `replaceBody` re-serialised it); undefined for GET/DELETE. */
  readonly bodyText: string | undefined;
  /**
   * What the proxy's parser made of a POST body that is one JSON-RPC request or notification
   * (as ToolHive's mcp-parser reads it); undefined for GET/DELETE and for a client's responses.
   * Re-parsed after `replaceBody`.
   */
  readonly mcp: McpRequestInfo | undefined;
  /** The workload's name (`ProxyOptions.serverName`): Cedar's `MCP::` parent, audit, webhooks. */
  readonly serverName: string;
  /** How the proxy reaches the server, once known ('stdio' for a stdio child). */
  readonly backendTransport: BackendTransport;
  /**
   * Replaces the JSON-RPC body (a mutating webhook's patch): later middlewares and the server
   * see the new one; `mcp` is re-parsed. Throws a `TypeError` when `next` is not a single
   * JSON-RPC request or notification object (the caller answers 500).
   */
  replaceBody(next: unknown): void;
  /**
   * Registers a hook on the server's answer to this request (or the proxy's own answer, e.g.
   * an `initialize` served from cache or a JSON-RPC error), on every transport. Hooks run
   * innermost first: the last registered sees the answer first, like response wrappers. A hook
   * may rewrite `reply` in place (filter `result.tools`); a hook that throws turns the answer
   * into a JSON-RPC internal error (fail closed). Only for requests (`mcp.id` set).
   * `observeOnly`: the hook only reads the answer; when every hook of a request does, the
   * answer is relayed as the server wrote it instead of re-serialized.
   * `needs`: the hook can tell from the answer's JSON text that it has nothing to do (false);
   * when every hook of a request says so, the stdio bridge relays the text unparsed.
   */
  onReply(hook: ReplyHook, options?: ReplyHookOptions): void;
  /**
   * Registers a callback for when the HTTP exchange is over (the response was sent, or the
   * client went away), with the status it got, including a later middleware's rejection.
   */
  onEnd(hook: (end: ExchangeEnd) => void): void;
  /**
   * Attributes a middleware adds to this request's trace span (e.g. `rate_limit.decision`),
   * written by the telemetry stage when the exchange ends; undefined until one is added.
   */
  readonly spanAttributes: ReadonlyMap<string, string | boolean> | undefined;
  /** Adds (or replaces) an attribute of this request's span; a no-op cost when nobody traces. */
  setSpanAttribute(key: string, value: string | boolean): void;
  /**
   * The span that work done for this request in this process runs under (a virtual MCP's
   * composite tool), set by the telemetry stage; opaque to the proxy (`requestSpan` reads it).
   */
  workSpan: object | undefined;
  /**
   * Set by a middleware that must sign the request as it finally leaves for an HTTP upstream
   * (AWS SigV4 covers the target URL, method, every header and the body bytes, which only
   * transparent mode knows). Called once per upstream request, after `outboundHeaders` and
   * the tools policy were applied; it may add or replace headers. Unused for stdio servers.
   */
  signOutbound?: OutboundSigner;
}

export type BackendTransport = 'stdio' | 'sse' | 'streamable-http';

/** The reference's "mcp-parser" result for one JSON-RPC message. */
export interface McpRequestInfo {
  /** The JSON-RPC method. */
  readonly method: string;
  /** The request id; undefined for a notification. */
  readonly id: JsonRpcId | undefined;
  /**
   * What the call is about: `tools/call` and `prompts/get` → `params.name` (for `tools/call`
   * the server's own name, after `tools_override` mapped it back); `resources/read`,
   * `resources/subscribe`, `resources/unsubscribe` → `params.uri`; list methods → the cursor;
   * `initialize` → `clientInfo.name`; `completion/complete` → `ref.name` or `ref.uri`;
   * `logging/setLevel` → the level; `notifications/progress` → the progress token.
   */
  readonly resourceId: string | undefined;
  /** `tools/call` / `prompts/get` `params.arguments`, when an object. */
  readonly arguments: Record<string, unknown> | undefined;
  /** The whole message as parsed (read only; use `replaceBody` to change it). */
  readonly message: JsonRpcMessage;
}

/**
 * Sees the answer to one request; may rewrite it in place; may be async (an external PDP).
 * `text` is the JSON text the answer was parsed from (a stdio line, a JSON body, one SSE
 * event's data; the whole batch when it came in one), when the proxy read one: its size is
 * what a hook that bounds its work (guardrails' `maxInspectBytes`) measures.
 */
export type ReplyHook = (reply: JsonRpcMessage, text?: string) => void | Promise<void>;

export interface ReplyHookOptions {
  readonly observeOnly?: boolean;
  /** False when the answer with this JSON text would pass the hook untouched and unreported. */
  readonly needs?: (text: string) => boolean;
}

export interface ExchangeEnd {
  /** The HTTP status the client got (202 for a legacy-SSE POST whose answer went on the stream). */
  readonly status: number;
  /** False when the client disconnected before the response was complete. */
  readonly completed: boolean;
  /** The response body's size when the response declared it (`Content-Length`); not for streams. */
  readonly responseBytes?: number | undefined;
}

/** The request transparent mode is about to send to an HTTP upstream. */
export interface OutboundRequest {
  /** Upper case. */
  readonly method: string;
  /** Absolute target URL (the host the signature must name). */
  readonly url: string;
  /** Lower-case names; a signer adds its headers here. */
  headers: Record<string, string>;
  /** The exact bytes that will be sent ('' or undefined for none). */
  readonly body: string | undefined;
}

export type OutboundSigner = (request: OutboundRequest) => Promise<void>;

/** A middleware's rejection: sent to the client as is; the request goes no further. */
export interface ProxyMiddlewareResult {
  status: number;
  headers?: Record<string, string>;
  /** A string is sent as is; anything else as JSON. */
  body?: unknown;
}

export interface ProxyMiddleware {
  readonly name: string;
  /** Releases what the middleware holds (files, timers, connections); awaited at shutdown. */
  close?(): void | Promise<void>;
  /**
   * Runs for every client HTTP request before it is handled/forwarded. Return a result to
   * reject the request, or undefined to continue (after optionally setting `identity` or
   * `outboundHeaders`). A thrown error becomes a 500 with an opaque body. A middleware with
   * nothing to wait for answers without a promise: the chain then goes on in the same turn
   * (an `await` per stage costs a promise and a microtask tick on every request).
   */
  handle(
    ctx: ProxyRequestContext,
  ): ProxyMiddlewareResult | undefined | Promise<ProxyMiddlewareResult | undefined>;
  /**
   * Optional public documents under `/.well-known/` (e.g. RFC 9728 protected-resource
   * metadata, which clients fetch before they have a token): answered for GET without
   * running the chain. Return undefined when the path is not this middleware's. URLs in the
   * document follow `view` (how this request reached the proxy).
   */
  wellKnown?(path: string, view: PublicView): ProxyMiddlewareResult | undefined;
  /**
   * Optional judge of a message the server sends on its own (a notification, a request to
   * the client) before the proxy relays it (the stdio bridge, and the transparent forwarder on
   * every event stream and JSON body of an HTTP server); it may rewrite `message` in place.
   * `text` is the JSON text it was parsed from.
   */
  screenServerMessage?(message: JsonRpcMessage, text: string): ServerMessageVerdict;
}

/**
 * What becomes of a message the server sent on its own (`screenServerMessage`): undefined,
 * relayed as written; `rewritten`, relayed as changed in place; an error, not relayed (no
 * caller waits for a notification; a request to the client is answered with the error).
 */
export type ServerMessageVerdict =
  | undefined
  | 'rewritten'
  | { readonly error: { readonly code: number; readonly message: string; readonly data?: unknown } };
