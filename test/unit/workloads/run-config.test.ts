import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isSkepError } from '../../../src/shared/index.js';
import { RunConfigSchema } from '../../../src/schemas/index.js';
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
