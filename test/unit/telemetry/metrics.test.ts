/**
 * The metric side of telemetry (as ToolHive names its metrics): the 128-byte label cut,
 * the argument summary's redaction and caps, the series registry (buckets, cardinality
 * limit), the exposed Prometheus names and format, and the rate limiter's counters as the
 * reference's metrics. Prometheus's own `promtool` checks the same exposition in
 * test/integration/telemetry/promtool.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRateLimitConfig } from '../../../src/dataplane/middleware/ratelimit/index.js';
import { MemoryBucketStore, RateLimiter } from '../../../src/dataplane/middleware/ratelimit/runtime.js';
import { silentLogger } from '../../../src/shared/index.js';
import { isSensitiveKey, summarizeArguments } from '../../../src/dataplane/middleware/telemetry/arguments.js';
import {
  cutLabel,
  MAX_SERIES,
  MetricRegistry,
  prometheusName,
  toPrometheusText,
} from '../../../src/dataplane/middleware/telemetry/runtime.js';
import {
  MCP_DURATION_BUCKETS,
  ProxyMetrics,
  rateLimitFamilies,
} from '../../../src/dataplane/middleware/telemetry/proxy-metrics.js';

test('client-controlled label values are cut to 128 bytes on a UTF-8 boundary, ending in ...', () => {
  assert.equal(cutLabel('echo'), 'echo');
  assert.equal(cutLabel('a'.repeat(128)), 'a'.repeat(128), 'exactly 128 bytes is kept');
  const long = cutLabel('a'.repeat(200));
  assert.equal(long, `${'a'.repeat(125)}...`);
  assert.equal(Buffer.byteLength(long), 128);
  // Two-byte characters: 64 × 'é' is 128 bytes (kept); 65 is cut between characters.
  assert.equal(cutLabel('é'.repeat(64)), 'é'.repeat(64));
  const accents = cutLabel('é'.repeat(65));
  assert.ok(Buffer.byteLength(accents) <= 128);
  assert.ok(accents.endsWith('...'));
  assert.equal(accents, `${'é'.repeat(62)}...`, '62 × 2 bytes + 3 = 127: the next character would not fit');
  // Four-byte characters (surrogate pairs) are never split.
  const emoji = cutLabel('😀'.repeat(40));
  assert.ok(Buffer.byteLength(emoji) <= 128);
  assert.equal(emoji, `${'😀'.repeat(31)}...`);
  assert.ok(!Buffer.from(emoji).toString('utf8').includes('\uFFFD'), 'valid UTF-8');
});

test('the argument summary is k=v, values over 100 characters cut, whole at most 200, credentials redacted, in the order sent', () => {
  assert.equal(
    summarizeArguments({ path: '/tmp/a', count: 3, deep: { x: [1] }, none: null }),
    'path=/tmp/a, count=3, deep={"x":[1]}, none=null',
  );
  for (const key of [
    'password',
    'db_Password',
    'token',
    'X-Auth-Token',
    'client_secret',
    'apiKey',
    'api_key',
    'authorization',
    'credentials',
    'access_token',
    'refresh_token',
    'private_key',
    'privateNote',
  ])
    assert.ok(isSensitiveKey(key), key);
  for (const key of ['path', 'query', 'message', 'url']) assert.ok(!isSensitiveKey(key), key);
  assert.equal(
    summarizeArguments({ user: 'ann', password: 'hunter2', nested: { token: 'x' }, apiKey: 'k' }),
    'user=ann, password=[REDACTED], nested={"token":"x"}, apiKey=[REDACTED]',
  );
  assert.equal(summarizeArguments({ text: 'x'.repeat(150) }), `text=${'x'.repeat(100)}...`);
  const many = summarizeArguments(
    Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`k${i}`, 'v'.repeat(20)])),
  );
  assert.equal(many.length, 200);
  assert.ok(many.endsWith('...'));
  assert.ok(many.startsWith('k0=vvvv'));
  assert.equal(summarizeArguments({}), '');
});

test('histogram cells: a value equal to a bound counts in that bound’s bucket; sum, count, min, max', () => {
  const registry = new MetricRegistry({ now: () => 1000 });
  const h = registry.histogram('h', 'help', [0.01, 0.1, 1]);
  const cell = h.series({ a: '1' });
  for (const v of [0.001, 0.01, 0.05, 0.1, 5]) cell.record(v);
  assert.deepEqual([...cell.counts], [2, 2, 0, 1]);
  assert.equal(cell.count, 5);
  assert.equal(cell.min, 0.001);
  assert.equal(cell.max, 5);
  assert.equal(h.series({ a: '1' }), cell, 'the same labels are the same series');
});

test('cardinality: past MAX_SERIES label sets, new ones share one overflow series (otel.metric.overflow)', () => {
  const registry = new MetricRegistry();
  const c = registry.counter('c', 'help');
  for (let i = 0; i < MAX_SERIES; i++) c.series({ tool: `t${i}` }).value++;
  const overflow = c.series({ tool: 'one-too-many' });
  overflow.value++;
  c.series({ tool: 'and-another' }).value++;
  assert.equal(c.series({ tool: 't0' }).value, 1, 'known series keep working');
  const family = registry.snapshot()[0];
  assert.equal(family?.points.length, MAX_SERIES + 1);
  const last = family?.points.at(-1);
  assert.deepEqual(last?.labels, { 'otel.metric.overflow': 'true' });
  assert.equal((last as { value: number }).value, 2);
});

test('Prometheus names: dots become _, the unit is appended, counters end in _total', () => {
  assert.equal(
    prometheusName({ name: 'toolhive_mcp_requests', unit: '', kind: 'counter' }),
    'toolhive_mcp_requests_total',
  );
  assert.equal(
    prometheusName({ name: 'toolhive_mcp_request_duration', unit: 's', kind: 'histogram' }),
    'toolhive_mcp_request_duration_seconds',
  );
  assert.equal(
    prometheusName({ name: 'mcp.server.operation.duration', unit: 's', kind: 'histogram' }),
    'mcp_server_operation_duration_seconds',
  );
  assert.equal(
    prometheusName({ name: 'toolhive_mcp_active_connections', unit: '', kind: 'updown' }),
    'toolhive_mcp_active_connections',
  );
  assert.equal(
    prometheusName({ name: 'process_cpu_seconds_total', unit: '', kind: 'counter' }),
    'process_cpu_seconds_total',
  );
});

function proxyText(): string {
  const registry = new MetricRegistry({ now: () => 0 });
  const m = new ProxyMetrics(registry, 'fetch', 'stdio');
  m.opened(false);
  m.finished('POST', 200, 'tools/call', 'fetch', 0.003);
  m.closed(false);
  m.opened(true);
  m.finished('POST', 500, undefined, undefined, 0.2);
  m.finished('POST', 502, 'prompts/get', 'greet', 1);
  m.finished('POST', 429, 'tools/call', `quote"back\\slash\nnewline${'x'.repeat(200)}`, 0.001);
  return toPrometheusText(registry.snapshot(), {
    'service.name': 'thv-fetch',
    'deployment.environment': 'test',
  });
}

test('exposition: the proxy’s instruments under the reference’s names, labels, buckets and scope', () => {
  const text = proxyText();
  assert.match(text, /^target_info\{service_name="thv-fetch",deployment_environment="test"\} 1$/m);
  const scope = 'otel_scope_name="github.com/stacklok/toolhive/pkg/telemetry"';
  assert.ok(
    text.includes(
      `toolhive_mcp_requests_total{method="POST",status_code="200",status="success",mcp_method="tools/call",mcp_resource_id="fetch",server="fetch",transport="stdio",${scope}} 1\n`,
    ),
  );
  assert.ok(
    text.includes(
      `toolhive_mcp_requests_total{method="POST",status_code="500",status="error",mcp_method="unknown",mcp_resource_id="",server="fetch",transport="stdio",${scope}} 1\n`,
    ),
  );
  assert.ok(
    text.includes(
      `toolhive_mcp_requests_total{method="GET",status_code="200",status="success",mcp_method="sse_connection",server="fetch",transport="stdio",${scope}} 1\n`,
    ),
    'an SSE open is one request without mcp_resource_id',
  );
  assert.ok(text.includes(`toolhive_mcp_active_connections{server="fetch",transport="stdio",${scope}} 0\n`));
  assert.ok(
    text.includes(
      `toolhive_mcp_active_connections{server="fetch",transport="stdio",connection_type="sse",${scope}} 1\n`,
    ),
  );
  assert.ok(text.includes('# TYPE toolhive_mcp_active_connections gauge\n'));
  assert.ok(text.includes('# TYPE toolhive_mcp_request_duration_seconds histogram\n'));
  // The MCP semconv buckets, cumulative, then +Inf, sum and count.
  for (const le of MCP_DURATION_BUCKETS) assert.ok(text.includes(`le="${le}"} `), `bucket ${le}`);
  assert.ok(
    text.includes(
      `mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",jsonrpc_protocol_version="2.0",network_transport="pipe",gen_ai_operation_name="execute_tool",gen_ai_tool_name="fetch",${scope},le="0.01"} 1\n`,
    ),
  );
  assert.ok(
    text.includes(
      `mcp_server_operation_duration_seconds_count{mcp_method_name="prompts/get",jsonrpc_protocol_version="2.0",network_transport="pipe",error_type="502",gen_ai_prompt_name="greet",${scope}} 1\n`,
    ),
    'error.type only at ≥ 500',
  );
  assert.ok(
    text.includes(`toolhive_mcp_tool_calls_total{server="fetch",tool="fetch",status="success",${scope}} 1\n`),
  );
  // The tool name: escaped and cut to 128 bytes.
  const line = text
    .split('\n')
    .find((l) => l.startsWith('toolhive_mcp_tool_calls_total') && l.includes('status="error"'));
  assert.ok(line?.includes('tool="quote\\"back\\\\slash\\nnewline'), line);
  const tool = /tool="((?:[^"\\]|\\.)*)"/.exec(line ?? '')?.[1] ?? '';
  const unescaped = tool.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
  assert.equal(Buffer.byteLength(unescaped), 128);
  assert.ok(unescaped.endsWith('...'));
});

test('the rate limiter’s counters as toolhive_rate_limit_* (one decision per bucket on an allow, one on a reject)', async () => {
  const limiter = new RateLimiter({
    config: parseRateLimitConfig(
      {
        shared: { maxTokens: 100, refillPeriod: '1m' },
        perUser: { maxTokens: 100, refillPeriod: '1m' },
        tools: [{ name: 'search', perUser: { maxTokens: 1, refillPeriod: '10s' } }],
      },
      'rate_limit_config',
    ),
    namespace: 'team-a',
    serverName: 'fetch',
    store: new MemoryBucketStore(),
    logger: silentLogger,
  });
  assert.equal((await limiter.check('search', 'ann')).allowed, true);
  assert.equal((await limiter.check('search', 'ann')).allowed, false);
  assert.equal((await limiter.check('other', undefined)).allowed, true);
  const text = toPrometheusText(
    rateLimitFamilies([{ namespace: 'team-a', server: 'fetch', stats: () => limiter.stats() }], 0),
  );
  const value = (labels: string) =>
    Number(
      new RegExp(
        `^toolhive_rate_limit_decisions_total\\{namespace="team-a",server="fetch",${labels},otel_scope_name="github.com/stacklok/toolhive/pkg/ratelimit"\\} (\\d+)$`,
        'm',
      ).exec(text)?.[1],
    );
  // Allowed: (shared server, per-user server, per-user tool) + (shared server).
  assert.equal(value('decision="allowed",scope="shared",operation_type="server"'), 2);
  assert.equal(value('decision="allowed",scope="per_user",operation_type="server"'), 1);
  assert.equal(value('decision="allowed",scope="per_user",operation_type="tool"'), 1);
  assert.equal(value('decision="rejected",scope="per_user",operation_type="tool"'), 1);
  assert.doesNotMatch(text, /decision="rejected",scope="shared"/);
  assert.match(
    text,
    /^toolhive_rate_limit_check_latency_seconds_count\{namespace="team-a",server="fetch",.*\} 3$/m,
  );
  assert.doesNotMatch(text, /toolhive_rate_limit_fail_open_total\{/, 'no fail-open yet');
  await limiter.close();
});
