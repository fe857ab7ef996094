/**
 * The multiplexer: many client sessions share ONE stdio MCP server.
 *
 * - The child is initialized once per attach, by the proxy, with the client capabilities the
 *   proxy can route (sampling, elicitation, roots). Each client's `initialize` is answered from
 *   the cached result; its `notifications/initialized` is swallowed. A client that declares
 *   `roots`, once initialized and holding a stream that server requests can use, makes the
 *   proxy send `notifications/roots/list_changed` to the child (`announceRoots`): the roots it
 *   can ask for changed, so a server that asked before any client could answer asks again.
 * - Request ids: every forwarded request gets a proxy-unique string id `"<prefix><seq>"`; the
 *   response is matched by that id and the client's own id is spliced back into the text, so
 *   an ordinary response is routed without being parsed or re-serialized. `progressToken`s and
 *   `notifications/cancelled` request ids are rewritten the same way.
 * - Server → client requests (sampling, elicitation, roots) go to the session with the most
 *   recent in-flight request that declared the capability; with none, the most recently active
 *   capable session with an open stream; with no candidate the child gets a JSON-RPC error.
 *   An unanswered request times out with an error to the child and a cancel to the client.
 *   A 2026-07-28 (stateless) client takes no requests from the server; its requests go
 *   through `stateless-flow.ts`, which turns such a request into an `input_required` answer.
 * - Notifications: list_changed goes to every session; resources/updated to the subscribers
 *   (the child is subscribed once per URI, unsubscribed when the last subscriber leaves);
 *   notifications/message honours each session's level (the child runs at the most verbose
 *   level any session asked for). A shared child's logs are server-wide: every session whose
 *   level admits a message receives it.
 * - A dead child fails every in-flight request with a JSON-RPC error; sessions survive and
 *   continue on the next child after `attach` (subscriptions and log level are re-applied).
 */
import type { Logger } from '../../shared/index.js';
import { SeqTable, SKEP_VERSION } from '../../shared/index.js';
import {
  errorMessage,
  INTERNAL_ERROR,
  INVALID_PARAMS,
  isJsonObject,
  isNotification,
  isRequest,
  isValidId,
  type JsonRpcId,
  type JsonRpcMessage,
  type JsonRpcNotification,
  type JsonRpcRequest,
  jsonRpcError,
  REQUEST_TIMEOUT,
  resultMessage,
  UPSTREAM_UNAVAILABLE,
} from '../../protocol/index.js';
import { InProcessChannel } from './in-process-channel.js';
import { type ChannelHandlers, LineChannel, oversizedAnswer, type ServerChannel } from './line-channel.js';
import type { ReplyTarget } from './outlets.js';
import { isLogLevel, type LogLevel, logSeverity, type Session } from './session.js';
import { type ParkableCall, type ServerIdentity, StatelessFlow } from './stateless-flow.js';
import type { ToolPolicy } from './tool-policy.js';
import type { ProxyLimits, ServerLink, ServerMessageVerdict } from './types.js';

/** 2025-era protocol revisions the proxy can serve to clients, oldest first. */
export const LEGACY_PROTOCOL_VERSIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25'] as const;
/** The revision the proxy asks a child for. */
export const CHILD_PROTOCOL_VERSION = '2025-11-25';

/** A forwarded request; the `ParkableCall` part is reassigned when a client's retry takes it over. */
interface Pending extends ParkableCall {
  /** Rewrites the parsed response before it goes back (tools/list policy). */
  readonly transform: ((msg: JsonRpcMessage) => void) | undefined;
  /** For the proxy's own requests. */
  readonly internal: ((msg: JsonRpcMessage) => void) | undefined;
  progressKey: string | undefined;
}

interface ServerRequest {
  readonly session: Session;
  readonly childId: JsonRpcId;
  readonly timer: NodeJS.Timeout;
}

export interface BridgeOptions {
  logger: Logger;
  limits: ProxyLimits;
  policy: ToolPolicy;
  serverName: string;
  /** Every live session, for broadcasts. */
  sessions: () => Iterable<Session>;
  /** The middlewares' judge of what the server sends on its own (`screenServerMessage`). */
  screen?: ((message: JsonRpcMessage, text: string) => ServerMessageVerdict) | undefined;
}

export class StdioBridge {
  #channel: ServerChannel | undefined;
  #identity: ServerIdentity | undefined;
  #ready = false;
  #downReason = 'no server attached yet';
  #seq = 0;
  /** Calls forwarded to the child and not answered yet, by proxy sequence number. */
  readonly #pending = new SeqTable<Pending>();
  readonly #progress = new Map<string, { pending: Pending; token: JsonRpcId }>();
  readonly #serverRequests = new Map<string, ServerRequest>();
  readonly #stateless: StatelessFlow;
  readonly #subscribers = new Map<string, Set<Session>>();
  #childLogLevel: LogLevel | undefined;
  #waiters: Array<{ resolve: () => void; reject: (e: Error) => void; timer: NodeJS.Timeout }> = [];
  readonly #prefix: string;
  readonly #idToken: string;
  #closed = false;

  readonly #options: BridgeOptions;

  constructor(options: BridgeOptions) {
    this.#options = options;
    // A per-proxy nonce keeps the proxy's ids from colliding with anything a server echoes.
    this.#prefix = `sk${Math.random().toString(36).slice(2, 8)}-`;
    this.#idToken = `"${this.#prefix}`;
    this.#stateless = new StatelessFlow(
      {
        prefix: this.#prefix,
        readyServer: () => (this.#ready ? this.#identity : undefined),
        whenReady: () => this.whenReady(),
        handle: (session, msg, target) => this.handle(session, msg, target),
        toChild: (text) => this.#channel?.send(text),
        isPending: (seq, call) => this.#pending.get(seq) === call,
        cancelPending: (seq, reason) => this.#cancelPending(seq, reason),
      },
      options.limits.serverRequestTimeoutMs,
      options.logger,
    );
  }

  get isReady(): boolean {
    return this.#ready;
  }

  get server(): ServerIdentity | undefined {
    return this.#identity;
  }

  /** Attaches a (re)started child, or an in-process server, and initializes it. Sessions carry on. */
  async attach(link: ServerLink): Promise<void> {
    if (this.#closed) throw new Error('proxy is closed');
    if (this.#channel !== undefined) this.down('server replaced');
    const max = this.#options.limits.maxUpstreamMessageBytes;
    const handlers: ChannelHandlers = {
      onLine: (line) => this.#onLine(line),
      onOversize: (n, edges) => {
        this.#options.logger.warn({ bytes: n }, 'dropped an oversized message from the server');
        this.#answerOversized(edges);
      },
      onClosed: (reason) => {
        if (this.#channel === channel) this.down(reason);
      },
    };
    const channel: ServerChannel =
      'inProcess' in link
        ? new InProcessChannel(link.inProcess, max, handlers)
        : new LineChannel(link.stdin, link.stdout, max, handlers);
    this.#channel = channel;
    const reply = await this.#internalRequest(
      'initialize',
      {
        protocolVersion: CHILD_PROTOCOL_VERSION,
        capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } },
        clientInfo: { name: 'skep-proxy', version: SKEP_VERSION },
      },
      this.#options.limits.upstreamInitTimeoutMs,
    );
    if (this.#channel !== channel) throw new Error(`server went away during initialize: ${this.#downReason}`);
    const result = reply.result as Partial<ServerIdentity> | undefined;
    if (reply.error !== undefined || result === undefined || typeof result.protocolVersion !== 'string') {
      const why = reply.error?.message ?? 'no protocolVersion in the initialize result';
      this.down(`initialize failed: ${why}`);
      throw new Error(`server initialize failed: ${why}`);
    }
    this.#identity = {
      protocolVersion: result.protocolVersion,
      capabilities: result.capabilities ?? {},
      serverInfo: result.serverInfo ?? { name: this.#options.serverName, version: '0' },
      ...(typeof result.instructions === 'string' ? { instructions: result.instructions } : {}),
    };
    channel.send('{"jsonrpc":"2.0","method":"notifications/initialized"}');
    // Re-apply state the sessions set on the previous child.
    for (const uri of this.#subscribers.keys()) void this.#internalRequest('resources/subscribe', { uri });
    if (this.#childLogLevel !== undefined)
      void this.#internalRequest('logging/setLevel', { level: this.#childLogLevel });
    this.#ready = true;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) {
      clearTimeout(w.timer);
      w.resolve();
    }
  }

  /** The child died or was detached: fail everything in flight. Idempotent. */
  down(reason: string): void {
    this.#ready = false;
    this.#downReason = reason;
    const channel = this.#channel;
    this.#channel = undefined;
    channel?.detach();
    if (this.#pending.size > 0) {
      const pending = [...this.#pending.values()];
      this.#pending.clear();
      this.#progress.clear();
      for (const p of pending) {
        p.session?.requestSettled();
        if (p.internal !== undefined) {
          p.internal(jsonRpcError(p.clientId, UPSTREAM_UNAVAILABLE, reason));
        } else {
          p.target?.final(
            errorMessage(p.clientId, UPSTREAM_UNAVAILABLE, `MCP server unavailable: ${reason}`),
          );
        }
      }
    }
    for (const req of this.#serverRequests.values()) clearTimeout(req.timer);
    this.#serverRequests.clear();
    this.#stateless.clear();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.down('proxy closed');
    for (const w of this.#waiters) {
      clearTimeout(w.timer);
      w.reject(new Error('proxy closed'));
    }
    this.#waiters = [];
  }

  /** Resolves when a server is attached and initialized; rejects after `upstreamWaitMs`. */
  whenReady(): Promise<void> {
    if (this.#ready) return Promise.resolve();
    if (this.#closed) return Promise.reject(new Error('proxy is closed'));
    return new Promise((resolve, reject) => {
      const entry = {
        resolve,
        reject,
        timer: setTimeout(() => {
          this.#waiters = this.#waiters.filter((w) => w !== entry);
          reject(new Error(`MCP server unavailable: ${this.#downReason}`));
        }, this.#options.limits.upstreamWaitMs),
      };
      entry.timer.unref();
      this.#waiters.push(entry);
    });
  }

  /**
   * One message from a client. Requests need a target for their response; notifications and
   * responses (to server requests) do not.
   */
  handle(session: Session, msg: JsonRpcMessage, target: ReplyTarget | undefined): void {
    session.lastActive = Date.now();
    // Client messages passed `invalidReason`: a method makes a request or a notification.
    if (isNotification(msg)) {
      this.#fromClientNotification(session, msg);
      return;
    }
    if (!isRequest(msg)) {
      this.#fromClientResponse(session, msg);
      return;
    }
    if (target === undefined) return;
    const method = msg.method;
    if (method === 'ping') {
      target.final(resultMessage(msg.id, {}));
      return;
    }
    if (!this.#ready) {
      this.whenReady().then(
        () => this.handle(session, msg, target),
        (err: Error) => target.final(errorMessage(msg.id, UPSTREAM_UNAVAILABLE, err.message)),
      );
      return;
    }
    switch (method) {
      case 'initialize':
        this.answerInitialize(session, msg, target);
        return;
      case 'tools/call':
        if (!this.#options.policy.passthrough && !this.#applyCallPolicy(msg, target)) return;
        break;
      case 'tools/list':
        if (!this.#options.policy.passthrough && target.appliesToolPolicy !== true) {
          this.#forward(session, msg, target, (reply) => this.#options.policy.applyToList(reply.result));
          return;
        }
        break;
      case 'logging/setLevel':
        this.#setLevel(session, msg, target);
        return;
      case 'resources/subscribe':
      case 'resources/unsubscribe':
        this.#subscription(session, msg, target);
        return;
    }
    this.#forward(session, msg, target, undefined);
  }

  /** A 2026-07-28 (stateless) request in front of a 2025-era child (`stateless-flow.ts`). */
  handleModern(session: Session, msg: JsonRpcRequest, replyTo: ReplyTarget): void {
    this.#stateless.handle(session, msg, replyTo);
  }

  /** Answers `initialize` from the cached child result (MCP 2025-11-25 lifecycle). */
  answerInitialize(session: Session, msg: JsonRpcRequest, target: ReplyTarget): void {
    const server = this.#identity;
    if (server === undefined) {
      target.final(errorMessage(msg.id, UPSTREAM_UNAVAILABLE, 'MCP server not initialized'));
      return;
    }
    const params = msg.params ?? {};
    session.protocolVersion = negotiateVersion(params['protocolVersion'], server.protocolVersion);
    const caps = params['capabilities'];
    session.clientCapabilities = isJsonObject(caps) ? caps : {};
    const result: Record<string, unknown> = {
      protocolVersion: session.protocolVersion,
      capabilities: server.capabilities,
      serverInfo: server.serverInfo,
    };
    if (server.instructions !== undefined) result['instructions'] = server.instructions;
    target.final(resultMessage(msg.id, result));
  }

  /** A client session ended: cancel its work upstream and drop its subscriptions. */
  sessionClosed(session: Session): void {
    if (session.closed) return;
    session.closed = true;
    session.standing?.close();
    for (const uri of session.subscriptions) {
      const set = this.#subscribers.get(uri);
      if (set === undefined) continue;
      set.delete(session);
      if (set.size === 0) {
        this.#subscribers.delete(uri);
        if (this.#ready) void this.#internalRequest('resources/unsubscribe', { uri });
      }
    }
    if (session.inflight > 0) {
      for (const [seq, p] of this.#pending)
        if (p.session === session) this.#cancelPending(seq, 'client session ended');
    }
    for (const [key, req] of this.#serverRequests) {
      if (req.session !== session) continue;
      this.#serverRequests.delete(key);
      clearTimeout(req.timer);
      this.#channel?.send(errorMessage(req.childId, INTERNAL_ERROR, 'client session ended'));
    }
  }

  // ---- client → server ----

  #forward(
    session: Session,
    msg: JsonRpcRequest,
    target: ReplyTarget,
    transform: ((msg: JsonRpcMessage) => void) | undefined,
  ): void {
    const channel = this.#channel;
    if (channel === undefined) {
      target.final(errorMessage(msg.id, UPSTREAM_UNAVAILABLE, `MCP server unavailable: ${this.#downReason}`));
      return;
    }
    if (channel.buffered > this.#options.limits.maxUpstreamBufferBytes) {
      target.final(errorMessage(msg.id, UPSTREAM_UNAVAILABLE, 'MCP server is not keeping up; try again'));
      return;
    }
    const clientId = msg.id;
    const seq = ++this.#seq;
    const p: Pending = {
      session,
      clientId,
      clientIdJson: typeof clientId === 'number' ? String(clientId) : JSON.stringify(clientId),
      target,
      transform,
      internal: undefined,
      progressKey: undefined,
    };
    const meta = msg.params?.['_meta'];
    if (isJsonObject(meta)) {
      const token = meta['progressToken'];
      if (isValidId(token)) {
        const key = `${this.#prefix}p${seq}`;
        p.progressKey = key;
        this.#progress.set(key, { pending: p, token });
        meta['progressToken'] = key;
      }
    }
    // Re-addressed to the child; the original id is in `p`.
    (msg as JsonRpcMessage).id = this.#prefix + seq;
    this.#pending.set(seq, p);
    session.requestStarted(target);
    channel.sendMessage(msg);
  }

  #internalRequest(
    method: string,
    params: Record<string, unknown>,
    timeoutMs?: number,
  ): Promise<JsonRpcMessage> {
    const channel = this.#channel;
    if (channel === undefined) {
      return Promise.resolve(jsonRpcError(0, UPSTREAM_UNAVAILABLE, this.#downReason));
    }
    return new Promise((resolve) => {
      const seq = ++this.#seq;
      let timer: NodeJS.Timeout | undefined;
      const p: Pending = {
        session: undefined,
        clientId: seq,
        clientIdJson: String(seq),
        target: undefined,
        transform: undefined,
        internal: (reply) => {
          if (timer !== undefined) clearTimeout(timer);
          resolve(reply);
        },
        progressKey: undefined,
      };
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          if (this.#pending.delete(seq)) {
            resolve(jsonRpcError(seq, REQUEST_TIMEOUT, `${method} timed out`));
          }
        }, timeoutMs);
        timer.unref();
      }
      this.#pending.set(seq, p);
      channel.sendMessage({ jsonrpc: '2.0', id: this.#prefix + seq, method, params });
    });
  }

  #applyCallPolicy(msg: JsonRpcRequest, target: ReplyTarget): boolean {
    const params = msg.params;
    const name = params?.['name'];
    const original = typeof name === 'string' ? this.#options.policy.resolveCall(name) : undefined;
    if (params === undefined || original === undefined) {
      // MCP 2025-11-25 "Tools / Error Handling": unknown tools are a protocol error (-32602).
      target.final(errorMessage(msg.id, INVALID_PARAMS, `Unknown tool: ${String(name)}`));
      return false;
    }
    params['name'] = original;
    return true;
  }

  #setLevel(session: Session, msg: JsonRpcRequest, target: ReplyTarget): void {
    const params = msg.params;
    const level = params?.['level'];
    if (params === undefined || !isLogLevel(level)) {
      target.final(errorMessage(msg.id, INVALID_PARAMS, `Invalid log level: ${String(level)}`));
      return;
    }
    session.logLevel = level;
    let wanted: LogLevel = session.logLevel;
    for (const s of this.#options.sessions()) {
      if (s.logLevel !== undefined && logSeverity(s.logLevel) < logSeverity(wanted)) wanted = s.logLevel;
    }
    if (wanted === this.#childLogLevel) {
      target.final(resultMessage(msg.id, {}));
      return;
    }
    this.#childLogLevel = wanted;
    params['level'] = wanted;
    this.#forward(session, msg, target, undefined);
  }

  #subscription(session: Session, msg: JsonRpcRequest, target: ReplyTarget): void {
    const uri = msg.params?.['uri'];
    if (typeof uri !== 'string') {
      target.final(errorMessage(msg.id, INVALID_PARAMS, 'uri must be a string'));
      return;
    }
    let set = this.#subscribers.get(uri);
    if (msg.method === 'resources/subscribe') {
      session.subscriptions.add(uri);
      if (set === undefined) {
        set = new Set();
        this.#subscribers.set(uri, set);
      }
      set.add(session);
      if (set.size > 1) {
        target.final(resultMessage(msg.id, {}));
        return;
      }
    } else {
      session.subscriptions.delete(uri);
      set?.delete(session);
      if (set !== undefined && set.size > 0) {
        target.final(resultMessage(msg.id, {}));
        return;
      }
      this.#subscribers.delete(uri);
    }
    this.#forward(session, msg, target, undefined);
  }

  #fromClientNotification(session: Session, msg: JsonRpcNotification): void {
    const method = msg.method;
    if (method === 'notifications/initialized') {
      session.initialized = true;
      this.announceRoots(session);
      return;
    }
    const channel = this.#channel;
    if (channel === undefined) return;
    if (method === 'notifications/cancelled') {
      const params = msg.params;
      if (params === undefined) return;
      const requestId = params['requestId'];
      for (const [seq, p] of this.#pending) {
        if (p.session === session && p.clientId === requestId) {
          params['requestId'] = this.#prefix + seq;
          channel.sendMessage(msg);
          return;
        }
      }
      return;
    }
    channel.sendMessage(msg);
  }

  /**
   * Tells the child, once per session, that a client able to answer `roots/list` can now be
   * reached: the session is initialized and has a standing stream (its GET stream, which a
   * streamable-HTTP client opens after initializing, or its legacy SSE stream).
   */
  announceRoots(session: Session): void {
    if (session.rootsAnnounced || !session.initialized || session.standing?.open !== true) return;
    if (!session.canHandle('roots/list')) return;
    session.rootsAnnounced = true;
    this.#channel?.send('{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}');
  }

  #fromClientResponse(session: Session, msg: JsonRpcMessage): void {
    const key = JSON.stringify(msg.id);
    const req = this.#serverRequests.get(key);
    if (req === undefined || req.session !== session) {
      this.#options.logger.debug({ id: msg.id }, 'dropped a response to an unknown server request');
      return;
    }
    this.#serverRequests.delete(key);
    clearTimeout(req.timer);
    this.#channel?.sendMessage(msg);
  }

  // ---- server → client ----

  #onLine(line: string): void {
    // Fast path: a response to a forwarded request, matched by the proxy id in the text.
    const at = line.indexOf(this.#idToken);
    if (at !== -1 && isIdKeyBefore(line, at)) {
      let end = at + this.#idToken.length;
      let seq = 0;
      let c = line.charCodeAt(end);
      while (c >= 48 && c <= 57) {
        seq = seq * 10 + (c - 48);
        c = line.charCodeAt(++end);
      }
      const p = c === 34 ? this.#pending.get(seq) : undefined;
      if (p !== undefined && p.transform === undefined && p.internal === undefined) {
        this.#pending.delete(seq);
        this.#settle(p);
        p.target?.final(line.slice(0, at) + p.clientIdJson + line.slice(end + 1));
        return;
      }
    }
    let msg: JsonRpcMessage;
    try {
      msg = JSON.parse(line) as JsonRpcMessage;
    } catch {
      this.#options.logger.warn('dropped a line from the server that is not JSON');
      return;
    }
    if (!isJsonObject(msg)) return;
    if (msg.method === undefined) {
      this.#fromServerResponse(msg);
      return;
    }
    const screened = this.#screen(msg, line);
    if (screened === undefined) return;
    if (isRequest(msg)) this.#fromServerRequest(msg, screened);
    else if (isNotification(msg)) this.#fromServerNotification(msg, screened);
    else this.#options.logger.warn('dropped a message from the server whose method is not a string');
  }

  /**
   * The text to relay of a message the server sent on its own, after the middlewares' screen;
   * undefined when it stops there (a request to the client is then answered with the error).
   */
  #screen(msg: JsonRpcMessage, line: string): string | undefined {
    const verdict = this.#options.screen?.(msg, line);
    if (verdict === undefined) return line;
    if (verdict === 'rewritten') return JSON.stringify(msg);
    if (isRequest(msg)) {
      const { code, message, data } = verdict.error;
      this.#channel?.send(errorMessage(msg.id, code, message, data));
    }
    return undefined;
  }

  /**
   * A dropped line that answers a forwarded request (its proxy id is in the first or last
   * characters, where servers write `id`): the request gets an error naming the limit
   * instead of waiting for an answer that will never come.
   */
  #answerOversized(edges: { readonly head: string; readonly tail: string }): void {
    for (const text of [edges.head, edges.tail]) {
      const at = text.indexOf(this.#idToken);
      if (at === -1 || !isIdKeyBefore(text, at)) continue;
      const digits = /^(\d+)"/.exec(text.slice(at + this.#idToken.length));
      const seq = digits === null ? undefined : Number(digits[1]);
      const p = seq === undefined ? undefined : this.#pending.get(seq);
      if (seq === undefined || p === undefined) continue;
      this.#pending.delete(seq);
      this.#settle(p);
      const answer = oversizedAnswer(p.clientId, this.#options.limits.maxUpstreamMessageBytes);
      if (p.internal !== undefined) p.internal(JSON.parse(answer) as JsonRpcMessage);
      else p.target?.final(answer);
      return;
    }
  }

  #fromServerResponse(msg: JsonRpcMessage): void {
    const id = msg.id;
    if (typeof id !== 'string' || !id.startsWith(this.#prefix)) return;
    const seq = Number(id.slice(this.#prefix.length));
    const p = this.#pending.get(seq);
    if (p === undefined) return;
    this.#pending.delete(seq);
    this.#settle(p);
    if (p.internal !== undefined) {
      p.internal(msg);
      return;
    }
    if (p.transform !== undefined && msg.result !== undefined) p.transform(msg);
    msg.id = p.clientId;
    p.target?.final(JSON.stringify(msg));
  }

  #settle(p: Pending): void {
    p.session?.requestSettled();
    if (p.progressKey !== undefined) this.#progress.delete(p.progressKey);
  }

  #fromServerRequest(msg: JsonRpcRequest, line: string): void {
    const { method, id: childId } = msg;
    let chosen: Session | undefined;
    let chosenSeq = 0;
    let chosenCall: Pending | undefined;
    for (const [seq, p] of this.#pending) {
      const s = p.session;
      if (s !== undefined && !s.closed && s.canHandle(method)) {
        chosen = s;
        chosenSeq = seq;
        chosenCall = p;
      }
    }
    if (chosen?.transport === 'stateless' && chosenCall !== undefined) {
      this.#stateless.park(chosenSeq, chosenCall, msg);
      return;
    }
    if (chosen === undefined) {
      let best = 0;
      for (const s of this.#options.sessions()) {
        if (!s.closed && s.standing?.open === true && s.canHandle(method) && s.lastActive >= best) {
          chosen = s;
          best = s.lastActive;
        }
      }
    }
    if (chosen === undefined || !this.#deliver(chosen, line, true)) {
      this.#channel?.send(errorMessage(childId, INTERNAL_ERROR, `no connected client can answer ${method}`));
      return;
    }
    const session = chosen;
    const key = JSON.stringify(childId);
    const timer = setTimeout(() => {
      if (this.#serverRequests.get(key)?.session !== session) return;
      this.#serverRequests.delete(key);
      this.#channel?.send(errorMessage(childId, REQUEST_TIMEOUT, `client did not answer ${method} in time`));
      this.#deliver(
        session,
        JSON.stringify({
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: childId, reason: 'timed out' },
        }),
        true,
      );
    }, this.#options.limits.serverRequestTimeoutMs);
    timer.unref();
    this.#serverRequests.set(key, { session, childId, timer });
  }

  /** Forgets an in-flight call and tells the child to stop working on it. */
  #cancelPending(seq: number, reason: string): void {
    const p = this.#pending.get(seq);
    if (p === undefined) return;
    this.#pending.delete(seq);
    this.#settle(p);
    this.#channel?.send(
      JSON.stringify({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: this.#prefix + seq, reason },
      }),
    );
  }

  #fromServerNotification(msg: JsonRpcNotification, line: string): void {
    const params = msg.params ?? {};
    switch (msg.method) {
      case 'notifications/progress': {
        const entry = this.#progress.get(String(params['progressToken']));
        if (entry === undefined) return;
        params['progressToken'] = entry.token;
        const text = JSON.stringify(msg);
        if (entry.pending.target?.interim(text) !== true) entry.pending.session?.standing?.send(text);
        return;
      }
      case 'notifications/cancelled': {
        const key = JSON.stringify(params['requestId']);
        const req = this.#serverRequests.get(key);
        if (req === undefined) return;
        this.#serverRequests.delete(key);
        clearTimeout(req.timer);
        this.#deliver(req.session, line, true);
        return;
      }
      case 'notifications/resources/updated': {
        const set = this.#subscribers.get(String(params['uri']));
        if (set !== undefined) for (const s of set) this.#deliver(s, line, false);
        return;
      }
      case 'notifications/message': {
        const severity = logSeverity(params['level']);
        for (const s of this.#options.sessions()) {
          if (s.logLevel === undefined || severity >= logSeverity(s.logLevel)) this.#deliver(s, line, true);
        }
        return;
      }
      default: {
        const related = !msg.method.endsWith('/list_changed');
        for (const s of this.#options.sessions()) this.#deliver(s, line, related);
      }
    }
  }

  /**
   * Sends a server-originated message to a session: on the stream of its latest open request
   * when the message relates to ongoing work (`preferRequest`), else on its standing stream.
   */
  #deliver(session: Session, text: string, preferRequest: boolean): boolean {
    if (session.closed) return false;
    const live = session.inflight > 0 ? session.lastTarget : undefined;
    if (preferRequest && live?.open === true && live.interim(text)) return true;
    if (session.standing?.open === true && session.standing.send(text)) return true;
    return !preferRequest && live?.open === true && live.interim(text);
  }
}

/** True when the text before `at` is `"id"` followed by a colon (optional spaces). */
function isIdKeyBefore(line: string, at: number): boolean {
  let i = at - 1;
  while (i >= 0 && line.charCodeAt(i) === 32) i--;
  if (line.charCodeAt(i) !== 58 /* : */) return false;
  i--;
  while (i >= 0 && line.charCodeAt(i) === 32) i--;
  return i >= 3 && line.startsWith('"id"', i - 3);
}

/**
 * MCP 2025-11-25 lifecycle: the server answers with the requested version when it supports
 * it, else with one it does support. The proxy serves every 2025-era revision in front of
 * the child, but never claims a revision newer than the child's, because features the child
 * lacks cannot be bridged.
 */
export function negotiateVersion(requested: unknown, child: string): string {
  if (typeof requested === 'string' && (LEGACY_PROTOCOL_VERSIONS as readonly string[]).includes(requested)) {
    return requested < child ? requested : child;
  }
  return child;
}
