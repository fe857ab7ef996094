/**
 * The context one client request carries through the middleware pipeline
 * (`ProxyRequestContext`): the proxy builds it per request; tests and benchmarks build one
 * the same way to drive a middleware without HTTP.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from '../../shared/index.js';
import { silentLogger } from '../../shared/index.js';
import { invalidReason } from '../../protocol/index.js';
import { parseMcpRequest } from './mcp-request.js';
import type { ReplyGate } from './reply-hooks.js';
import type { PublicView } from './public-view.js';
import type {
  BackendTransport,
  ExchangeEnd,
  McpRequestInfo,
  OutboundSigner,
  ProxyRequestContext,
  ReplyHook,
  ReplyHookOptions,
} from './types.js';

const OWN_VIEW: PublicView = Object.freeze({ prefix: '', origin: undefined });

/** A POST body as read once: its text (relayed as is to an HTTP upstream) and its JSON. */
export interface RequestBody {
  readonly text: string | undefined;
  readonly json: unknown;
}

export interface RequestContextInit {
  method: string;
  path: string;
  query?: string;
  headers?: IncomingHttpHeaders;
  remoteAddress?: string | undefined;
  remotePort?: number | undefined;
  /** Default `1.1`. */
  httpVersion?: string;
  /** Default: no prefix, the proxy's own origin (`public-view.ts`). */
  publicView?: PublicView;
  /** Undefined for GET/DELETE; `{text, json}` of a POST (the text is derived when omitted). */
  body?: { text?: string | undefined; json: unknown };
  serverName: string;
  backendTransport: BackendTransport;
  /** Maps a client-visible tool name to the server's own (`tools_override`). */
  toolName?: ((visible: string) => string) | undefined;
  /**
   * Called once, when the first `onEnd` hook is registered: arrange for `fire` to be called
   * when the exchange is over (the proxy calls it on the response's `close`).
   */
  whenEnded?: (fire: (end: ExchangeEnd) => void) => void;
  logger?: Logger;
}

export interface BuiltRequestContext {
  readonly ctx: ProxyRequestContext;
  /** The hooks registered with `onReply`, in registration order. */
  readonly replyHooks: readonly ReplyHook[];
  /** True when one of `replyHooks` may rewrite the answer (was not registered `observeOnly`). */
  readonly replyHooksMutate: boolean;
  /**
   * The `needs` of each of `replyHooks`, in the same order; undefined when one was registered
   * without (then every answer is parsed for the hooks).
   */
  readonly replyGates: readonly ReplyGate[] | undefined;
  /** The body and parse as the middlewares left them (after any `replaceBody`). */
  current(): { body: RequestBody; mcp: McpRequestInfo | undefined };
}

/**
 * One request's context. A class, so that the accessors and methods live on the prototype:
 * an object literal with getters and methods would allocate a closure for each of them on
 * every request (measured: ~10 % of a proxy's throughput in garbage collection).
 */
class RequestContext implements ProxyRequestContext, BuiltRequestContext {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly headers: IncomingHttpHeaders;
  readonly remoteAddress: string | undefined;
  readonly remotePort: number | undefined;
  readonly httpVersion: string;
  readonly publicView: PublicView;
  identity: ProxyRequestContext['identity'] = {};
  outboundHeaders: Record<string, string> = {};
  readonly serverName: string;
  readonly backendTransport: BackendTransport;
  declare signOutbound?: OutboundSigner;
  readonly replyHooks: ReplyHook[] = [];
  replyHooksMutate = false;
  replyGates: ReplyGate[] | undefined = [];
  workSpan: object | undefined = undefined;
  #body: RequestBody;
  #mcp: McpRequestInfo | undefined;
  #endHooks: Array<(end: ExchangeEnd) => void> | undefined;
  #spanAttributes: Map<string, string | boolean> | undefined;
  readonly #init: RequestContextInit;

  constructor(init: RequestContextInit) {
    this.#init = init;
    this.method = init.method;
    this.path = init.path;
    this.query = init.query ?? '';
    this.headers = init.headers ?? {};
    this.remoteAddress = init.remoteAddress;
    this.remotePort = init.remotePort;
    this.httpVersion = init.httpVersion ?? '1.1';
    this.publicView = init.publicView ?? OWN_VIEW;
    this.serverName = init.serverName;
    this.backendTransport = init.backendTransport;
    const b = init.body;
    this.#body =
      b === undefined
        ? { text: undefined, json: undefined }
        : {
            text: b.text ?? (b.json === undefined ? undefined : JSON.stringify(b.json)),
            json: b.json,
          };
    this.#mcp = parseMcpRequest(this.#body.json, init.toolName);
  }

  get ctx(): ProxyRequestContext {
    return this;
  }

  get body(): unknown {
    return this.#body.json;
  }

  get bodyText(): string | undefined {
    return this.#body.text;
  }

  get mcp(): McpRequestInfo | undefined {
    return this.#mcp;
  }

  current(): { body: RequestBody; mcp: McpRequestInfo | undefined } {
    return { body: this.#body, mcp: this.#mcp };
  }

  replaceBody(next: unknown): void {
    const parsed = invalidReason(next) === undefined ? parseMcpRequest(next, this.#init.toolName) : undefined;
    if (parsed === undefined) throw new TypeError('the new body is not a JSON-RPC request or notification');
    this.#body = { text: JSON.stringify(next), json: next };
    this.#mcp = parsed;
  }

  get spanAttributes(): ReadonlyMap<string, string | boolean> | undefined {
    return this.#spanAttributes;
  }

  setSpanAttribute(key: string, value: string | boolean): void {
    (this.#spanAttributes ??= new Map()).set(key, value);
  }

  onReply(hook: ReplyHook, options?: ReplyHookOptions): void {
    this.replyHooks.push(hook);
    // Kept beside the hooks, not keyed by them: a weak map of one fresh closure per request
    // would add an ephemeron to every young-generation collection's work.
    if (options?.needs === undefined) this.replyGates = undefined;
    else this.replyGates?.push(options.needs);
    if (options?.observeOnly !== true) this.replyHooksMutate = true;
  }

  onEnd(hook: (end: ExchangeEnd) => void): void {
    if (this.#endHooks === undefined) {
      const hooks: Array<(end: ExchangeEnd) => void> = [];
      this.#endHooks = hooks;
      const logger = this.#init.logger ?? silentLogger;
      this.#init.whenEnded?.((end) => {
        for (const h of hooks) {
          try {
            h(end);
          } catch (err) {
            logger.error({ err }, 'a middleware end hook failed');
          }
        }
      });
    }
    this.#endHooks.push(hook);
  }
}

export function newRequestContext(init: RequestContextInit): BuiltRequestContext {
  return new RequestContext(init);
}
