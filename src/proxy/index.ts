/**
 * The MCP proxy: serves one MCP server to many clients over streamable HTTP (`/mcp`) and the
 * legacy SSE transport (`/sse` + `/messages`), multiplexing sessions onto one stdio child
 * (or, opt-in, one child per session: `per-session.ts`) or passing HTTP traffic through.
 * See `design/proxy.md` for the questions this answers.
 */
export { PROXY_DEFAULTS, startProxy } from './proxy-server.js';
export type {
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
  RunningProxy,
  SessionChild,
  ToolOverride,
} from './types.js';
