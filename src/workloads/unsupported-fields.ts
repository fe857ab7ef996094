/**
 * No silent fields (docs/running-servers.md, "Fields that would be ignored are refused"). A
 * run-configuration field that this build does not honour — not at all yet, or not where this
 * workload's server runs — is refused as soon as it holds anything but its default: 400
 * `unsupported_field`, naming the field, on create, update and import (`skep run --from-config`),
 * before anything is written. Defaults pass, so Studio's create body and the reference's exports,
 * which carry empty or default values, are accepted. Every field not listed here has an effect
 * (docs/running-servers.md, "Fields that would be ignored are refused");
 * `test/integration/workloads/unsupported-fields-by-server.test.ts` keeps the two lists complete.
 */
import type { SkepConfig } from '../config/index.js';
import { workloadSandbox } from '../dataplane/runtime/index.js';
import { SkepError } from '../shared/index.js';
import { telemetryHasDestination } from '../dataplane/middleware/telemetry/index.js';
import type { RunConfig } from './run-config.js';
import { keepsHttpSessions, sessionRedisWithoutAddress } from './session-storage.js';

/** A field that cannot be honoured, and what to do instead. */
export interface FieldProblem {
  /** Dotted path in the run configuration (`oidc_config.cacertPath`). */
  field: string;
  message: string;
}

/** Where a workload's server runs: the fields that apply to it depend on it. */
interface Placement {
  runsIn: 'remote' | 'container' | 'process';
  transport: RunConfig['transport'];
  isolateNetwork: boolean;
  /** `rate_limit_config` asks for limits (their buckets go to `scaling_config.session_redis`). */
  rateLimited: boolean;
  /** The proxy relays a streamable-HTTP server's sessions and keeps them (`session-storage.ts`). */
  keepsSessions: boolean;
  /** Inbound auth fetches an issuer's discovery document or JWKS (`oidc_config` issuer or jwksurl). */
  fetchesIssuerKeys: boolean;
  /** `oidc_config.authTokenFile`, when set. */
  oidcAuthTokenFile: string | undefined;
}

interface FieldRule {
  readonly field: string;
  /** True when the value asks for nothing: absent, empty, false, or the documented default. */
  readonly isDefault: (value: unknown) => boolean;
  /**
   * For a field that works only for some servers: undefined where it has an effect, else why
   * not and what to do ("for a remote server: ..."). Absent: the field has no effect anywhere
   * yet, and `hint` says what to do.
   */
  readonly notHonoured?: (where: Placement, value: unknown) => string | undefined;
  readonly hint?: string;
}

/** Absent, null, false, '', 0, [] or an object of such values: asks for nothing. */
function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === '' || value === 0) return true;
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === 'object') return Object.values(value).every(isEmpty);
  return false;
}

const TELEMETRY_SWITCHES = new Set([
  'tracingEnabled',
  'metricsEnabled',
  'useLegacyAttributes',
  'samplingRate',
]);
const LOOPBACK_NAMES = new Set(['127.0.0.1', 'localhost', '::1']);
const REMOVE = 'remove it';

/** Fields that have no effect in this build: every value but the default is refused. */
const notYet = (field: string, hint: string, isDefault: (v: unknown) => boolean = isEmpty): FieldRule => ({
  field,
  isDefault,
  hint,
});

/** Fields that act on outgoing HTTP requests: a local stdio server gets none. */
const httpOnly = (field: string): FieldRule => ({
  field,
  isDefault: isEmpty,
  notHonoured: (w) =>
    w.runsIn !== 'remote' && w.transport === 'stdio'
      ? 'for a stdio server: it sets headers of requests to an HTTP server (a remote url, or transport sse/streamable-http), and a stdio server receives none; remove it'
      : undefined,
});

const CACHED_LOGIN =
  'it holds another tool’s cached login; Skep keeps its own login state in its secrets store and logs in again, so remove it';

const RULES: readonly FieldRule[] = [
  // ---- Not honoured anywhere yet.
  notYet(
    'registry_url',
    'Skep checks upgrades against its own configured registry, by registry_server_name; remove it',
  ),
  notYet(
    'registry_api_url',
    'Skep checks upgrades against its own configured registry, by registry_server_name; remove it',
  ),
  notYet(
    'target_host',
    'the proxy reaches the server on loopback; remove it (or set 127.0.0.1)',
    (v) => isEmpty(v) || (typeof v === 'string' && LOOPBACK_NAMES.has(v)),
  ),
  notYet('publish', 'only the proxy port is published; remove it'),
  notYet('env_file_dir', 'set the variables in env_vars, or in secrets for values that must not be stored'),
  notYet(
    'debug',
    'start Skep with SKEP_RUNNER_LOG_LEVEL=debug for debug logs of the runner (skep logs <name> --proxy); remove it',
  ),
  notYet(
    'allow_docker_gateway',
    'a network-isolated container cannot reach the Docker host gateway; set network_isolation to false to let the server reach the host',
  ),
  notYet('stateless', REMOVE),
  notYet(
    'runtime_config',
    'Skep runs npx:// and uvx:// servers as local processes, or in the runtime.node_image / runtime.uvx_image of its config; remove it',
  ),
  notYet('ignore_config.printOverlays', 'Skep reads no .thvignore files; remove it'),
  notYet('mcpserver_generation', 'it is written by a Kubernetes operator; remove it'),
  notYet('k8s_pod_template_patch', 'it applies to Kubernetes pods; remove it'),
  notYet(
    'svc_ca_bundle',
    'to trust another certificate authority, start Skep with NODE_EXTRA_CA_CERTS=<file>; remove it',
  ),
  notYet(
    'scaling_config.backend_replicas',
    'Skep runs one proxy and one server per workload; remove it',
    // The reference counts `backend_replicas: 0` as a real value (a replica count, not "unset").
    (v) => v === undefined || v === null,
  ),
  notYet('additional_middleware_configs', 'list the middlewares in middleware_configs'),
  notYet('remote_auth_config.scope_param_name', 'scopes are sent in the standard scope parameter; remove it'),
  notYet('remote_auth_config.env_vars', 'set the values in env_vars or secrets; remove it'),
  notYet('remote_auth_config.cached_cimd_client_id', CACHED_LOGIN),
  notYet('remote_auth_config.cached_client_id', CACHED_LOGIN),
  notYet('remote_auth_config.cached_client_secret_ref', CACHED_LOGIN),
  notYet('remote_auth_config.cached_refresh_token_ref', CACHED_LOGIN),
  notYet('remote_auth_config.cached_reg_token_ref', CACHED_LOGIN),
  notYet('remote_auth_config.cached_secret_expiry', CACHED_LOGIN),
  notYet('remote_auth_config.cached_token_expiry', CACHED_LOGIN),
  notYet('aws_sts_config.subject_provider_name', 'the role is assumed with the inbound token; remove it'),

  // ---- Honoured only where the server runs in a particular way.
  {
    field: 'volumes',
    isDefault: isEmpty,
    notHonoured: (w) =>
      w.runsIn === 'container'
        ? undefined
        : w.runsIn === 'remote'
          ? 'for a remote server: there is no local server to mount them into; remove it'
          : 'for a server that runs as a local process: volumes are container mounts; to let the sandbox reach a path use permission_profile.read or permission_profile.write',
  },
  {
    field: 'permission_profile.privileged',
    isDefault: (v) => v !== true,
    notHonoured: (w) =>
      w.runsIn === 'container'
        ? undefined
        : `for ${w.runsIn === 'remote' ? 'a remote server' : 'a server that runs as a local process'}: only a container can be privileged; remove it`,
  },
  {
    // `none` cuts the network; `host` is what an unisolated server gets (Studio sends it with
    // network_isolation false). `bridge` names the default.
    field: 'permission_profile.network.mode',
    isDefault: (v) => v === undefined || v === '' || v === 'none' || v === 'bridge',
    notHonoured: (w, v) =>
      v !== 'host'
        ? `as '${String(v)}': use none, host (with network_isolation false) or leave it out`
        : w.isolateNetwork && w.runsIn !== 'remote'
          ? "as 'host' while network_isolation is on: set network_isolation to false for an unrestricted network, or leave mode out"
          : undefined,
  },
  {
    field: 'image_verification',
    isDefault: (v) => v === undefined,
    notHonoured: (w) =>
      w.runsIn === 'container'
        ? undefined
        : `for ${w.runsIn === 'remote' ? 'a remote server' : 'a server that runs as a local process'}: it checks a container image's signature; remove it`,
  },
  {
    field: 'sandbox',
    isDefault: (v) => v === undefined || v === 'auto',
    notHonoured: (w) =>
      w.runsIn === 'process'
        ? undefined
        : w.runsIn === 'remote'
          ? 'for a remote server: it chooses the sandbox of a local process; remove it'
          : 'for a server that runs in a container: it chooses the sandbox of a local process, and the container engine isolates this one; remove it',
  },
  {
    field: 'session_mode',
    isDefault: (v) => v === undefined || v === 'shared',
    notHonoured: (w) =>
      w.runsIn === 'process' && w.transport === 'stdio'
        ? undefined
        : 'except for a stdio server that runs as a local process: per-session starts one server process per client session; use session_mode shared',
  },
  {
    field: 'cmd_args',
    isDefault: isEmpty,
    notHonoured: (w) =>
      w.runsIn === 'remote' ? 'for a remote server: no local server is started; remove them' : undefined,
  },
  {
    field: 'permission_profile_name_or_path',
    isDefault: isEmpty,
    notHonoured: (w) =>
      w.runsIn === 'remote' ? 'for a remote server: no local server is started; remove it' : undefined,
  },
  {
    field: 'aws_sts_config',
    isDefault: isEmpty,
    notHonoured: (w) =>
      w.runsIn === 'remote'
        ? undefined
        : 'without a remote url: it signs requests to a remote server; remove it',
  },
  httpOnly('header_forward'),
  httpOnly('token_exchange_config'),
  httpOnly('upstream_swap_config'),
  httpOnly('remote_auth_config.bearer_token'),
  httpOnly('remote_auth_config.bearer_token_file'),
  {
    // Honoured by the telemetry stage when it exports somewhere (its values are checked there);
    // settings with nowhere to go are refused. The switches and the sampling rate alone are
    // the reference's defaults (they act on an endpoint), so they pass.
    field: 'telemetry_config',
    isDefault: (v) =>
      isEmpty(v) ||
      (typeof v === 'object' &&
        !Array.isArray(v) &&
        Object.entries(v as Record<string, unknown>).every(
          ([k, x]) => TELEMETRY_SWITCHES.has(k) || isEmpty(x),
        )),
    notHonoured: (_w, v) =>
      telemetryHasDestination(v)
        ? undefined
        : 'without endpoint or enablePrometheusMetricsPath: nothing would be exported; set endpoint (an OTLP/HTTP collector) or enablePrometheusMetricsPath: true, or remove telemetry_config',
  },
  {
    // Sessions of a streamable-HTTP server, and the rate limiter's buckets, go to this Redis.
    field: 'scaling_config.session_redis',
    isDefault: (v) => sessionRedisWithoutAddress(v) === 'default',
    notHonoured: (w, v) =>
      sessionRedisWithoutAddress(v) === 'not-default'
        ? 'without an address: db and key_prefix apply to the Redis at address; set address (host:port), or remove them'
        : w.keepsSessions || w.rateLimited
          ? undefined
          : w.transport === 'sse'
            ? 'for a server of the legacy SSE transport without rate_limit_config: its sessions are event streams held open through one proxy, whose answers must pass that proxy, so they are not shared; remove it, or set rate_limit_config to share rate-limit buckets'
            : 'for a stdio server without rate_limit_config: its sessions live in the server process this proxy started and cannot continue through another proxy; remove it, or set rate_limit_config to share rate-limit buckets',
  },
  {
    // It prefixes the URL of the SSE transport's `endpoint` event, which the proxy sends for a
    // stdio server (its own SSE transport) and a server of the SSE transport (passed through).
    field: 'endpoint_prefix',
    isDefault: isEmpty,
    notHonoured: (w) =>
      w.transport === 'streamable-http'
        ? 'for a streamable-HTTP server: it prefixes the URL of the SSE endpoint event, and the proxy serves no SSE transport for such a server (clients use /mcp); remove it'
        : undefined,
  },
  {
    // The reference's older name for `oidc_config.authTokenFile` (its CLI writes both): the
    // bearer token for the issuer's discovery and JWKS requests, re-read on every fetch.
    field: 'jwks_auth_token_file',
    isDefault: isEmpty,
    notHonoured: (w, v) =>
      !w.fetchesIssuerKeys
        ? 'without oidc_config.issuer or oidc_config.jwksurl: it is the bearer token for fetching the issuer’s discovery document and JWKS, and this workload fetches neither; remove it'
        : w.oidcAuthTokenFile !== undefined && w.oidcAuthTokenFile !== v
          ? 'when oidc_config.authTokenFile names another file: both name the token for the JWKS requests; keep one'
          : undefined,
  },
  {
    field: 'session_ttl',
    isDefault: isEmpty,
    notHonoured: (w) =>
      w.keepsSessions
        ? undefined
        : 'except for a streamable-HTTP server: it is how long the proxy keeps a session of such a server after its last use, and the proxy keeps no sessions of stdio or legacy SSE servers; remove it',
  },
];

/** The fields this module may refuse (for the test that keeps the field audit complete). */
export const REFUSABLE_FIELDS: readonly string[] = RULES.map((r) => r.field);

function valueAt(config: RunConfig, path: string): unknown {
  let value: unknown = config;
  for (const key of path.split('.')) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

function placementOf(config: RunConfig, skep: SkepConfig): Placement {
  const runsIn =
    config.remote_url !== undefined
      ? 'remote'
      : workloadSandbox(skep, config).sandbox === 'container'
        ? 'container'
        : 'process';
  return {
    runsIn,
    transport: config.transport,
    isolateNetwork: config.isolate_network !== false,
    rateLimited: !isEmpty(config.rate_limit_config),
    keepsSessions: keepsHttpSessions(config),
    fetchesIssuerKeys:
      config.embedded_auth_server_config === undefined && oidcBlocks(config).some(namesIssuerKeys),
    oidcAuthTokenFile: config.oidc_config?.authTokenFile || undefined,
  };
}

/** The `oidc_config` blocks inbound auth may be built from: the field, or an `auth` middleware's parameters. */
function oidcBlocks(config: RunConfig): unknown[] {
  const blocks: unknown[] = [config.oidc_config];
  for (const m of config.middleware_configs ?? []) {
    const params = m.parameters;
    if (m.type === 'auth' && params !== null && typeof params === 'object')
      blocks.push((params as Record<string, unknown>)['oidc_config']);
  }
  return blocks;
}

function namesIssuerKeys(block: unknown): boolean {
  if (block === null || typeof block !== 'object') return false;
  const { issuer, jwksurl } = block as Record<string, unknown>;
  return !isEmpty(issuer) || !isEmpty(jwksurl);
}

/**
 * Every field of `config` that would be stored and ignored: set to something but its default
 * while this build (or this kind of server) does nothing with it. Empty when all is honoured.
 */
export function unsupportedFields(config: RunConfig, skep: SkepConfig): FieldProblem[] {
  const problems: FieldProblem[] = [];
  let where: Placement | undefined;
  for (const rule of RULES) {
    if (rule.isDefault(valueAt(config, rule.field))) continue;
    if (rule.notHonoured === undefined) {
      problems.push({
        field: rule.field,
        message: `${rule.field} is not supported yet: ${rule.hint ?? REMOVE}`,
      });
      continue;
    }
    where ??= placementOf(config, skep);
    const why = rule.notHonoured(where, valueAt(config, rule.field));
    if (why !== undefined)
      problems.push({ field: rule.field, message: `${rule.field} is not supported ${why}` });
  }
  // `vmcp` (honoured: the runner serves a virtual MCP server) runs no server of its own, so
  // the fields that start or reach one have no effect there.
  if (config.vmcp !== undefined) {
    for (const field of VIRTUAL_IGNORES) {
      if (
        !isEmpty(valueAt(config, field)) &&
        !(field === 'session_mode' && valueAt(config, field) === 'shared')
      )
        problems.push({
          field,
          message: `${field} is not supported for a virtual MCP server (vmcp): it starts no server of its own; remove it`,
        });
    }
  }
  return problems;
}

const VIRTUAL_IGNORES = [
  'cmd_args',
  'volumes',
  'target_port',
  'permission_profile_name_or_path',
  'session_mode',
  'header_forward',
  'token_exchange_config',
  'upstream_swap_config',
  'aws_sts_config',
  'remote_auth_config',
];

/** Throws 400 `unsupported_field` naming the first such field (and the others, if any). */
export function checkSupportedFields(config: RunConfig, skep: SkepConfig): void {
  const [first, ...others] = unsupportedFields(config, skep);
  if (first === undefined) return;
  const more = others.length === 0 ? '' : ` (also not supported: ${others.map((p) => p.field).join(', ')})`;
  throw new SkepError('unsupported_field', `${first.message}${more}`);
}
