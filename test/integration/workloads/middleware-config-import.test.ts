/**
 * `rate_limit_config`, `audit_config`, `guardrails_config` and `telemetry_config` in a run
 * configuration are their middlewares' own schemas: an import (`skep run --from-config`, through
 * the workloads service the CLI and the API share) refuses a bad value before anything is stored, with 400
 * `invalid_config` naming the field's path as the runner would, as it refuses the same stages
 * given as `middleware_configs` entries; export writes back every field those schemas have.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isSkepError } from '../../../src/shared/index.js';
import { parseRunConfig } from '../../../src/workloads/index.js';
import { testApp } from '../../helpers/api.js';

/** A local server whose executable exists, so that an import gets as far as the middleware checks. */
const base = { name: 'imported', image: `cmd://${process.execPath}`, cmd_args: ['-e', '0'] };
const bucket = { maxTokens: 5, refillPeriod: '1m0s' };

const refusals: ReadonlyArray<readonly [string, Record<string, unknown>, RegExp]> = [
  [
    'a tool entry without its name',
    { rate_limit_config: { tools: [{ shared: bucket }] } },
    /^invalid run configuration file: rate_limit_config\.tools\[0\]\.name is required \(the tool's name\)$/,
  ],
  [
    'maxTokens of the wrong type (a schema error of the whole document before)',
    { rate_limit_config: { perUser: { maxTokens: 'five', refillPeriod: '1m' } } },
    /^invalid run configuration file: rate_limit_config\.perUser\.maxTokens must be an integer from 1 to 2147483647 \(got "five"\)$/,
  ],
  [
    'a rule the schema cannot state (tool names are unique)',
    {
      rate_limit_config: {
        tools: [
          { name: 'echo', shared: bucket },
          { name: 'echo', perUser: bucket },
        ],
      },
    },
    /^rate_limit_config\.tools\[1\]\.name "echo" is listed twice/,
  ],
  [
    'an unknown audit key',
    { audit_config: { logFile: '/tmp/audit.log', excludeEventType: ['mcp_ping'] } },
    /^invalid run configuration file: audit_config: unknown key "excludeEventType"; known keys \(camelCase\): enabled, /,
  ],
  [
    'an audit filter that is not a list',
    { audit_config: { eventTypes: 'mcp_tool_call' } },
    /^invalid run configuration file: audit_config\.eventTypes must be a list of event types$/,
  ],
  [
    'a relative audit file',
    { audit_config: { logFile: 'audit.log' } },
    /^invalid run configuration file: audit_config\.logFile must be an absolute path \(got "audit\.log"\)$/,
  ],
  [
    'a bad guardrails action',
    { guardrails_config: { ownSecrets: { results: 'shred' } } },
    /^invalid run configuration file: guardrails_config\.ownSecrets\.results must be one of off, audit, redact, block \(got "shred"\)$/,
  ],
  [
    'an unknown telemetry key (unknown keys passed the run configuration’s old copy)',
    { telemetry_config: { endpoint: 'otel.example:4318', tracingEnable: true } },
    /^invalid run configuration file: telemetry_config: unknown key\(s\) tracingEnable \(known: endpoint, /,
  ],
  [
    'a telemetry header value with a line break',
    { telemetry_config: { endpoint: 'otel.example:4318', headers: { 'x-team': 'a\r\nx-evil: 1' } } },
    /^invalid run configuration file: telemetry_config\.headers\.x-team must not contain line breaks$/,
  ],
  // The same stages as middleware_configs entries: refused by their own checks, with the same code.
  [
    'an audit entry with an unknown transport',
    { middleware_configs: [{ type: 'audit', parameters: { transport_type: 'websocket' } }] },
    /^audit parameters\.transport_type must be one of stdio, sse, streamable-http$/,
  ],
  [
    'a guardrails entry with a bad action',
    {
      middleware_configs: [
        { type: 'guardrails', parameters: { config: { ownSecrets: { results: 'shred' } } } },
      ],
    },
    /^guardrails_config\.ownSecrets\.results must be one of off, audit, redact, block \(got "shred"\)$/,
  ],
];

test('import refuses a bad rate_limit_config, audit_config, guardrails_config or telemetry_config by its path: 400 invalid_config, nothing stored', async (t) => {
  const { ctx } = await testApp(t);
  for (const [what, fields, message] of refusals) {
    await assert.rejects(
      ctx.workloads.createFromConfig({ ...base, ...fields }),
      (err) => {
        assert.ok(isSkepError(err), what);
        assert.equal(err.code, 'invalid_config', what);
        assert.equal(err.status, 400, what);
        assert.match(err.message, message, what);
        return true;
      },
      what,
    );
  }
  assert.deepEqual(
    ctx.workloads.rows.list().map((row) => row.name),
    [],
    'a refused import stores nothing',
  );
});

test('export writes back every field of audit_config, rate_limit_config and telemetry_config, and the export imports again', async (t) => {
  const { app, ctx } = await testApp(t);
  const audit = { logFile: '/tmp/audit.log', maxDelegationDepth: 3, eventTypes: ['mcp_tool_call'] };
  const limits = { perUser: bucket, tools: [{ name: 'echo', shared: { maxTokens: 1, refillPeriod: '1s' } }] };
  // A numeric sampling rate and the reference's nulls: refused by the run configuration's old copy.
  const telemetry = {
    endpoint: 'otel.example:4318',
    samplingRate: 0.5,
    caCertPath: null,
    enablePrometheusMetricsPath: true,
    environmentVariables: ['TEAM'],
  };
  const config = parseRunConfig({
    ...base,
    port: 0,
    audit_config: audit,
    rate_limit_config: limits,
    telemetry_config: telemetry,
  });
  assert.equal(ctx.workloads.rows.insert(config, 'stopped', 'stopped', { autostart: false }), 'ok');
  const res = await app.inject({ method: 'GET', url: '/api/v1beta/workloads/imported/export' });
  assert.equal(res.statusCode, 200, res.body);
  const exported = res.json<Record<string, unknown>>();
  // maxDelegationDepth was dropped by the export when the run configuration had its own copy
  // of the audit schema, which lacked it.
  assert.deepEqual(exported['audit_config'], audit);
  assert.deepEqual(exported['rate_limit_config'], limits);
  assert.deepEqual(exported['telemetry_config'], telemetry);
  assert.deepEqual(parseRunConfig(exported, 'run configuration file'), config);
});
