/**
 * Traces over OTLP/HTTP (as ToolHive's telemetry middleware exports them). No OpenTelemetry
 * Collector is packaged for these machines, so the receiver is the test's own
 * (`test/helpers/otlp.ts`: a loopback HTTP server that decodes the protobuf bodies with an
 * independent schema). What is checked:
 * - a real workload (server-everything over stdio, runner in this process) called with the
 *   official MCP SDK client: span names and attributes (semconv and legacy), the client's
 *   `traceparent` header as the parent, `params._meta.traceparent` winning over the header,
 *   the redacted argument summary, `environment.<NAME>`, the resource (service name default,
 *   custom attributes), the `headers` sent on exports, the legacy SSE connection span, and
 *   the metrics exported over OTLP;
 * - an HTTP server behind the proxy receives a `traceparent` that continues the client's
 *   trace with the proxy's span as parent; 5xx spans are errors, 4xx spans unset;
 * - a rate limit's decision reaches the span as `rate_limit.*` attributes;
 * - a TLS collector with a private CA: spans arrive with `caCertPath`, none without it.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { generateSelfSignedCert } from '../../../src/control/operator/index.js';
import { buildPipeline } from '../../../src/dataplane/pipeline/index.js';
import { telemetryStage } from '../../../src/dataplane/pipeline/stages/telemetry.js';
import { silentLogger } from '../../../src/shared/index.js';
import { parseRunConfig } from '../../../src/workloads/index.js';
import { tempHome } from '../../helpers/home.js';
import { type DecodedSpan, OtlpReceiver } from '../../helpers/otlp.js';
import { proxyFor, startHttpUpstream } from '../proxy/helpers.js';
import { sdkClient } from '../ratelimit/helpers.js';
import { Runners, rawGet } from './helpers.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const META_TRACE = '0af7651916cd43dd8448eb211c80319c';
const META_PARENT = 'b7ad6b7169203331';
const NAMED_TRACE = '5e0c63257de34c92bf9efcd03927272e';

/** Sets environment variables for the test (the runner runs in this process) and restores them. */
function withEnv(t: { after(fn: () => void): void }, vars: Record<string, string>): void {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  t.after(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
}

test(
  'spans of a real workload over OTLP/HTTP — names, attributes, client traceparent as parent, _meta wins, resource, export headers, SSE span, OTLP metrics',
  { timeout: 300_000 },
  async (t) => {
    const receiver = await OtlpReceiver.start();
    t.after(() => receiver.close());
    // Short batch and export intervals (the SDK reads these); the environment attribute's source.
    withEnv(t, {
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_METRIC_EXPORT_INTERVAL: '300',
      SKEP_TEST_TELEMETRY_REGION: 'eu-test-1',
    });
    const runners = new Runners(t);
    try {
      const url = await runners.start('traced', {
        telemetry_config: {
          endpoint: `http://${receiver.endpoint}`,
          insecure: true,
          samplingRate: '1.0',
          useLegacyAttributes: true,
          headers: { 'x-api-key': 'k-123' },
          customAttributes: { team: 'tools' },
          environmentVariables: ['SKEP_TEST_TELEMETRY_REGION'],
        },
      });
      const client = new Client({ name: 'telemetry-test', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(runners.endpoint('traced')), {
          requestInit: { headers: { traceparent: `00-${TRACE}-${PARENT}-01` } },
        }),
      );
      t.after(() => client.close());
      const result = (await client.callTool({
        name: 'echo',
        arguments: { message: 'hi', api_key: 'sk-never-recorded' },
      })) as { content: { text: string }[] };
      assert.equal(result.content[0]?.text, 'Echo: hi');

      const isCall = (s: DecodedSpan) => s.name === 'tools/call echo' && s.traceId === TRACE;
      const call = await receiver.waitFor('the tools/call span', () => receiver.spans().find(isCall));
      assert.equal(call.parentSpanId, PARENT, "the client's traceparent is the parent");
      assert.equal(call.kind, 2, 'SPAN_KIND_SERVER');
      assert.equal(call.status.code, 1, 'Ok');
      assert.equal(call.scope.name, 'github.com/stacklok/toolhive/pkg/telemetry');
      const a = call.attributes;
      for (const [key, value] of Object.entries({
        'http.request.method': 'POST',
        'url.path': '/mcp',
        'url.full': '/mcp',
        'url.scheme': 'http',
        'http.response.status_code': 200,
        'mcp.method.name': 'tools/call',
        'rpc.system.name': 'jsonrpc',
        'jsonrpc.protocol.version': '2.0',
        'mcp.server.name': 'traced',
        'network.transport': 'pipe',
        'client.address': '127.0.0.1',
        'mcp.is_batch': false,
        'gen_ai.tool.name': 'echo',
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.call.arguments': 'message=hi, api_key=[REDACTED]',
        'environment.SKEP_TEST_TELEMETRY_REGION': 'eu-test-1',
        // Legacy twins (useLegacyAttributes).
        'http.method': 'POST',
        'http.scheme': 'http',
        'http.status_code': 200,
        'mcp.method': 'tools/call',
        'rpc.system': 'jsonrpc',
        'rpc.service': 'mcp',
        'mcp.resource.id': 'echo',
        'mcp.transport': 'stdio',
        'mcp.tool.name': 'echo',
        'mcp.tool.arguments': 'message=hi, api_key=[REDACTED]',
      }))
        assert.deepEqual(a[key], value, key);
      assert.equal(typeof a['jsonrpc.request.id'], 'string');
      assert.equal(a['mcp.request.id'], a['jsonrpc.request.id']);
      assert.match(String(a['mcp.session.id']), /^[0-9a-f-]{8,}/, 'the session id header');
      assert.match(String(a['mcp.protocol.version']), /^\d{4}-\d{2}-\d{2}$/);
      assert.equal(typeof a['http.duration_ms'], 'number');
      assert.equal(a['network.protocol.version'], '1.1', 'the client spoke HTTP/1.1');
      assert.ok(Number(a['client.port']) > 0, 'the client port');
      assert.ok(Number(a['http.response.body.size']) > 0, 'the JSON answer declared its length');
      assert.equal(a['http.response_content_length'], a['http.response.body.size'], 'legacy twin');
      assert.equal(a['network.protocol.name'], undefined, 'not for a stdio server');
      assert.ok(!JSON.stringify(a).includes('sk-never-recorded'), 'the credential is not on the span');
      assert.equal(call.resource['service.name'], 'thv-traced');
      assert.equal(call.resource['team'], 'tools');
      assert.equal(typeof call.resource['service.version'], 'string');
      assert.ok(call.endNanos > call.startNanos);

      // The initialize of this client: its name and `initialize` as the span name with the client.
      const init = receiver
        .spans()
        .find((s) => s.traceId === TRACE && s.attributes['mcp.method.name'] === 'initialize');
      assert.equal(init?.name, 'initialize telemetry-test');
      assert.equal(init?.attributes['mcp.client.name'], 'telemetry-test');

      // params._meta wins over the header.
      await client.callTool({
        name: 'echo',
        arguments: { message: 'meta' },
        _meta: { traceparent: `00-${META_TRACE}-${META_PARENT}-01` },
      });
      const meta = await receiver.waitFor('the _meta span', () =>
        receiver.spans().find((s) => s.traceId === META_TRACE && s.name === 'tools/call echo'),
      );
      assert.equal(meta.parentSpanId, META_PARENT);

      // A client that names the server and its transport itself (X-MCP-Server-Name and
      // X-MCP-Transport, which the reference reads): they replace the workload's own.
      const named = new Client({ name: 'named-test', version: '1.0.0' });
      await named.connect(
        new StreamableHTTPClientTransport(new URL(runners.endpoint('traced')), {
          requestInit: {
            headers: {
              traceparent: `00-${NAMED_TRACE}-${PARENT}-01`,
              'x-mcp-server-name': 'renamed',
              'x-mcp-transport': 'sse',
            },
          },
        }),
      );
      t.after(() => named.close());
      await named.listTools();
      const renamed = await receiver.waitFor('the renamed tools/list span', () =>
        receiver.spans().find((s) => s.traceId === NAMED_TRACE && s.name === 'tools/list'),
      );
      for (const [key, value] of Object.entries({
        'mcp.server.name': 'renamed',
        'network.transport': 'tcp',
        'network.protocol.name': 'http',
        'mcp.backend.protocol.version': '1.1',
        'mcp.transport': 'sse',
        'rpc.system.name': 'jsonrpc',
        'mcp.is_batch': false,
        'environment.SKEP_TEST_TELEMETRY_REGION': 'eu-test-1',
      }))
        assert.deepEqual(renamed.attributes[key], value, `named by the client: ${key}`);

      // Without trace context: a new root span.
      const plain = await sdkClient(t, runners.endpoint('traced'));
      await plain.listTools();
      const root = await receiver.waitFor('a root tools/list span', () =>
        receiver
          .spans()
          .find((s) => s.name === 'tools/list' && s.traceId !== TRACE && s.traceId !== NAMED_TRACE),
      );
      assert.equal(root.parentSpanId, '');

      // Legacy SSE: a short connection span for the stream.
      const sse = await sdkClient(t, runners.endpoint('traced'), true);
      const opened = await receiver.waitFor('the SSE connection span', () =>
        receiver.spans().find((s) => s.name === 'sse.connection_established'),
      );
      assert.equal(opened.attributes['sse.event_type'], 'connection_established');
      assert.equal(opened.attributes['url.path'], '/sse');
      assert.equal(opened.attributes['mcp.server.name'], 'traced');
      assert.equal(opened.status.code, 1);
      await sse.close();

      // Every export carried the configured headers, as protobuf.
      const traceExports = receiver.exports.filter((e) => e.path === '/v1/traces');
      assert.ok(traceExports.length > 0);
      for (const e of traceExports) {
        assert.equal(e.headers['x-api-key'], 'k-123');
        assert.equal(e.headers['content-type'], 'application/x-protobuf');
      }

      // Metrics over OTLP (metricsEnabled is implied by the endpoint): the tool-call counter.
      const toolCalls = await receiver.waitFor('the tool-call counter over OTLP', () =>
        receiver
          .metrics()
          .findLast(
            (p) =>
              p.metric === 'toolhive_mcp_tool_calls' &&
              p.attributes['tool'] === 'echo' &&
              p.attributes['status'] === 'success' &&
              (p.value ?? 0) >= 2,
          ),
      );
      assert.equal(toolCalls.kind, 'sum');
      assert.equal(toolCalls.monotonic, true);
      assert.equal(toolCalls.scope, 'github.com/stacklok/toolhive/pkg/telemetry');
      assert.equal(toolCalls.resource['service.name'], 'thv-traced');
      const duration = receiver
        .metrics()
        .findLast(
          (p) => p.metric === 'mcp.server.operation.duration' && p.attributes['gen_ai.tool.name'] === 'echo',
        );
      assert.equal(duration?.kind, 'histogram');
      assert.equal(duration?.unit, 's');
      assert.deepEqual(duration?.bounds, [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]);

      // No Prometheus path unless asked for.
      assert.equal((await rawGet(`${url}/metrics`)).status, 404);
      await client.close();
      await plain.close();
    } finally {
      await runners.stopAll();
    }
  },
);

test(
  'an HTTP server receives traceparent continuing the client trace under the proxy span; 5xx is Error, 4xx unset',
  { timeout: 60_000 },
  async (t) => {
    const receiver = await OtlpReceiver.start();
    t.after(() => receiver.close());
    withEnv(t, { OTEL_BSP_SCHEDULE_DELAY: '50' });
    const upstream = await startHttpUpstream(t, (req, res) => {
      const body = JSON.parse(req.body) as { id: unknown; params: { name: string } };
      const status = body.params.name === 'crash' ? 500 : body.params.name === 'missing' ? 404 : 200;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { content: [] } }));
    });
    const config = parseRunConfig({
      name: 'remote',
      image: '',
      transport: 'streamable-http',
      remote_url: `${upstream.url}/mcp`,
      telemetry_config: {
        endpoint: receiver.endpoint,
        insecure: true,
        samplingRate: '1',
        metricsEnabled: false,
      },
    });
    const stage = await telemetryStage.create(telemetryStage.fromRunConfig?.(config), {
      config,
      logger: silentLogger,
      secretLookup: async () => undefined,
    });
    assert.ok(stage);
    t.after(() => stage.close?.());
    const proxy = await proxyFor(t, undefined, {
      middlewares: [stage],
      serverName: 'remote',
      transport: 'streamable-http',
      upstream: { kind: 'http', url: `${upstream.url}/mcp`, transport: 'streamable-http' },
    });
    const call = (name: string, traceparent?: string) =>
      fetch(`${proxy.url}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(traceparent === undefined ? {} : { traceparent }),
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name } }),
      });
    assert.equal((await call('ok', `00-${TRACE}-${PARENT}-01`)).status, 200);
    assert.equal((await call('crash')).status, 500);
    assert.equal((await call('missing')).status, 404);

    const span = await receiver.waitFor('the proxy span', () =>
      receiver.spans().find((s) => s.name === 'tools/call ok'),
    );
    assert.equal(span.traceId, TRACE);
    assert.equal(span.parentSpanId, PARENT);
    assert.equal(span.attributes['network.transport'], 'tcp');
    assert.equal(span.attributes['network.protocol.name'], 'http');
    const sent = upstream.received[0]?.headers['traceparent'];
    assert.equal(
      sent,
      `00-${TRACE}-${span.spanId}-01`,
      'the server continues the trace under the proxy span',
    );

    const crash = await receiver.waitFor('the 500 span', () =>
      receiver.spans().find((s) => s.name === 'tools/call crash'),
    );
    assert.equal(crash.status.code, 2, 'Error');
    assert.equal(crash.attributes['error.type'], '500');
    assert.equal(crash.parentSpanId, '', 'no client context: a root span');
    assert.equal(upstream.received[1]?.headers['traceparent'], `00-${crash.traceId}-${crash.spanId}-01`);
    const missing = await receiver.waitFor('the 404 span', () =>
      receiver.spans().find((s) => s.name === 'tools/call missing'),
    );
    assert.equal(missing.status.code, 0, 'a 4xx leaves the status unset');
    assert.equal(missing.attributes['http.response.status_code'], 404);
  },
);

test(
  'path A order: telemetry sees the rate limit’s 429 (span unset, request counted as an error) and the pipeline mounts /metrics',
  { timeout: 60_000 },
  async (t) => {
    const receiver = await OtlpReceiver.start();
    t.after(() => receiver.close());
    withEnv(t, { OTEL_BSP_SCHEDULE_DELAY: '50' });
    const upstream = await startHttpUpstream(t, (req, res) => {
      const body = JSON.parse(req.body) as { id: unknown };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { content: [] } }));
    });
    const config = parseRunConfig({
      name: 'limited',
      image: '',
      transport: 'streamable-http',
      remote_url: `${upstream.url}/mcp`,
      telemetry_config: {
        endpoint: receiver.endpoint,
        insecure: true,
        samplingRate: '1',
        enablePrometheusMetricsPath: true,
      },
      rate_limit_config: { shared: { maxTokens: 1, refillPeriod: '1h' } },
    });
    const chain = await buildPipeline(config, { logger: silentLogger, secretLookup: async () => undefined });
    t.after(() => chain.close());
    assert.deepEqual(chain.names, ['telemetry', 'ratelimit']);
    assert.equal(chain.handlers.length, 1, 'the /metrics endpoint');
    const proxy = await proxyFor(t, undefined, {
      middlewares: chain.middlewares,
      handlers: [...chain.handlers],
      serverName: 'limited',
      transport: 'streamable-http',
      upstream: { kind: 'http', url: `${upstream.url}/mcp`, transport: 'streamable-http' },
    });
    const call = () =>
      fetch(`${proxy.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'search' } }),
      });
    assert.equal((await call()).status, 200);
    assert.equal((await call()).status, 429);
    const limited = await receiver.waitFor('the 429 span', () =>
      receiver.spans().find((s) => s.attributes['http.response.status_code'] === 429),
    );
    assert.equal(limited.name, 'tools/call search');
    assert.equal(limited.status.code, 0, '4xx: unset');
    // The rate limit's decision on both spans (ToolHive's span attributes).
    assert.equal(limited.attributes['rate_limit.decision'], 'rejected');
    assert.equal(limited.attributes['rate_limit.rejected_by'], 'shared_server');
    assert.equal(limited.attributes['rate_limit.fail_open'], false);
    const allowed = await receiver.waitFor('the allowed span', () =>
      receiver.spans().find((s) => s.attributes['http.response.status_code'] === 200),
    );
    assert.equal(allowed.attributes['rate_limit.decision'], 'allowed');
    assert.equal(allowed.attributes['rate_limit.rejected_by'], 'none');
    assert.equal(allowed.attributes['rate_limit.fail_open'], false);
    assert.equal(upstream.received.length, 1, 'the limited call never reached the server');
    const metrics = await (await fetch(`${proxy.url}/metrics`)).text();
    assert.match(
      metrics,
      /^toolhive_mcp_requests_total\{method="POST",status_code="429",status="error",mcp_method="tools\/call",mcp_resource_id="search",server="limited",transport="streamable-http",otel_scope_name="[^"]+"\} 1$/m,
    );
    assert.match(
      metrics,
      /^toolhive_mcp_tool_calls_total\{server="limited",tool="search",status="error",[^}]*\} 1$/m,
    );
    assert.match(
      metrics,
      /^toolhive_rate_limit_decisions_total\{namespace="default",server="limited",decision="rejected",scope="shared",operation_type="server",[^}]*\} 1$/m,
    );
    assert.match(
      metrics,
      /^toolhive_mcp_active_connections\{server="limited",transport="streamable-http",[^}]*\} 0$/m,
    );
  },
);

test(
  'caCertPath: spans reach a TLS collector whose certificate only that CA vouches for, and none without it',
  { timeout: 60_000 },
  async (t) => {
    const { dir } = tempHome(t, 'skep-otlp-tls-');
    const { cert, key } = generateSelfSignedCert(['127.0.0.1']);
    const caFile = join(dir, 'collector-ca.pem');
    writeFileSync(caFile, cert);
    const receiver = await OtlpReceiver.start({ cert, key });
    t.after(() => receiver.close());
    withEnv(t, { OTEL_BSP_SCHEDULE_DELAY: '50' });
    const upstream = await startHttpUpstream(t, (req, res) => {
      const body = JSON.parse(req.body) as { id: unknown };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { content: [] } }));
    });
    // One proxied call through a workload whose telemetry exports to the TLS receiver (no scheme: TLS).
    const callThrough = async (name: string, telemetry: Record<string, unknown>): Promise<void> => {
      const config = parseRunConfig({
        name,
        image: '',
        transport: 'streamable-http',
        remote_url: `${upstream.url}/mcp`,
        telemetry_config: {
          endpoint: receiver.endpoint,
          samplingRate: '1',
          metricsEnabled: false,
          ...telemetry,
        },
      });
      const chain = await buildPipeline(config, {
        logger: silentLogger,
        secretLookup: async () => undefined,
      });
      const proxy = await proxyFor(t, undefined, {
        middlewares: chain.middlewares,
        serverName: name,
        transport: 'streamable-http',
        upstream: { kind: 'http', url: `${upstream.url}/mcp`, transport: 'streamable-http' },
      });
      const res = await fetch(`${proxy.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'search' } }),
      });
      assert.equal(res.status, 200);
      // Closing the pipeline flushes what is queued: the export is attempted before this returns.
      await chain.close();
    };
    await callThrough('untrusted', {});
    assert.equal(
      receiver.exports.length,
      0,
      'without caCertPath the private CA is not trusted: nothing delivered',
    );
    await callThrough('trusted', { caCertPath: caFile });
    // Delivered by the same point in the flow where the untrusted export had delivered nothing.
    assert.ok(receiver.exports.length > 0, 'with caCertPath the export is delivered by the flush');
    const span = await receiver.waitFor('the span over TLS', () =>
      receiver.spans().find((s) => s.attributes['mcp.server.name'] === 'trusted'),
    );
    assert.equal(span.name, 'tools/call search');
    assert.ok(receiver.spans().every((s) => s.attributes['mcp.server.name'] === 'trusted'));
  },
);
