import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkPipeline } from '../../../src/workloads/pipeline-check.js';
import { buildPipeline, planPipeline } from '../../../src/dataplane/pipeline/index.js';
import { defaultGuardrailsConfig } from '../../../src/schemas/index.js';
import { silentLogger } from '../../../src/shared/index.js';
import { parseRunConfig } from '../../../src/workloads/index.js';

const base = { name: 'w', image: 'cmd:///bin/true' };
const authz = {
  version: '1.0',
  type: 'cedarv1',
  cedar: { policies: ['permit(principal, action, resource);'] },
};
const webhook = {
  name: 'v',
  url: 'http://127.0.0.1:9/validate',
  failure_policy: 'fail',
  tls_config: { insecure_skip_verify: true },
};

const codeOf = (err: unknown): unknown => (err as { code?: unknown }).code;

test('typed fields become stages in Skep order, whatever order the fields are written in', () => {
  const config = parseRunConfig({
    ...base,
    authz_config: authz,
    validating_webhooks: [webhook],
    audit_config: { logFile: '/tmp/a.jsonl' },
    oidc_config: { issuer: 'https://idp.example.com', audience: 'skep' },
    mutating_webhooks: [webhook],
  });
  assert.deepEqual(
    planPipeline(config).map((e) => e.type),
    ['audit', 'auth', 'mutating-webhook', 'validating-webhook', 'authorization'],
  );
  assert.deepEqual(planPipeline(parseRunConfig(base)), []);
});

test('middleware_configs: used as given; unknown and not-yet types refused; typed fields and the list not both', () => {
  const explicit = parseRunConfig({
    ...base,
    middleware_configs: [
      { type: 'authorization', parameters: { config_data: authz } },
      { type: 'audit', parameters: {} },
      { type: 'bodylimit', parameters: { max_bytes: 1024 } },
    ],
  });
  assert.deepEqual(
    planPipeline(explicit).map((e) => e.type),
    ['authorization', 'audit', 'bodylimit'],
  );
  assert.throws(
    () => planPipeline(parseRunConfig({ ...base, middleware_configs: [{ type: 'magic' }] })),
    (err: Error) => codeOf(err) === 'invalid_config' && /middleware_configs\[0\].*'magic'/.test(err.message),
  );
  assert.throws(
    () => planPipeline(parseRunConfig({ ...base, middleware_configs: [{ type: 'obo' }] })),
    (err: Error) => codeOf(err) === 'unsupported_field' && /obo/.test(err.message),
  );
  assert.throws(
    () =>
      planPipeline(parseRunConfig({ ...base, authz_config: authz, middleware_configs: [{ type: 'audit' }] })),
    (err: Error) => codeOf(err) === 'invalid_config' && /authorization/.test(err.message),
  );
});

test('guardrails (a Skep stage) stay beside an explicit middleware_configs, innermost, unless the list names them', () => {
  const guardrails_config = defaultGuardrailsConfig();
  const kept = parseRunConfig({
    ...base,
    guardrails_config,
    middleware_configs: [{ type: 'audit', parameters: {} }],
  });
  assert.deepEqual(
    planPipeline(kept).map((e) => e.type),
    ['audit', 'guardrails'],
  );
  assert.throws(
    () =>
      planPipeline(
        parseRunConfig({
          ...base,
          guardrails_config,
          middleware_configs: [{ type: 'guardrails', parameters: { config: guardrails_config } }],
        }),
      ),
    (err: Error) =>
      codeOf(err) === 'invalid_config' && /fields configure one too: guardrails/.test(err.message),
  );
});

test('checkPipeline runs each stage check: a bad webhook, audit or policy is a 400 before anything is stored', async () => {
  await checkPipeline(parseRunConfig({ ...base, validating_webhooks: [webhook], authz_config: authz }));
  const { failure_policy: _, ...noPolicy } = webhook;
  await assert.rejects(
    checkPipeline(parseRunConfig({ ...base, validating_webhooks: [noPolicy] })),
    (err: Error) => codeOf(err) === 'invalid_config' && /failure_policy/.test(err.message),
  );
  await assert.rejects(
    checkPipeline(
      parseRunConfig({
        ...base,
        middleware_configs: [{ type: 'auth', parameters: { oidc_config: { issuer: 5 } } }],
      }),
    ),
    (err: Error) =>
      codeOf(err) === 'invalid_config' && /'auth' parameter 'oidc_config': issuer/.test(err.message),
    'a middleware_configs block is validated like the typed field',
  );
  // The typed field is refused as the run configuration is read (its schema is the audit
  // config's); a middleware_configs entry, by the stage's check.
  assert.throws(
    () => parseRunConfig({ ...base, audit_config: { eventTypes: ['mcp_nope'] } }),
    (err: Error) =>
      codeOf(err) === 'invalid_config' && /audit_config\.eventTypes: .*mcp_nope/.test(err.message),
  );
  await assert.rejects(
    checkPipeline(
      parseRunConfig({
        ...base,
        middleware_configs: [{ type: 'audit', parameters: { config_data: { eventTypes: ['mcp_nope'] } } }],
      }),
    ),
    (err: Error) =>
      codeOf(err) === 'invalid_config' && /audit_config\.eventTypes: .*mcp_nope/.test(err.message),
  );
  await assert.rejects(
    checkPipeline(
      parseRunConfig({
        ...base,
        authz_config: { ...authz, cedar: { policies: ['permit(principal, action, resource'] } },
      }),
    ),
    (err: Error) => codeOf(err) === 'invalid_config' && /policy0/.test(err.message),
  );
});

test('checkPipeline refuses header-setting stages for a stdio server, given as middleware_configs too', async () => {
  const headers = { type: 'header-forward', parameters: { add_headers: { 'x-team': 'a' } } };
  await assert.rejects(
    checkPipeline(parseRunConfig({ ...base, transport: 'stdio', middleware_configs: [headers] })),
    (err: Error) =>
      codeOf(err) === 'invalid_config' &&
      /'header-forward' sets headers .* stdio server receives none/.test(err.message),
  );
  await checkPipeline(
    parseRunConfig({ ...base, transport: 'streamable-http', middleware_configs: [headers] }),
  );
  await checkPipeline(
    parseRunConfig({
      name: 'r',
      remote_url: 'https://mcp.example.com/mcp',
      transport: 'streamable-http',
      middleware_configs: [headers],
    }),
  );
});

test('built-in types tune the proxy instead of adding stages', async () => {
  const config = parseRunConfig({
    ...base,
    middleware_configs: [
      { type: 'bodylimit', parameters: { max_bytes: 0 } },
      { type: 'origin', parameters: { allowed_origins: ['https://app.example.com'] } },
      { type: 'tool-filter', parameters: { filter_tools: ['echo'], tools_override: {} } },
      { type: 'mcp-parser' },
      { type: 'recovery', parameters: null },
    ],
  });
  const pipeline = await buildPipeline(config, { logger: silentLogger, secretLookup: async () => undefined });
  assert.deepEqual(pipeline.names, []);
  assert.equal(pipeline.proxy.maxBodyBytes, 8 << 20);
  assert.deepEqual(pipeline.proxy.allowedOrigins, ['https://app.example.com']);
  assert.deepEqual(pipeline.proxy.toolsFilter, ['echo']);
  await pipeline.close();
  await assert.rejects(
    buildPipeline(
      parseRunConfig({
        ...base,
        middleware_configs: [{ type: 'origin', parameters: { allowed_origins: ['*'] } }],
      }),
      { logger: silentLogger, secretLookup: async () => undefined },
    ),
    (err: Error) => codeOf(err) === 'invalid_config' && /origin/.test(err.message),
  );
});
