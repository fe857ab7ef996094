/**
 * The vMCP config (ToolHive's keys): one schema, defaults resolved, errors naming the
 * field; fields the reference validates but ignores have an effect here (timeouts,
 * partialFailureMode) and fields this build does not honour are refused, never kept silently.
 * The API refuses a bad `vmcp` body with 400 before anything is written.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isSkepError } from '../../../src/shared/index.js';
import { parseVmcpConfig } from '../../../src/dataplane/vmcp/index.js';
import { testApp } from '../../helpers/api.js';

function refused(value: unknown, code: string, field: RegExp): void {
  assert.throws(
    () => parseVmcpConfig(value),
    (err: unknown) => isSkepError(err) && err.code === code && field.test(err.message),
  );
}

test('defaults: prefix {workload}_, 30s timeouts, fail mode, inline auth', () => {
  const c = parseVmcpConfig({});
  assert.equal(c.aggregation.conflictResolution, 'prefix');
  assert.equal(c.aggregation.prefixFormat, '{workload}_');
  assert.equal(c.aggregation.prefixOnlyConflicts, false);
  assert.equal(c.timeoutMs, 30_000);
  assert.equal(c.partialFailureMode, 'fail');
  assert.equal(c.outgoingAuth.source, 'inline');
  assert.equal(c.healthCheckIntervalMs, 30_000);
  assert.equal(c.unhealthyThreshold, 3);
  assert.ok(Object.isFrozen(c));
});

test('durations and per-workload timeouts are read (⚠ the reference never reads them)', () => {
  const c = parseVmcpConfig({
    operational: {
      timeouts: { default: '1m30s', perWorkload: { slow: '500ms' } },
      failureHandling: {
        partialFailureMode: 'best_effort',
        healthCheckInterval: '5s',
        unhealthyThreshold: 2,
      },
    },
  });
  assert.equal(c.timeoutMs, 90_000);
  assert.equal(c.perWorkloadTimeoutMs.get('slow'), 500);
  assert.equal(c.partialFailureMode, 'best_effort');
  assert.equal(c.healthCheckIntervalMs, 5000);
  assert.equal(c.unhealthyThreshold, 2);
});

test('bad values are 400 invalid_config naming the field', () => {
  refused({ aggregation: { conflictResolution: 'newest' } }, 'invalid_config', /conflictResolution/);
  refused(
    { operational: { timeouts: { default: 'soon' } } },
    'invalid_config',
    /timeouts\/default|timeouts.default/,
  );
  refused(
    { operational: { timeouts: { default: '0s' } } },
    'invalid_config',
    /timeouts\.default must be a positive/,
  );
  refused({ aggregation: { conflictResolution: 'priority' } }, 'invalid_config', /priorityOrder/);
  refused(
    { aggregation: { conflictResolutionConfig: { prefixFormat: 'x_' } } },
    'invalid_config',
    /prefixFormat/,
  );
  refused({ aggregation: { tools: [{ workload: 'a' }, { workload: 'a' }] } }, 'invalid_config', /tools\[1\]/);
  refused({ unknownKey: 1 }, 'invalid_config', /unknownKey/);
  refused(
    { outgoingAuth: { backends: { b: { type: 'header_injection', headerInjection: { headerName: 'x' } } } } },
    'invalid_config',
    /outgoingAuth\.backends\.b\.headerInjection needs exactly one/,
  );
  refused(
    { outgoingAuth: { default: { type: 'token_exchange' } } },
    'invalid_config',
    /tokenExchange is required/,
  );
  refused({ passthroughHeaders: ['X-Forwarded-For'] }, 'invalid_config', /passthroughHeaders/);
  refused(
    { operational: { failureHandling: { circuitBreaker: { enabled: true } } } },
    'unsupported_field',
    /circuitBreaker/,
  );
  refused(
    { outgoingAuth: { default: { type: 'aws_sts', awsSts: { region: 'eu-west-1' } } } },
    'unsupported_field',
    /aws_sts/,
  );
  refused({ passthroughHeaders: ['X-Tenant'] }, 'unsupported_field', /passthroughHeaders/);
});

test('static backends[]: checked and resolved; discovered auth is refused with them', () => {
  const c = parseVmcpConfig({
    backends: [
      { name: 'a', url: 'http://a.example:8080/mcp', transport: 'streamable-http' },
      { name: 'b', url: 'https://b.example/mcp', transport: 'streamable-http', type: 'entry', metadata: {} },
    ],
    outgoingAuth: {
      source: 'inline',
      backends: {
        b: { type: 'header_injection', headerInjection: { headerName: 'X-Key', headerValueEnv: 'K' } },
      },
    },
  });
  assert.deepEqual(c.staticBackends, [
    { name: 'a', url: 'http://a.example:8080/mcp', type: '' },
    { name: 'b', url: 'https://b.example/mcp', type: 'entry' },
  ]);
  assert.equal(parseVmcpConfig({}).staticBackends, undefined);
  const one = { name: 'a', url: 'http://a/mcp', transport: 'streamable-http' };
  refused({ backends: [one, one] }, 'invalid_config', /backends\[1\]\.name must be a unique/);
  refused({ backends: [{ ...one, url: 'ftp://a/mcp' }] }, 'invalid_config', /backends\[0\]\.url/);
  refused({ backends: [{ ...one, url: 'not a url' }] }, 'invalid_config', /backends\[0\]\.url/);
  refused({ backends: [{ ...one, type: 'pod' }] }, 'invalid_config', /backends\[0\]\.type/);
  refused(
    { backends: [one], outgoingAuth: { source: 'discovered' } },
    'invalid_config',
    /static backends have no workload configuration/,
  );
  refused(
    { backends: [one], outgoingAuth: { backends: { a: { type: 'discovered' } } } },
    'invalid_config',
    /static backends have no workload configuration/,
  );
});

test('fields this build does not honour are refused with unsupported_field, never kept silently', () => {
  refused({ compositeTools: [{ name: 'wf' }] }, 'invalid_config', /compositeTools\.0\.steps: is required/);
  refused({ compositeToolRefs: [{ name: 'wf' }] }, 'unsupported_field', /vmcp\.compositeToolRefs/);
  refused(
    { codeMode: { stepLimit: 5 } },
    'invalid_config',
    /codeMode: stepLimit has no effect while enabled is not true/,
  );
  refused(
    { backends: [{ name: 'x', url: 'http://h/mcp', transport: 'sse' }] },
    'unsupported_field',
    /vmcp\.backends\[0\]\.transport/,
  );
  refused(
    { backends: [{ name: 'x', url: 'https://h/mcp', transport: 'streamable-http', caBundlePath: '/ca' }] },
    'unsupported_field',
    /vmcp\.backends\[0\]\.caBundlePath/,
  );
  refused(
    { backends: [{ name: 'x', url: 'http://h/mcp', transport: 'streamable-http', metadata: { a: 'b' } }] },
    'unsupported_field',
    /vmcp\.backends\[0\]\.metadata/,
  );
  refused({ outgoingAuth: { default: { type: 'obo' } } }, 'unsupported_field', /obo/);
  refused({ incomingAuth: { type: 'oidc' } }, 'unsupported_field', /incomingAuth.*oidc_config/);
  refused({ telemetry: { endpoint: 'x' } }, 'unsupported_field', /telemetry_config/);
  refused(
    { aggregation: { tools: [{ workload: 'a', toolConfigRef: { name: 'c' } }] } },
    'unsupported_field',
    /toolConfigRef/,
  );
  refused({ operational: { logLevel: 'debug' } }, 'unsupported_field', /operational\.logLevel/);
  refused(
    { operational: { failureHandling: { statusReportingInterval: '30s' } } },
    'unsupported_field',
    /statusReportingInterval/,
  );
  refused({ metadata: { team: 'a' } }, 'unsupported_field', /vmcp\.metadata/);
  // Their empty forms pass (what an operator or an export may carry).
  parseVmcpConfig({
    compositeTools: [],
    incomingAuth: { type: 'anonymous' },
    telemetry: {},
    metadata: {},
    operational: { logLevel: '' },
  });
});

test('POST /api/v1beta/workloads with a bad vmcp: 400 naming the field, nothing created', async (t) => {
  const { app, ctx } = await testApp(t);
  const bad = await app.inject({
    method: 'POST',
    url: '/api/v1beta/workloads',
    payload: { name: 'hub', vmcp: { aggregation: { conflictResolution: 'newest' } } },
  });
  assert.equal(bad.statusCode, 400);
  assert.match(bad.body, /conflictResolution/);
  const both = await app.inject({
    method: 'POST',
    url: '/api/v1beta/workloads',
    payload: { name: 'hub', image: 'cmd://node', vmcp: {} },
  });
  assert.equal(both.statusCode, 400);
  assert.match(both.body, /takes no 'image'/);
  const unsupported = await app.inject({
    method: 'POST',
    url: '/api/v1beta/workloads',
    payload: { name: 'hub', vmcp: { passthroughHeaders: ['X-Tenant'] } },
  });
  assert.equal(unsupported.statusCode, 400);
  assert.match(unsupported.body, /unsupported_field|not supported/);
  const cycle = await app.inject({
    method: 'POST',
    url: '/api/v1beta/workloads',
    payload: {
      name: 'hub',
      vmcp: {
        compositeTools: [
          {
            name: 'loop',
            description: 'Waits on itself.',
            steps: [
              { id: 'a', tool: 'x', dependsOn: ['b'] },
              { id: 'b', tool: 'x', dependsOn: ['a'] },
            ],
          },
        ],
      },
    },
  });
  assert.equal(cycle.statusCode, 400);
  assert.match(cycle.body, /invalid_config/);
  assert.match(cycle.body, /compositeTools\[0\] \(loop\)\.steps: dependsOn forms a cycle/);
  assert.equal(ctx.workloads.rows.get('hub'), undefined);
  const doc = await app.inject({ method: 'GET', url: '/api/openapi.json' });
  assert.match(doc.body, /"vmcp"/, 'the OpenAPI document describes the vmcp field');
});
