import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isSkepError } from '../../../src/shared/index.js';
import { RunConfigSchema } from '../../../src/schemas/index.js';
import { AuditConfigSchema } from '../../../src/schemas/audit.js';
import { RateLimitConfigSchema } from '../../../src/schemas/rate-limit.js';
import { TelemetryConfigSchema } from '../../../src/schemas/telemetry.js';
import { parseRunConfig } from '../../../src/workloads/index.js';

/** Top-level fields of ToolHive's run configuration as its export returns it. */
const SEED_EXPORT_FIELDS = [
  'allow_docker_gateway',
  'debug',
  'isolate_network',
  'stateless',
  'trust_proxy_headers',
  'audit_config',
  'audit_config_path',
  'authz_config_path',
  'authz_config',
  'aws_sts_config',
  'base_name',
  'container_name',
  'endpoint_prefix',
  'env_file_dir',
  'group',
  'host',
  'image',
  'name',
  'schema_version',
  'registry_api_url',
  'registry_server_name',
  'registry_url',
  'remote_url',
  'target_host',
  'jwks_auth_token_file',
  'k8s_pod_template_patch',
  'permission_profile_name_or_path',
  'rate_limit_namespace',
  'svc_ca_bundle',
  'cmd_args',
  'publish',
  'secrets',
  'tools_filter',
  'volumes',
  'container_labels',
  'env_vars',
  'embedded_auth_server_config',
  'header_forward',
  'ignore_config',
  'mcpserver_generation',
  'port',
  'target_port',
  'middleware_configs',
  'mutating_webhooks',
  'validating_webhooks',
  'oidc_config',
  'proxy_mode',
  'rate_limit_config',
  'remote_auth_config',
  'runtime_config',
  'scaling_config',
  'telemetry_config',
  'token_exchange_config',
  'tools_override',
  'transport',
  'upstream_swap_config',
];

test('export table: the RunConfig schema has every top-level field', () => {
  const properties = Object.keys(
    (RunConfigSchema as unknown as { properties: Record<string, unknown> }).properties,
  );
  const missing = SEED_EXPORT_FIELDS.filter((f) => !properties.includes(f));
  assert.deepEqual(missing, []);
});

test('schema_version defaults to v0.1.0 and omitted lists/maps are filled', () => {
  const config = parseRunConfig({ name: 'x', image: 'npx://x', port: 20001 });
  assert.equal(config.schema_version, 'v0.1.0');
  assert.deepEqual(config.cmd_args, []);
  assert.deepEqual(config.env_vars, {});
  assert.deepEqual(config.secrets, []);
  assert.deepEqual(config.permission_profile, {});
  assert.equal(config.transport, 'stdio');
  assert.equal(config.group, 'default');
});

test('an unknown top-level field or a wrong type is a bad_request naming the field', () => {
  for (const [value, field] of [
    [{ name: 'x', image: 'i', colour: 1 }, 'colour'],
    [{ name: 'x', image: 'i', port: 'eighty' }, 'port'],
    [{ name: 'x', image: 'i', transport: 'carrier-pigeon' }, 'transport'],
  ] as const) {
    assert.throws(
      () => parseRunConfig(value),
      (err) => isSkepError(err) && err.code === 'bad_request' && err.message.includes(field),
    );
  }
});

test('rate_limit_config, audit_config and telemetry_config are their middlewares’ schemas, not copies', () => {
  const properties = (RunConfigSchema as unknown as { properties: Record<string, unknown> }).properties;
  assert.equal(JSON.stringify(properties['rate_limit_config']), JSON.stringify(RateLimitConfigSchema));
  assert.equal(JSON.stringify(properties['audit_config']), JSON.stringify(AuditConfigSchema));
  assert.equal(JSON.stringify(properties['telemetry_config']), JSON.stringify(TelemetryConfigSchema));
});

test('telemetry_config: what the telemetry stage reads passes (a numeric sampling rate, the reference’s nulls)', () => {
  const telemetry = {
    endpoint: 'otel.example:4318',
    samplingRate: 0.25,
    caCertPath: null,
    headers: null,
    tracingEnabled: true,
  };
  assert.deepEqual(
    parseRunConfig({ name: 'x', image: 'npx://x', telemetry_config: telemetry }).telemetry_config,
    telemetry,
  );
});

test('a bad rate_limit_config, audit_config, guardrails_config or telemetry_config is invalid_config with its path and its schema’s message', () => {
  for (const [fields, message] of [
    [
      { rate_limit_config: { shared: { maxTokens: 0, refillPeriod: '1m' } } },
      'invalid run configuration: rate_limit_config.shared.maxTokens must be an integer from 1 to 2147483647 (got 0)',
    ],
    [
      { rate_limit_config: { tools: [{ name: 'echo', perUser: { maxTokens: 1, refillPeriod: 'soon' } }] } },
      'invalid run configuration: rate_limit_config.tools[0].perUser.refillPeriod "soon" is not a duration; write e.g. "1m0s", "30s" or "1h30m"',
    ],
    [
      { audit_config: { maxDataSize: -1 } },
      'invalid run configuration: audit_config.maxDataSize must not be negative (bytes; 0 means 1024)',
    ],
    [
      { audit_config: { includeRequestData: 'yes' } },
      'invalid run configuration: audit_config.includeRequestData must be true or false',
    ],
    [
      { telemetry_config: { endpoint: 'otel:4318', headers: { 'bad name': 'x' } } },
      "invalid run configuration: telemetry_config.headers has an invalid header name 'bad name'",
    ],
    [
      { telemetry_config: { endpoint: 'otel:4318', tracingEnable: true } },
      'invalid run configuration: telemetry_config: unknown key(s) tracingEnable (known: endpoint, serviceName, serviceVersion, tracingEnabled, metricsEnabled, samplingRate, headers, insecure, caCertPath, enablePrometheusMetricsPath, environmentVariables, customAttributes, useLegacyAttributes)',
    ],
    [
      { guardrails_config: { ownSecrets: { results: 'shred' } } },
      'invalid run configuration: guardrails_config.ownSecrets.results must be one of off, audit, redact, block (got "shred")',
    ],
  ] as const) {
    assert.throws(
      () => parseRunConfig({ name: 'x', image: 'npx://x', ...fields }),
      (err) => isSkepError(err) && err.code === 'invalid_config' && err.message === message,
      message,
    );
  }
  // The other fields keep the document's schema errors.
  assert.throws(
    () => parseRunConfig({ name: 'x', image: 'npx://x', port: 'eighty', audit_config: {} }),
    (err) => isSkepError(err) && err.code === 'bad_request' && err.message.includes('port'),
  );
});
