/**
 * The MCP proxy: serves one MCP server to many clients over streamable HTTP (`/mcp`) and the
 * legacy SSE transport (`/sse` + `/messages`), multiplexing sessions onto one stdio child
 * (or, opt-in, one child per session: `per-session.ts`) or passing HTTP traffic through, with
 * its sessions kept in memory or Redis (`session-store.ts`, `shared-sessions.ts`).
 */
export { endpointPrefixProblem } from './endpoint-prefix.js';
export { parseMcpRequest } from './mcp-request.js';
export type { PublicView } from './public-view.js';
export { PROXY_DEFAULTS, startProxy } from './proxy-server.js';
export { runReplyHooks } from './reply-hooks.js';
export {
  checkKeyPrefix,
  decodeSession,
  encodeSession,
  MemorySessionStore,
  openSessionStore,
  SESSION_DEFAULTS,
  type SessionStorageOptions,
  type SessionStore,
  type StoredSession,
} from './session-store.js';
export { type BuiltRequestContext, newRequestContext, type RequestContextInit } from './request-context.js';
export type {
  BackendTransport,
  ExchangeEnd,
  InProcessPeer,
  InProcessServer,
  McpRequestInfo,
  OutboundRequest,
  OutboundSigner,
  PerSessionOptions,
  ProxyHttpHandler,
  ProxyIdentity,
  ProxyLimits,
  ProxyMiddleware,
  ProxyMiddlewareResult,
  ProxyOptions,
  ProxyRequestContext,
  ProxyUpstream,
  ReplyHook,
  ReplyHookOptions,
  RunningProxy,
  ServerLink,
  ServerMessageVerdict,
  SessionChild,
  ToolOverride,
} from './types.js';
