/**
 * Who may reach a workload's proxy: the two run-configuration rules that keep an MCP endpoint
 * from running tools for strangers (a page on another origin or another host must not call them;
 * the origin rule, `allowedOriginsProblem`, sits next to the run configuration's schema).
 *
 * - `host` (the proxy's bind address) beyond loopback is an explicit choice: it needs inbound
 *   authentication (`oidc_config` or `embedded_auth_server_config`). A wildcard bind
 *   (`0.0.0.0`, `::`) counts as beyond loopback: it listens on every interface. An MCP
 *   endpoint without authentication on the network runs tools for anyone who can connect, and
 *   the MCP 2025-11-25 "Transports / Security Warning" asks local servers to bind to localhost.
 * - `allowed_origins` lists exact browser origins (`scheme://host[:port]`) accepted besides the
 *   proxy's own; anything looser (a path, a wildcard, `null`) is refused by name.
 *
 * The manager checks both at create, update and import (400 before anything is written); the
 * runner checks the host rule again before it binds, for records written before the rule.
 * Pure functions with no dependencies beyond `shared`: the runner loads this module up front.
 */
import { isLoopbackName, isWildcardAddress, workloadUrl } from '../shared/index.js';
import type { RunConfig } from './run-config.js';
import type { WorkloadRow } from './workload-store.js';

type ExposureFields = Pick<RunConfig, 'host' | 'oidc_config' | 'embedded_auth_server_config'>;

/** `endpoint_access` value by which an owner opens a workload to every local caller. */
export const OPEN_TO_LOCAL_CALLERS = 'anyone-on-this-machine';

/**
 * Who may call the workload's tools, as the API, `skep list` and the UI say it:
 * - `owner`: whoever holds its access token (the owner's store and client configs);
 * - `inbound-auth`: whoever its own inbound authentication admits (`oidc_config`, or the
 *   embedded authorization server);
 * - `anyone-on-this-machine`: every account and process that can connect (the owner's
 *   explicit choice, `endpoint_access`).
 */
export type EndpointAccess = 'owner' | 'inbound-auth' | typeof OPEN_TO_LOCAL_CALLERS;

export function endpointAccessOf(
  config: ExposureFields & Pick<RunConfig, 'endpoint_access'>,
): EndpointAccess {
  if (hasInboundAuth(config)) return 'inbound-auth';
  return config.endpoint_access === OPEN_TO_LOCAL_CALLERS ? OPEN_TO_LOCAL_CALLERS : 'owner';
}

/**
 * The URL a client of this workload is given: its proxy endpoint, carrying the access token
 * when the proxy asks for one. `transport` overrides the proxy mode (the virtual MCP speaks
 * streamable HTTP to every backend).
 */
export function proxyUrlOf(
  row: Pick<WorkloadRow, 'name' | 'port' | 'config' | 'accessToken'>,
  transport: string | undefined = row.config.proxy_mode,
): string {
  return workloadUrl({
    name: row.name,
    port: row.port,
    host: row.config.host,
    transport,
    accessToken: endpointAccessOf(row.config) === 'owner' ? row.accessToken : undefined,
  });
}

/** True when the workload authenticates its callers (what the auth chain enforces). */
function hasInboundAuth(config: ExposureFields): boolean {
  if (config.embedded_auth_server_config !== undefined) return true;
  const oidc = config.oidc_config;
  // An oidc_config with none of these verifies nothing (the chain refuses it at start).
  return (
    oidc !== undefined &&
    [oidc.issuer, oidc.jwksurl, oidc.introspectionURL].some((v) => typeof v === 'string' && v !== '')
  );
}

/**
 * Why this bind address may not be used as configured, or undefined when it may. Loopback
 * names (`127.0.0.1`, `localhost`, `::1`) are always fine; anything else, wildcards included,
 * needs inbound authentication.
 */
export function hostExposureProblem(config: ExposureFields): string | undefined {
  const host = config.host.trim();
  if (host !== '' && isLoopbackName(host)) return undefined;
  if (hasInboundAuth(config)) return undefined;
  const where =
    host === '' || isWildcardAddress(host)
      ? `host '${config.host}' listens on every network interface`
      : `host '${config.host}' is not a loopback address`;
  return (
    `${where}, and the workload has no inbound authentication: anyone who can reach that ` +
    `address could call its tools. Use host 127.0.0.1 (the default), or require a token with ` +
    `oidc (oidc_config: issuer, jwksurl or introspectionURL) or embedded_auth_server_config`
  );
}
