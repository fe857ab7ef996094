/**
 * The context one client request carries through the middleware pipeline
 * (`ProxyRequestContext`): the proxy builds it per request; tests and benchmarks build one
 * the same way to drive a middleware without HTTP.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from '../shared/index.js';
import { silentLogger } from '../shared/index.js';
import { invalidReason } from './json-rpc.js';
import { parseMcpRequest } from './mcp-request.js';
import type {
  BackendTransport,
  ExchangeEnd,
  McpRequestInfo,
  ProxyRequestContext,
  ReplyHook,
} from './types.js';

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
  /** The body and parse as the middlewares left them (after any `replaceBody`). */
  current(): { body: RequestBody; mcp: McpRequestInfo | undefined };
}

export function newRequestContext(init: RequestContextInit): BuiltRequestContext {
  const toolName = init.toolName;
  let body: RequestBody =
    init.body === undefined
      ? { text: undefined, json: undefined }
      : {
          text: init.body.text ?? (init.body.json === undefined ? undefined : JSON.stringify(init.body.json)),
          json: init.body.json,
        };
  let mcp = parseMcpRequest(body.json, toolName);
  const replyHooks: ReplyHook[] = [];
  let endHooks: Array<(end: ExchangeEnd) => void> | undefined;
  const logger = init.logger ?? silentLogger;
  const ctx: ProxyRequestContext = {
    method: init.method,
    path: init.path,
    query: init.query ?? '',
    headers: init.headers ?? {},
    remoteAddress: init.remoteAddress,
    identity: {},
    outboundHeaders: {},
    get body() {
      return body.json;
    },
    get bodyText() {
      return body.text;
    },
    get mcp() {
      return mcp;
    },
    serverName: init.serverName,
    backendTransport: init.backendTransport,
    replaceBody(next) {
      const parsed = invalidReason(next) === undefined ? parseMcpRequest(next, toolName) : undefined;
      if (parsed === undefined) throw new TypeError('the new body is not a JSON-RPC request or notification');
      body = { text: JSON.stringify(next), json: next };
      mcp = parsed;
    },
    onReply(hook) {
      replyHooks.push(hook);
    },
    onEnd(hook) {
      if (endHooks === undefined) {
        const hooks: Array<(end: ExchangeEnd) => void> = [];
        endHooks = hooks;
        init.whenEnded?.((end) => {
          for (const h of hooks) {
            try {
              h(end);
            } catch (err) {
              logger.error({ err }, 'a middleware end hook failed');
            }
          }
        });
      }
      endHooks.push(hook);
    },
  };
  return { ctx, replyHooks, current: () => ({ body, mcp }) };
}
