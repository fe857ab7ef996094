/**
 * `endpoint_prefix` (ToolHive's run-configuration field; `endpointPrefix` of MCPServer and
 * MCPRemoteProxy): a path put in front of the URL the proxy names in the SSE transport's
 * `endpoint` event (MCP 2024-11-05 "HTTP with SSE"), for a proxy behind an ingress that serves
 * it under a path and strips that path before forwarding. The client opened `<prefix>/sse`;
 * told to POST to `<prefix>/messages?session_id=…`, its messages take the same route back. The
 * proxy itself still serves `/sse` and `/messages` at the root of its port.
 */

/** A URL path: RFC 3986 §3.3 `pchar`s and `/`, other characters percent-encoded. */
const PATH = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*$/;

/**
 * Why `prefix` cannot be an endpoint prefix, or undefined when it can ('' is no prefix).
 * The answer completes a sentence that starts with the field's name.
 */
export function endpointPrefixProblem(prefix: string): string | undefined {
  if (prefix === '') return undefined;
  if (!prefix.startsWith('/')) return `must be a path starting with '/' (got ${JSON.stringify(prefix)})`;
  if (prefix.includes('?') || prefix.includes('#'))
    return `must be a path without a query or fragment (got ${JSON.stringify(prefix)})`;
  // `//host/messages` is a network-path reference (RFC 3986 §4.2): clients would POST to another host.
  if (prefix.startsWith('//')) return `must not start with '//' (got ${JSON.stringify(prefix)})`;
  if (!PATH.test(prefix))
    return `may hold only URL path characters, others percent-encoded (got ${JSON.stringify(prefix)})`;
  return undefined;
}

/**
 * The prefix as put before `/messages`: without its trailing `/` (`/team-a/` and `/team-a` name
 * the same path, `/` none). Throws on a prefix `endpointPrefixProblem` refuses: callers validate
 * configuration first, so that is a programming error.
 */
export function normalizeEndpointPrefix(prefix: string | undefined): string {
  if (prefix === undefined) return '';
  const problem = endpointPrefixProblem(prefix);
  if (problem !== undefined) throw new Error(`endpoint prefix ${problem}`);
  return prefix.replace(/\/+$/, '');
}

/** The URL of the SSE `endpoint` event: where the client POSTs the session's messages. */
export function messagesEndpoint(prefix: string, sessionId: string): string {
  return `${prefix}/messages?session_id=${encodeURIComponent(sessionId)}`;
}
