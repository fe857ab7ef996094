/**
 * Wire views of a stored workload: the list row (`WorkloadSummary`) and the detail
 * (`WorkloadDetail`) the API and `skep list`/`inspect` show, and the status corrected by
 * what can be observed of the runner process. Secret references are shown, never values.
 */
import type { SkepConfig } from '../config/index.js';
import { type WorkloadSandbox, workloadSandbox } from '../dataplane/runtime/index.js';
import { definedOnly } from '../shared/index.js';
import { endpointAccessOf, proxyUrlOf } from './exposure.js';
import { runnerAlive } from './runner-process.js';
import {
  defaultGuardrailsConfig,
  type GuardrailsConfig,
  guardrailsSummary,
  type WorkloadDetail,
  type WorkloadSummary,
} from '../schemas/index.js';
import { parseSecretReference as parseSecretRef } from './secrets.js';
import type { WorkloadRow } from './workload-store.js';

/** A virtual MCP server runs no server process of its own: neither label applies to it. */
const VIRTUAL: WorkloadSandbox = {
  sandboxed: false,
  sandbox: 'n/a',
  reason: 'a virtual MCP server runs no server process (each backend has its own sandbox)',
  network: 'n/a',
  networkReason: 'not applicable: a virtual MCP server runs no server process',
};

/**
 * How the workload's server runs isolated and what network it gets, as enforced: the same
 * decision the runtime takes at start (`workloadSandbox`), from the same configuration.
 */
function isolationOf(skep: SkepConfig, c: WorkloadRow['config']): WorkloadSandbox {
  return c.vmcp !== undefined ? VIRTUAL : workloadSandbox(skep, c);
}

/**
 * What the guardrails stage does, in one line. The stored configuration passed
 * `GuardrailsConfigSchema` (its enums are the action, pattern and kind names), so it is a
 * `GuardrailsConfig`; the schema's static type only widens those names to strings.
 */
function guardrailsOf(c: WorkloadRow['config']): string {
  return guardrailsSummary(c.guardrails_config as GuardrailsConfig | undefined);
}

/** The `guardrails` line of a workload that has the default guardrails of a new workload. */
export const DEFAULT_GUARDRAILS_SUMMARY = guardrailsSummary(defaultGuardrailsConfig());

/**
 * The stored status, corrected by what can be observed: a workload recorded as running or
 * starting whose runner process is gone is reported `unhealthy` (it should run) or `stopped`.
 */
export function observedRow(row: WorkloadRow): WorkloadRow {
  const active = row.status === 'running' || row.status === 'starting' || row.status === 'stopping';
  if (!active || runnerAlive(row.runnerPid, row.name)) return row;
  if (row.desired === 'running') {
    return {
      ...row,
      status: 'unhealthy',
      statusContext: `runner process ${row.runnerPid ?? '(none)'} is not running`,
      // Nothing serves the tools its runner reported.
      tools: undefined,
    };
  }
  return { ...row, status: 'stopped', statusContext: '', tools: undefined };
}

/** The list rows of `rows` (the API's and `skep list`'s): observed status, only running ones unless `all`. */
export function summariesOf(skep: SkepConfig, rows: readonly WorkloadRow[], all: boolean): WorkloadSummary[] {
  return rows
    .map(observedRow)
    .filter((row) => all || row.status === 'running')
    .map((row) => summaryOf(skep, row));
}

export function summaryOf(skep: SkepConfig, row: WorkloadRow): WorkloadSummary {
  const c = row.config;
  const { sandboxed, sandbox, network } = isolationOf(skep, c);
  return {
    name: row.name,
    package: c.remote_url ?? c.image,
    group: c.group,
    labels: c.container_labels,
    port: c.port,
    proxy_mode: c.proxy_mode ?? 'streamable-http',
    remote: c.remote_url !== undefined,
    url: proxyUrlOf(row),
    // ToolHive's `tools` are the server's tool names: as its runner listed them at the proxy,
    // else (not reported yet, or stopped) the names the configuration exposes, if it lists any.
    tools: row.tools ?? c.tools_filter ?? [],
    transport_type: c.transport,
    status: row.status,
    status_context: row.statusContext,
    created_at: row.createdAt,
    started_at: row.startedAt ?? '',
    sandboxed,
    sandbox,
    network,
    endpoint_access: endpointAccessOf(c),
    guardrails: guardrailsOf(c),
    autostart: row.autostart,
  };
}

export function detailOf(skep: SkepConfig, row: WorkloadRow): WorkloadDetail {
  const c = row.config;
  const auth = c.remote_auth_config;
  const oidc = c.oidc_config;
  const refOf = (text: string | undefined) => (text === undefined ? undefined : parseSecretRef(text));
  const { sandboxed, sandbox, reason, network, networkReason } = isolationOf(skep, c);
  return {
    name: row.name,
    image: c.image,
    host: c.host,
    group: c.group,
    url: c.remote_url ?? '',
    transport: c.transport,
    proxy_mode: c.proxy_mode ?? 'streamable-http',
    authz_config: c.authz_config_path ?? '',
    cmd_arguments: c.cmd_args,
    tools: c.tools_filter ?? [],
    volumes: c.volumes,
    env_vars: c.env_vars,
    headers: (auth?.headers as WorkloadDetail['headers'] | undefined) ?? [],
    header_forward: c.header_forward ?? {},
    network_isolation: c.isolate_network ?? false,
    trust_proxy_headers: c.trust_proxy_headers ?? false,
    proxy_port: c.port,
    target_port: c.target_port ?? 0,
    oauth_config: definedOnly({
      issuer: auth?.issuer,
      authorize_url: auth?.authorize_url,
      token_url: auth?.token_url,
      client_id: auth?.client_id,
      client_secret: refOf(auth?.client_secret),
      bearer_token: refOf(auth?.bearer_token),
      scopes: auth?.scopes,
      use_pkce: auth?.use_pkce,
      oauth_params: auth?.oauth_params,
      callback_port: auth?.callback_port,
      skip_browser: auth?.skip_browser,
      resource: auth?.resource,
    }),
    oidc: definedOnly({
      issuer: oidc?.issuer,
      audience: oidc?.audience,
      jwks_url: oidc?.jwksurl,
      introspection_url: oidc?.introspectionURL,
      client_id: oidc?.clientID,
      scopes: oidc?.scopes,
    }),
    permission_profile: c.permission_profile,
    runtime_config: c.runtime_config ?? {},
    secrets: c.secrets.map(parseSecretRef),
    tools_override: c.tools_override ?? {},
    status: row.status,
    status_context: row.statusContext,
    sandboxed,
    sandbox,
    sandbox_reason: reason,
    network,
    network_detail: networkReason,
    endpoint_access: endpointAccessOf(c),
    guardrails: guardrailsOf(c),
    autostart: row.autostart,
  };
}
