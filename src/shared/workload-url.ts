/**
 * The one URL an MCP client is given for a workload: its proxy's `/mcp` endpoint, or for an
 * SSE proxy `/sse#<name>` (ToolHive's shape: the fragment names the workload and never reaches
 * the server). When the workload answers only its owner, the URL carries the owner's access
 * token in the query (`?skep_token=…`), so a client that takes nothing but a URL works and the
 * URL is a capability (as Jupyter's `?token=` links are). Lives in `shared` so the workload
 * engine, which reports it, the virtual MCP, which calls its backends by it, and the client
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
  /** The workload's access token, when its proxy asks for one. */
  accessToken?: string | undefined;
}

/** The query parameter that carries a workload's access token (the proxy strips it). */
export const ACCESS_TOKEN_PARAM = 'skep_token';

export function workloadUrl(endpoint: ProxyEndpoint): string {
  const { host } = endpoint;
  const name = host === undefined ? 'localhost' : isWildcardAddress(host) ? '127.0.0.1' : host;
  // An IPv6 literal takes brackets in a URL (RFC 3986 §3.2.2).
  const shown = name.includes(':') && !name.startsWith('[') ? `[${name}]` : name;
  const base = `http://${shown}:${endpoint.port}`;
  const query = endpoint.accessToken === undefined ? '' : `?${ACCESS_TOKEN_PARAM}=${endpoint.accessToken}`;
  return endpoint.transport === 'sse'
    ? `${base}/sse${query}#${encodeURIComponent(endpoint.name)}`
    : `${base}/mcp${query}`;
}

/**
 * A workload URL as printed for people to read: without its access token, which stays in
 * the machine-readable outputs (`--json`, the API) and the client configurations.
 */
export function withoutAccessToken(url: string): string {
  return splitAccessToken(url).url;
}

/** A workload URL's access token (undefined when it carries none) and the URL without it. */
export function splitAccessToken(url: string): { url: string; token: string | undefined } {
  const q = url.indexOf('?');
  if (q === -1 || !url.includes(`${ACCESS_TOKEN_PARAM}=`)) return { url, token: undefined };
  const hash = url.indexOf('#', q);
  const params = new URLSearchParams(url.slice(q + 1, hash === -1 ? undefined : hash));
  const token = params.get(ACCESS_TOKEN_PARAM) ?? undefined;
  params.delete(ACCESS_TOKEN_PARAM);
  const query = params.toString();
  return {
    url: url.slice(0, q) + (query === '' ? '' : `?${query}`) + (hash === -1 ? '' : url.slice(hash)),
    token,
  };
}
