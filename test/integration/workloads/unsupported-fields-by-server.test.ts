/**
 * No silent fields: a run-configuration field this build would store and
 * ignore is refused with 400 `unsupported_field` naming it; its default passes; fields that
 * work only for some servers pass there and are refused elsewhere; Studio's create body passes.
 * The first test is the field audit: every RunConfig field is either honoured (where, below)
 * or refusable.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../../../src/config/index.js';
import { isSkepError, SkepError } from '../../../src/shared/index.js';
import { applyRequest, configFromCreate } from '../../../src/workloads/config-builder.js';
import { type CreateWorkloadRequest, RunConfigSchema } from '../../../src/schemas/index.js';
import { parseRunConfig, type RunConfig } from '../../../src/workloads/index.js';
import {
  checkSupportedFields,
  REFUSABLE_FIELDS,
  unsupportedFields,
} from '../../../src/workloads/unsupported-fields.js';

/** Defaults only: `runtime.type: auto`, no node image, so npx/cmd run as processes, images in containers. */
const skep = loadConfig({ SKEP_HOME: '/nonexistent/skep-unit-unsupported-fields' });

/** Where each honoured top-level field has its effect (the README's field table). */
const HONOURED: Record<string, string> = {
  schema_version: 'store: rewritten to the current version on import',
  name: 'everywhere',
  base_name: 'derived from name',
  container_name: 'derived from name',
  image: 'runtime',
  remote_url: 'proxy upstream',
  registry_server_name: 'upgrade check',
  cmd_args: 'runtime (not for remote)',
  transport: 'runtime and proxy',
  proxy_mode: 'workload URL, client configs',
  host: 'proxy bind',
  port: 'proxy bind',
  target_port: 'runtime (sse/streamable-http servers)',
  allowed_origins: 'proxy origin check',
  endpoint_access: 'proxy caller check (the workload access token)',
  group: 'groups, client configs',
  env_vars: 'server environment; embedded auth server *_env_var',
  secrets: 'server environment',
  volumes: 'container binds (containers only)',
  container_labels: 'container labels; list `labels`',
  isolate_network: 'sandbox / container network',
  trust_proxy_headers: 'audit X-Forwarded-For',
  strict_protocol_validation: 'always on: the proxy refuses unknown MCP-Protocol-Version on a session',
  session_mode: 'runner (stdio, process runtime)',
  sandbox: 'process runtime',
  tools_filter: 'proxy tool policy',
  tools_override: 'proxy tool policy',
  permission_profile_name_or_path: 'runtime profile',
  permission_profile: 'runtime profile; inbound.allow_host at the proxy',
  header_forward: 'auth chain (HTTP servers)',
  ignore_config: 'loadGlobal accepted (no ignore files are read); printOverlays refused',
  authz_config: 'authorization stage',
  authz_config_path: 'authorization stage',
  audit_config: 'audit stage',
  audit_config_path: 'audit stage',
  rate_limit_config: 'ratelimit stage',
  guardrails_config: 'guardrails stage',
  image_verification: 'container runtime (signature check before the container starts)',
  rate_limit_namespace: 'ratelimit stage (key names)',
  aws_sts_config: 'auth chain (remote servers)',
  oidc_config: 'inbound auth',
  middleware_configs: 'pipeline',
  validating_webhooks: 'webhook stage',
  mutating_webhooks: 'webhook stage',
  remote_auth_config: 'auth chain (remote login, bearer token); headers shown in the detail',
  token_exchange_config: 'auth chain (HTTP servers)',
  upstream_swap_config: 'auth chain (HTTP servers)',
  embedded_auth_server_config: 'embedded authorization server',
  vmcp: 'virtual MCP server (runner, src/dataplane/vmcp)',
};

type Kind = 'process' | 'process-http' | 'container' | 'remote';

function base(kind: Kind): RunConfig {
  switch (kind) {
    case 'process':
      return parseRunConfig({ name: 'w', image: 'cmd:///bin/true' });
    case 'process-http':
      return parseRunConfig({
        name: 'w',
        image: 'cmd:///bin/true',
        transport: 'streamable-http',
        target_port: 9,
      });
    case 'container':
      return parseRunConfig({ name: 'w', image: 'ghcr.io/acme/server:1' });
    case 'remote':
      return parseRunConfig({
        name: 'w',
        remote_url: 'https://mcp.example.com/mcp',
        transport: 'streamable-http',
      });
  }
}

/** `config` with `value` at the dotted `path` (intermediate objects created). */
function withValue(config: RunConfig, path: string, value: unknown): RunConfig {
  const copy = structuredClone(config) as unknown as Record<string, unknown>;
  const keys = path.split('.');
  let at = copy;
  for (const key of keys.slice(0, -1)) {
    at[key] ??= {};
    at = at[key] as Record<string, unknown>;
  }
  at[keys.at(-1) as string] = value;
  return copy as unknown as RunConfig;
}

function refusal(config: RunConfig): SkepError | undefined {
  try {
    checkSupportedFields(config, skep);
    return undefined;
  } catch (err) {
    if (isSkepError(err)) return err;
    throw err;
  }
}

/** [field, a value that is refused, on which server, values that pass there]. */
const REFUSED: [string, unknown, Kind, unknown[]][] = [
  ['registry_url', 'https://registry.example.com', 'process', ['']],
  ['registry_api_url', 'https://registry.example.com/api', 'process', ['']],
  ['target_host', '10.0.0.7', 'process-http', ['', '127.0.0.1', 'localhost']],
  ['publish', ['8080:8080'], 'container', [[]]],
  ['env_file_dir', '/etc/env', 'process', ['']],
  ['debug', true, 'process', [false]],
  ['allow_docker_gateway', true, 'container', [false]],
  ['stateless', true, 'process-http', [false]],
  ['session_ttl', '2h', 'process', ['']],
  [
    'runtime_config',
    { builder_image: 'node:22' },
    'process',
    [{}, { additional_packages: [], runtime_env: {} }],
  ],
  ['runtime_config', { additional_packages: ['git'] }, 'container', [{ build_with: '' }]],
  ['ignore_config.printOverlays', true, 'container', [false]],
  ['mcpserver_generation', 3, 'container', [0]],
  ['k8s_pod_template_patch', '{"spec":{}}', 'container', ['']],
  ['svc_ca_bundle', '/etc/ca.pem', 'process', ['']],
  ['jwks_auth_token_file', '/var/run/token', 'process', ['']],
  // Telemetry: honoured when it exports somewhere; settings with nowhere to go are refused, the
  // reference's switches and sampling rate alone pass (they are its defaults).
  [
    'telemetry_config',
    { headers: { 'x-api-key': 'k' }, tracingEnabled: true },
    'process',
    [
      {},
      { metricsEnabled: false },
      { tracingEnabled: true, samplingRate: '0.05', useLegacyAttributes: true },
    ],
  ],
  ['scaling_config.backend_replicas', 0, 'container', [null]],
  [
    'scaling_config.session_redis',
    { address: 'redis:6379' },
    'container',
    [{}, { key_prefix: '' }, { key_prefix: 'thv:proxy:session:', db: 0 }],
  ],
  ['additional_middleware_configs', [{ type: 'ratelimit' }], 'process', [[]]],
  ['remote_auth_config.scope_param_name', 'scopes', 'remote', ['']],
  ['remote_auth_config.env_vars', [{ name: 'TOKEN' }], 'remote', [[]]],
  ['remote_auth_config.cached_cimd_client_id', 'https://client.example/cimd', 'remote', ['']],
  ['remote_auth_config.cached_client_id', 'abc', 'remote', ['']],
  ['remote_auth_config.cached_client_secret_ref', 'OAUTH_CLIENT_SECRET_w', 'remote', ['']],
  ['remote_auth_config.cached_refresh_token_ref', 'OAUTH_REFRESH_TOKEN_w', 'remote', ['']],
  ['remote_auth_config.cached_reg_token_ref', 'OAUTH_REG_TOKEN_w', 'remote', ['']],
  ['remote_auth_config.cached_secret_expiry', '2030-01-01T00:00:00Z', 'remote', ['']],
  ['remote_auth_config.cached_token_expiry', '2030-01-01T00:00:00Z', 'remote', ['']],
  ['aws_sts_config.subject_provider_name', 'idp', 'remote', ['']],
  // Honoured only for some servers: refused where they would be ignored.
  ['volumes', ['/data:/data'], 'process', [[]]],
  ['volumes', ['/data:/data'], 'remote', [[]]],
  ['permission_profile.privileged', true, 'process', [false]],
  ['permission_profile.privileged', true, 'remote', [false]],
  ['permission_profile.network.mode', 'host', 'process', ['none', 'bridge', '']],
  ['permission_profile.network.mode', 'macvlan', 'container', ['none']],
  ['image_verification', { policy: 'enforce' }, 'process', [undefined]],
  ['image_verification', { policy: 'warn' }, 'remote', [undefined]],
  ['sandbox', 'off', 'container', ['auto']],
  ['sandbox', 'bwrap', 'remote', ['auto']],
  ['session_mode', 'per-session', 'container', ['shared']],
  ['session_mode', 'per-session', 'process-http', ['shared']],
  ['session_mode', 'per-session', 'remote', ['shared']],
  ['cmd_args', ['--verbose'], 'remote', [[]]],
  // The SSE endpoint event it prefixes: a streamable-HTTP server has none at the proxy.
  ['endpoint_prefix', '/team-a', 'process-http', ['']],
  ['endpoint_prefix', '/team-a', 'remote', ['']],
  ['permission_profile_name_or_path', 'none', 'remote', ['']],
  ['aws_sts_config', { region: 'eu-west-1' }, 'process-http', [{}]],
  [
    'header_forward',
    { add_plaintext_headers: { 'X-Team': 'a' } },
    'process',
    [{}, { add_plaintext_headers: {} }],
  ],
  ['token_exchange_config', { token_url: 'https://idp.example/token' }, 'process', [{}]],
  ['upstream_swap_config', { provider_name: 'idp' }, 'process', [{}]],
  ['remote_auth_config.bearer_token', 'api-token,target=bearer_token', 'process', ['']],
  ['remote_auth_config.bearer_token_file', '/run/token', 'process', ['']],
];

/** [field, value, server]: honoured there, so accepted. */
const ACCEPTED_WHERE_HONOURED: [string, unknown, Kind][] = [
  ['telemetry_config', { endpoint: 'otel:4318' }, 'process'],
  ['telemetry_config', { enablePrometheusMetricsPath: true, customAttributes: { team: 'a' } }, 'remote'],
  ['volumes', ['/data:/data:ro'], 'container'],
  ['permission_profile.privileged', true, 'container'],
  ['image_verification', { policy: 'warn', public_keys: [] }, 'container'],
  ['sandbox', 'off', 'process'],
  ['permission_profile.network.mode', 'none', 'process'],
  ['session_mode', 'per-session', 'process'],
  ['cmd_args', ['--verbose'], 'process'],
  ['endpoint_prefix', '/team-a', 'process'],
  ['endpoint_prefix', '/team-a/', 'container'],
  ['permission_profile_name_or_path', 'none', 'container'],
  ['aws_sts_config', { region: 'eu-west-1' }, 'remote'],
  ['header_forward', { add_plaintext_headers: { 'X-Team': 'a' } }, 'process-http'],
  ['header_forward', { add_plaintext_headers: { 'X-Team': 'a' } }, 'remote'],
  ['token_exchange_config', { token_url: 'https://idp.example/token' }, 'process-http'],
  ['upstream_swap_config', { provider_name: 'idp' }, 'remote'],
  ['remote_auth_config.bearer_token', 'api-token,target=bearer_token', 'remote'],
  ['strict_protocol_validation', true, 'process-http'],
  ['ignore_config.loadGlobal', true, 'container'],
  ['trust_proxy_headers', true, 'process'],
  ['container_labels', { team: 'a' }, 'process'],
  ['rate_limit_config', { shared: { maxTokens: 1, refillPeriod: '1m' } }, 'process'],
  ['rate_limit_namespace', 'team-a', 'process'],
  ['session_ttl', '90m', 'process-http'],
  ['session_ttl', '2h', 'remote'],
  ['scaling_config.session_redis', { address: 'redis:6379', key_prefix: 'team-a:' }, 'process-http'],
  ['scaling_config.session_redis', { address: 'redis:6379', db: 2 }, 'remote'],
];

test('field audit: every RunConfig field is honoured somewhere or refusable', () => {
  const schemaFields = Object.keys((RunConfigSchema as unknown as { properties: object }).properties);
  const refusableTop = new Set(REFUSABLE_FIELDS.map((f) => f.split('.')[0]));
  const unclassified = schemaFields.filter((f) => !(f in HONOURED) && !refusableTop.has(f));
  assert.deepEqual(unclassified, [], 'classify these fields in HONOURED or in unsupported-fields.ts');
  const stale = Object.keys(HONOURED).filter((f) => !schemaFields.includes(f));
  assert.deepEqual(stale, []);
});

test('the refusal cases cover every refusable field', () => {
  const covered = new Set(REFUSED.map(([field]) => field));
  assert.deepEqual(
    REFUSABLE_FIELDS.filter((f) => !covered.has(f)),
    [],
  );
});

test('a field set to anything but its default is 400 unsupported_field naming it', () => {
  for (const [field, value, kind] of REFUSED) {
    const err = refusal(withValue(base(kind), field, value));
    const what = `${field}=${JSON.stringify(value)} on ${kind}`;
    assert.ok(err !== undefined, `${what}: not refused`);
    assert.equal(err.code, 'unsupported_field', what);
    assert.equal(err.status, 400, what);
    assert.ok(err.message.startsWith(`${field} is not supported `), `${what}: ${err.message}`);
    // Every message says what to do instead.
    assert.match(err.message, /: .*(remove|set|use|start|list)/, what);
  }
});

test('defaults pass (absent, empty, false, the documented default)', () => {
  for (const kind of ['process', 'process-http', 'container', 'remote'] as const)
    assert.deepEqual(unsupportedFields(base(kind), skep), [], kind);
  for (const [field, , kind, defaults] of REFUSED) {
    for (const value of [undefined, ...defaults]) {
      const problems = unsupportedFields(withValue(base(kind), field, value), skep);
      assert.deepEqual(problems, [], `${field}=${JSON.stringify(value)} on ${kind}`);
    }
  }
});

test('fields honoured only for some servers pass where they have an effect', () => {
  for (const [field, value, kind] of ACCEPTED_WHERE_HONOURED)
    assert.deepEqual(unsupportedFields(withValue(base(kind), field, value), skep), [], `${field} on ${kind}`);
});

test("permission_profile.network.mode 'host' passes with network isolation off (Studio's host access)", () => {
  const host = withValue(base('container'), 'permission_profile.network.mode', 'host');
  assert.match(
    refusal(host)?.message ?? '',
    /^permission_profile\.network\.mode is not supported as 'host' while network_isolation is on: set network_isolation to false/,
  );
  assert.deepEqual(unsupportedFields({ ...host, isolate_network: false }, skep), []);
});

test('several unsupported fields: the message names the first and lists the others', () => {
  let config = withValue(base('process'), 'stateless', true);
  config = withValue(config, 'telemetry_config', { customAttributes: { team: 'a' } });
  config = withValue(config, 'volumes', ['/a:/a']);
  const err = refusal(config);
  assert.equal(err?.code, 'unsupported_field');
  assert.match(err.message, /^stateless is not supported yet: /);
  assert.match(err.message, /\(also not supported: volumes, telemetry_config\)$/);
  assert.deepEqual(
    unsupportedFields(config, skep).map((p) => p.field),
    ['stateless', 'volumes', 'telemetry_config'],
  );
});

test('Studio: its create bodies (network isolation, permission profile, docker gateway at their defaults) pass', () => {
  const studio = (fields: Partial<CreateWorkloadRequest>): CreateWorkloadRequest => ({
    name: 'fetch',
    image: 'ghcr.io/stackloklabs/gofetch/server:1.0.1',
    transport: 'streamable-http',
    proxy_mode: 'streamable-http',
    env_vars: {},
    secrets: [],
    cmd_arguments: [],
    target_port: 8080,
    volumes: [],
    ...fields,
  });
  const bodies: CreateWorkloadRequest[] = [
    // Network access "host": no isolation, no profile rules.
    studio({ network_isolation: false, permission_profile: { network: { mode: 'host' } } }),
    // Network access "proxy", destinations "anywhere", host access off.
    studio({
      network_isolation: true,
      permission_profile: {
        network: { outbound: { allow_host: [], allow_port: [], insecure_allow_all: true } },
      },
      allow_docker_gateway: false,
    }),
    // The same for a local package, with the older form's empty profile.
    studio({
      image: 'npx://@modelcontextprotocol/server-everything',
      network_isolation: false,
      permission_profile: {},
    }),
  ];
  for (const body of bodies) {
    const config = configFromCreate(body, undefined);
    assert.deepEqual(unsupportedFields(config, skep), [], JSON.stringify(body));
  }
  // An edit that echoes the workload detail back (empty objects for unset sections) passes too.
  const created = configFromCreate(bodies[0] as CreateWorkloadRequest, undefined);
  const echoed = applyRequest(created, {
    runtime_config: {},
    header_forward: {},
    oauth_config: {},
    headers: [],
    allow_docker_gateway: false,
    network_isolation: false,
  });
  assert.deepEqual(unsupportedFields(echoed, skep), []);
  // Host access through the Docker gateway is what Skep cannot give yet.
  const gateway = configFromCreate(
    studio({ network_isolation: true, allow_docker_gateway: true }),
    undefined,
  );
  assert.match(
    refusal(gateway)?.message ?? '',
    /^allow_docker_gateway is not supported yet: .*network_isolation/,
  );
});

test('the reference’s export defaults import unchanged', () => {
  // What an export of a plain reference workload carries besides the required fields.
  const exported = parseRunConfig({
    name: 'fetch',
    image: 'ghcr.io/stackloklabs/gofetch/server:1.0.1',
    transport: 'streamable-http',
    target_host: '127.0.0.1',
    target_port: 8080,
    ignore_config: { loadGlobal: true, printOverlays: false },
    isolate_network: true,
    allow_docker_gateway: false,
    debug: false,
    stateless: false,
    strict_protocol_validation: false,
    publish: [],
    runtime_config: { builder_image: '', additional_packages: [] },
    container_labels: {},
  });
  assert.deepEqual(unsupportedFields(exported, skep), []);
});

test('scaling_config.session_redis passes for a streamable-HTTP server (sessions), elsewhere only with rate_limit_config', () => {
  const value = { address: 'redis:6379', db: 2 };
  assert.deepEqual(
    unsupportedFields(withValue(base('process-http'), 'scaling_config.session_redis', value), skep),
    [],
  );
  assert.deepEqual(
    unsupportedFields(withValue(base('remote'), 'scaling_config.session_redis', value), skep),
    [],
  );
  // stdio: a session lives in the server process and cannot move.
  const redis = withValue(base('container'), 'scaling_config.session_redis', value);
  assert.match(
    refusal(redis)?.message ?? '',
    /^scaling_config\.session_redis is not supported for a stdio server without rate_limit_config: its sessions live in the server process .*; remove it, or set rate_limit_config/,
  );
  // Legacy SSE: the session is an event stream held through one proxy.
  const sse = withValue(
    parseRunConfig({ name: 'w', remote_url: 'https://mcp.example.com/sse', transport: 'sse' }),
    'scaling_config.session_redis',
    value,
  );
  assert.match(
    refusal(sse)?.message ?? '',
    /^scaling_config\.session_redis is not supported for a server of the legacy SSE transport without rate_limit_config: .*remove it/,
  );
  // Without an address, a db or prefix other than the defaults would be silent.
  assert.match(
    refusal(withValue(base('process-http'), 'scaling_config.session_redis', { key_prefix: 'team-a:' }))
      ?.message ?? '',
    /^scaling_config\.session_redis is not supported without an address: .*set address/,
  );
  const limited = withValue(redis, 'rate_limit_config', { perUser: { maxTokens: 5, refillPeriod: '1m0s' } });
  assert.deepEqual(unsupportedFields(limited, skep), []);
  // backend_replicas stays refused, with or without rate limits; 0 counts as a value
  // (a replica count in ToolHive).
  const replicas = withValue(limited, 'scaling_config.backend_replicas', 0);
  assert.deepEqual(
    unsupportedFields(replicas, skep).map((p) => p.field),
    ['scaling_config.backend_replicas'],
  );
  assert.match(refusal(replicas)?.message ?? '', /one proxy and one server per workload; remove it/);
});
