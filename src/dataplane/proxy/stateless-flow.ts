/**
 * MCP 2026-07-28 (stateless) clients in front of a 2025-era stdio child, which the bridge
 * initialized once. Each request carries its own `_meta` envelope (protocol version, client
 * info, client capabilities, log level) and gets a throw-away session; `server/discover` is
 * answered from the cached initialize result; results gain `resultType` (and caching hints).
 *
 * Such a client takes no requests from the server. When the child asks it something (sampling,
 * elicitation, roots), its in-flight call is answered with an `input_required` result embedding
 * the child's request, and the child's call is parked under an opaque `requestState`. The
 * client's retry, carrying `inputResponses` and that `requestState`, answers the child and
 * takes over the parked call's eventual response (multi round-trip requests). Unclaimed parked
 * calls time out: the child gets an error for its request and a cancel for the call.
 */
import { randomUUID } from 'node:crypto';
import { definedOnly, type Logger } from '../../shared/index.js';
import {
  errorMessage,
  INTERNAL_ERROR,
  INVALID_PARAMS,
  isJsonObject,
  type JsonRpcId,
  type JsonRpcMessage,
  type JsonRpcRequest,
  REQUEST_TIMEOUT,
  resultMessage,
  UPSTREAM_UNAVAILABLE,
} from '../../protocol/index.js';
import { ForwardingTarget, type ReplyTarget } from './outlets.js';
import { isLogLevel, type Session } from './session.js';

/** 2026-era (stateless) revisions served in front of a 2025-era child. */
export const MODERN_PROTOCOL_VERSIONS = ['2026-07-28'] as const;
export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';
const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
const META_LOG_LEVEL = 'io.modelcontextprotocol/logLevel';
const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo';

/** What the child said about itself at initialize. */
export interface ServerIdentity {
  protocolVersion: string;
  capabilities: Record<string, unknown>;
  serverInfo: Record<string, unknown>;
  instructions?: string;
}

/** The part of a bridge's in-flight call that changes hands when a client's retry takes it over. */
export interface ParkableCall {
  session: Session | undefined;
  clientId: JsonRpcId;
  clientIdJson: string;
  target: ReplyTarget | undefined;
}

/** What the flow needs from the bridge that owns the child. */
export interface StatelessHost {
  /** The bridge's per-proxy id nonce, which also marks its `requestState` values. */
  readonly prefix: string;
  /** The child's identity once it is attached and initialized; undefined before. */
  readyServer(): ServerIdentity | undefined;
  whenReady(): Promise<void>;
  /** Routes a request like a 2025 client's. */
  handle(session: Session, msg: JsonRpcMessage, target: ReplyTarget): void;
  /** Sends a line to the child, if one is attached. */
  toChild(text: string): void;
  /** True while `call` is still the bridge's in-flight call number `seq`. */
  isPending(seq: number, call: ParkableCall): boolean;
  /** Forgets an in-flight call and tells the child to stop working on it. */
  cancelPending(seq: number, reason: string): void;
}

/** A 2026 client's call waiting for the client to come back with input (multi round-trip). */
interface ParkedCall {
  readonly seq: number;
  readonly call: ParkableCall;
  /** The child's request that the client must answer, and its key in `inputRequests`. */
  readonly childId: JsonRpcId;
  readonly method: string;
  readonly key: string;
  readonly timer: NodeJS.Timeout;
}

/** The 2026-era protocol version a message's `_meta` envelope names, if any. */
export function modernVersionOf(msg: JsonRpcMessage): string | undefined {
  const meta = msg.params?.['_meta'];
  const version = isJsonObject(meta) ? meta[META_PROTOCOL_VERSION] : undefined;
  return typeof version === 'string' && (MODERN_PROTOCOL_VERSIONS as readonly string[]).includes(version)
    ? version
    : undefined;
}

export class StatelessFlow {
  /** By `requestState`. */
  readonly #parked = new Map<string, ParkedCall>();
  #inputSeq = 0;

  readonly #host: StatelessHost;
  readonly #serverRequestTimeoutMs: number;
  readonly #logger: Logger;

  constructor(host: StatelessHost, serverRequestTimeoutMs: number, logger: Logger) {
    this.#host = host;
    this.#serverRequestTimeoutMs = serverRequestTimeoutMs;
    this.#logger = logger;
  }

  /**
   * One stateless request. The envelope is read into the throw-away session and removed
   * before the request reaches the child; everything but `server/discover` and a retry with
   * `requestState` is then forwarded like a 2025 request.
   */
  handle(session: Session, msg: JsonRpcRequest, replyTo: ReplyTarget): void {
    const target = new ModernResultTarget(replyTo, CACHEABLE_METHODS.has(msg.method));
    const params = msg.params;
    const envelope = params?.['_meta'];
    if (params !== undefined && isJsonObject(envelope)) {
      const version = envelope[META_PROTOCOL_VERSION];
      if (typeof version === 'string') session.protocolVersion = version;
      const caps = envelope[META_CLIENT_CAPABILITIES];
      if (isJsonObject(caps)) session.clientCapabilities = caps;
      const level = envelope[META_LOG_LEVEL];
      if (isLogLevel(level)) session.logLevel = level;
      for (const key of Object.keys(envelope))
        if (key.startsWith('io.modelcontextprotocol/')) delete envelope[key];
      if (Object.keys(envelope).length === 0) delete params['_meta'];
    }
    const requestState = params?.['requestState'];
    if (typeof requestState === 'string') {
      this.#resume(session, msg, target, requestState);
      return;
    }
    if (msg.method !== 'server/discover') {
      this.#host.handle(session, msg, target);
      return;
    }
    const server = this.#host.readyServer();
    if (server === undefined) {
      this.#host.whenReady().then(
        () => this.handle(session, msg, replyTo),
        (err: Error) => target.final(errorMessage(msg.id, UPSTREAM_UNAVAILABLE, err.message)),
      );
      return;
    }
    const result: Record<string, unknown> = {
      supportedVersions: [...MODERN_PROTOCOL_VERSIONS],
      capabilities: server.capabilities,
      // Sessions share the child, so nothing here may be cached across clients.
      ttlMs: 0,
      cacheScope: 'private',
      _meta: { [META_SERVER_INFO]: server.serverInfo },
    };
    if (server.instructions !== undefined) result['instructions'] = server.instructions;
    target.final(resultMessage(msg.id, result));
  }

  /**
   * The child asked the stateless client behind in-flight call `seq` something: answers the
   * client's call with `input_required` embedding the child's request, and parks the call
   * (the child keeps working on it) until the client retries with the input.
   */
  park(seq: number, call: ParkableCall, request: JsonRpcRequest): void {
    const target = call.target;
    const { method, id: childId } = request;
    // The client's request ends here; the call now belongs to no session until the retry.
    call.session?.requestSettled();
    call.session = undefined;
    call.target = undefined;
    const requestState = `${this.#host.prefix}input-${randomUUID()}`;
    const key = `input-${++this.#inputSeq}`;
    const timer = setTimeout(() => {
      if (this.#parked.get(requestState)?.call !== call) return;
      this.#parked.delete(requestState);
      this.#host.toChild(errorMessage(childId, REQUEST_TIMEOUT, `client did not answer ${method} in time`));
      this.#host.cancelPending(seq, 'the client did not come back with the requested input');
      this.#logger.debug(
        { method },
        'a stateless client did not come back with input; its call is cancelled',
      );
    }, this.#serverRequestTimeoutMs);
    timer.unref();
    this.#parked.set(requestState, { seq, call, childId, method, key, timer });
    target?.final(
      resultMessage(call.clientId, {
        resultType: 'input_required',
        inputRequests: {
          [key]: { method, ...definedOnly({ params: request.params }) },
        },
        requestState,
      }),
    );
  }

  /** The child went away: parked calls died with it. */
  clear(): void {
    for (const parked of this.#parked.values()) clearTimeout(parked.timer);
    this.#parked.clear();
  }

  /** A client's retry with `requestState`: hands its input to the child, takes over the call. */
  #resume(session: Session, msg: JsonRpcRequest, target: ReplyTarget, requestState: string): void {
    const parked = this.#parked.get(requestState);
    if (parked === undefined || !this.#host.isPending(parked.seq, parked.call)) {
      target.final(
        errorMessage(
          msg.id,
          INVALID_PARAMS,
          'requestState is unknown or expired; send the request again without requestState and inputResponses',
        ),
      );
      return;
    }
    this.#parked.delete(requestState);
    clearTimeout(parked.timer);
    const responses = msg.params?.['inputResponses'];
    const answer = isJsonObject(responses) ? responses[parked.key] : undefined;
    if (isJsonObject(answer)) this.#host.toChild(resultMessage(parked.childId, answer));
    else
      this.#host.toChild(
        errorMessage(parked.childId, INTERNAL_ERROR, `the client did not answer ${parked.method}`),
      );
    const call = parked.call;
    call.session = session;
    call.clientId = msg.id;
    call.clientIdJson = typeof msg.id === 'number' ? String(msg.id) : JSON.stringify(msg.id);
    call.target = target;
    session.requestStarted(target);
  }
}

/** 2026-07-28 methods whose results carry caching hints (`ttlMs`, `cacheScope`). */
const CACHEABLE_METHODS = new Set([
  'tools/list',
  'prompts/list',
  'resources/list',
  'resources/templates/list',
]);

/**
 * 2026-07-28 results carry `resultType` ("complete" for an ordinary answer); a 2025-era child
 * never sets it, so the proxy adds it on the way back to a 2026 client.
 */
class ModernResultTarget extends ForwardingTarget {
  readonly #cacheable: boolean;

  constructor(inner: ReplyTarget, cacheable: boolean) {
    super(inner);
    this.#cacheable = cacheable;
  }
  final(text: string): void {
    if (!text.includes('"result"')) {
      this.forward(text);
      return;
    }
    const msg = JSON.parse(text) as JsonRpcMessage;
    const result = msg.result;
    if (isJsonObject(result) && result['resultType'] === undefined) {
      result['resultType'] = 'complete';
      if (this.#cacheable && result['ttlMs'] === undefined) {
        // SEP-2549 caching hints: the shared child's lists may change at any time.
        result['ttlMs'] = 0;
        result['cacheScope'] = 'private';
      }
      this.forward(JSON.stringify(msg));
      return;
    }
    this.forward(text);
  }
}
