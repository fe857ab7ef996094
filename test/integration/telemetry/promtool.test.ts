/**
 * Prometheus's own linter, `promtool check metrics`, accepts the proxy's exposition (the same
 * instruments as test/unit/telemetry/metrics.test.ts checks name by name): it runs the
 * promtool binary, so it needs Prometheus installed.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { MetricRegistry, toPrometheusText } from '../../../src/dataplane/middleware/telemetry/runtime.js';
import { ProxyMetrics } from '../../../src/dataplane/middleware/telemetry/proxy-metrics.js';
import { PROMETHEUS_HINT, prometheusAvailable } from '../../helpers/prometheus.js';
import { hasCommand, requireService } from '../../helpers/services.js';

/** Every kind of request the proxy counts: success, error, SSE, and a label that needs escaping and cutting. */
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

test('promtool accepts the exposition (Prometheus’s own linter)', (t) => {
  if (!requireService(t, 'promtool', prometheusAvailable() && hasCommand('promtool'), PROMETHEUS_HINT))
    return;
  const run = spawnSync('promtool', ['check', 'metrics'], { input: proxyText(), encoding: 'utf8' });
  // promtool exits 0 when it parses; lint remarks (counter naming, missing units) would also print.
  assert.equal(run.status, 0, `${run.stdout}${run.stderr}`);
  assert.equal(`${run.stdout}${run.stderr}`.trim(), '');
});
