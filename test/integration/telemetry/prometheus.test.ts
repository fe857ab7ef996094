/**
 * A real Prometheus (Debian `prometheus`, started here on
 * loopback with a generated scrape configuration) scrapes
 * - a real workload's `/metrics` (server-everything over stdio, its runner in this process,
 *   `telemetry_config.enablePrometheusMetricsPath` plus a rate limit that never limits), after
 *   `tools/call`s made with the official MCP SDK client: the tool-call counter, the request
 *   counter, the MCP semconv histogram and the rate limiter's decisions reach Prometheus under
 *   the reference's (ToolHive's) exposed names;
 * - `skep serve`'s own `/metrics` (a real `skep serve` process), with the API token from its
 *   token file, as docs/telemetry.md's walk-through configures it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startServe } from '../../helpers/cli.js';
import { tempHome } from '../../helpers/home.js';
import { PROMETHEUS_HINT, prometheusAvailable, startPrometheus } from '../../helpers/prometheus.js';
import { requireService } from '../../helpers/services.js';
import { echo, sdkClient } from '../ratelimit/helpers.js';
import { Runners, rawGet } from './helpers.js';

test(
  'Prometheus scrapes a workload’s /metrics on its proxy port; SDK tool calls show in toolhive_mcp_tool_calls_total',
  { timeout: 300_000 },
  async (t) => {
    if (!requireService(t, 'prometheus', prometheusAvailable(), PROMETHEUS_HINT)) return;
    const runners = new Runners(t);
    try {
      const url = await runners.start('observed', {
        telemetry_config: { enablePrometheusMetricsPath: true, customAttributes: { team: 'tools' } },
        rate_limit_config: { shared: { maxTokens: 100_000, refillPeriod: '1s' } },
      });
      // The endpoint itself: the reference's exposed names, its scope label, the resource.
      const first = await rawGet(`${url}/metrics`);
      assert.equal(first.status, 200);
      assert.equal(first.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
      assert.match(first.body, /^target_info\{.*service_name="thv-observed".*\} 1$/m);
      assert.match(first.body, /^target_info\{.*team="tools".*\} 1$/m);
      // Same Host/Origin guard as every proxy path (DNS rebinding), and GET only.
      assert.equal((await rawGet(`${url}/metrics`, { host: 'evil.example:80' })).status, 403);
      assert.equal((await rawGet(`${url}/metrics`, { origin: 'https://evil.example' })).status, 403);
      const post = await rawGet(`${url}/metrics`, {}, 'POST');
      assert.equal(post.status, 405);
      assert.equal(post.headers['allow'], 'GET, HEAD');

      const prometheus = await startPrometheus(t, [{ job: 'workload', target: new URL(url).host }]);
      const client = await sdkClient(t, runners.endpoint('observed'));
      const calls = 3;
      for (let i = 0; i < calls; i++)
        assert.deepEqual(await echo(client, `m${i}`), { ok: true, text: `Echo: m${i}` });
      await client.listTools();

      const sel = 'job="workload",server="observed"';
      assert.equal(
        await prometheus.waitForValue(
          `toolhive_mcp_tool_calls_total{${sel},tool="echo",status="success"}`,
          (v) => v >= calls,
        ),
        calls,
      );
      // Read once the counter is complete: the same scrape carries the others.
      const one = async (expr: string) => {
        const r = await prometheus.query(expr);
        assert.equal(r.length, 1, `${expr}: ${JSON.stringify(r)}`);
        return { labels: r[0]?.metric ?? {}, value: Number(r[0]?.value[1]) };
      };
      const requests = await one(
        `toolhive_mcp_requests_total{${sel},mcp_method="tools/call",mcp_resource_id="echo",method="POST",status_code="200",status="success",transport="stdio"}`,
      );
      assert.equal(requests.value, calls);
      assert.equal(requests.labels['otel_scope_name'], 'github.com/stacklok/toolhive/pkg/telemetry');
      assert.equal(
        (await one(`toolhive_mcp_request_duration_seconds_count{${sel},mcp_method="tools/call"}`)).value,
        calls,
      );
      assert.equal(
        (
          await one(
            `mcp_server_operation_duration_seconds_count{job="workload",mcp_method_name="tools/call",gen_ai_tool_name="echo",gen_ai_operation_name="execute_tool",network_transport="pipe"}`,
          )
        ).value,
        calls,
      );
      assert.equal(
        (
          await one(
            `toolhive_rate_limit_decisions_total{${sel},namespace="default",decision="allowed",scope="shared",operation_type="server"}`,
          )
        ).value,
        calls,
      );
      assert.equal(
        (await one(`toolhive_rate_limit_check_latency_seconds_count{${sel}}`)).value,
        calls,
        'one check per tools/call',
      );
      assert.equal((await one(`up{job="workload"}`)).value, 1);
      // tools/list is a request but no tool call.
      assert.ok((await one(`toolhive_mcp_requests_total{${sel},mcp_method="tools/list"}`)).value >= 1);
      await client.close();
    } finally {
      await runners.stopAll();
    }
  },
);

test(
  'skep serve /metrics: 401 without the token; Prometheus scrapes it with the token file; requests counted by route and status',
  { timeout: 180_000 },
  async (t) => {
    if (!requireService(t, 'prometheus', prometheusAvailable(), PROMETHEUS_HINT)) return;
    const home = tempHome(t);
    const env: NodeJS.ProcessEnv = { ...home.env };
    // The generated token file, as the walk-through uses it.
    delete env['SKEP_API_TOKEN'];
    const serve = await startServe(t, env, home.config.paths.discoveryFile);
    const without = await fetch(`${serve.url}/metrics`);
    assert.equal(without.status, 401);
    assert.match(without.headers.get('www-authenticate') ?? '', /^Bearer realm="skep"/);
    for (let i = 0; i < 2; i++)
      assert.equal((await fetch(`${serve.url}/api/v1beta/version`, { headers: serve.auth })).status, 200);
    assert.equal(
      (await fetch(`${serve.url}/api/v1beta/workloads/nope`, { headers: serve.auth })).status,
      404,
    );

    const direct = await fetch(`${serve.url}/metrics`, { headers: serve.auth });
    assert.equal(direct.status, 200);
    const text = await direct.text();
    assert.match(
      text,
      /^skep_api_requests_total\{method="GET",route="\/api\/v1beta\/version",status="200"\} 2$/m,
    );
    assert.match(text, /^skep_api_requests_total\{method="GET",route="\/metrics",status="401"\} 1$/m);
    assert.match(
      text,
      /^skep_api_requests_total\{method="GET",route="\/api\/v1beta\/workloads\/:name",status="404"\} 1$/m,
    );
    assert.match(text, /^skep_workloads\{status="running"\} 0$/m);

    const prometheus = await startPrometheus(t, [
      {
        job: 'skep',
        target: new URL(serve.url).host,
        credentialsFile: home.config.paths.apiTokenFile,
      },
    ]);
    assert.equal(await prometheus.waitForValue('up{job="skep"}', (v) => v === 1), 1);
    // Prometheus's own scrapes are counted too, as 200s of /metrics.
    assert.ok(
      (await prometheus.waitForValue(
        'skep_api_requests_total{job="skep",route="/metrics",status="200"}',
        (v) => v >= 2,
      )) >= 2,
    );
    assert.equal(
      await prometheus.waitForValue(
        'skep_api_requests_total{job="skep",route="/api/v1beta/version",status="200"}',
        (v) => v === 2,
      ),
      2,
    );
    assert.equal(await serve.stop(), 0);
  },
);
