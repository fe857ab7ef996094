/**
 * The one URL an MCP client is given for a workload: its proxy's `/mcp` endpoint, or for an
 * SSE proxy `/sse#<name>` (ToolHive's shape: the fragment names the workload and never reaches
 * the server). Lives in `shared` so the workload engine, which reports it, and the client
 * registration, which writes it into client config files, build the same string.
 */
import { isWildcardAddress } from './origin-guard.js';

export interface ProxyEndpoint {
  name: string;
  port: number;
  /**
   * The address the proxy binds. A wildcard bind is reached on 127.0.0.1; without a host
   * (an engine that reports only a port) the URL names `localhost`, as the reference does.
   */
  host?: string | undefined;
  /** The transport the proxy serves: `sse`, anything else is streamable HTTP. */
  transport: string | undefined;
}

export function workloadUrl(endpoint: ProxyEndpoint): string {
  const { host } = endpoint;
  const name = host === undefined ? 'localhost' : isWildcardAddress(host) ? '127.0.0.1' : host;
  // An IPv6 literal takes brackets in a URL (RFC 3986 §3.2.2).
  const shown = name.includes(':') && !name.startsWith('[') ? `[${name}]` : name;
  const base = `http://${shown}:${endpoint.port}`;
  return endpoint.transport === 'sse' ? `${base}/sse#${encodeURIComponent(endpoint.name)}` : `${base}/mcp`;
}
