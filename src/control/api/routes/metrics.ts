/**
 * `GET /metrics`: `skep serve`'s own metrics in the Prometheus text format — API requests by
 * route and status, their latency, workloads by status, and the process. Behind the API's
 * authentication like every route (the bearer token on TCP; the unix socket's file mode),
 * so a Prometheus scrape job sends the token (`authorization.credentials_file`, see
 * docs/telemetry.md). Registered first, so its `onResponse` hook sees every later route.
 */
import { Type } from 'typebox';
import type {
  HistogramCell,
  MetricFamily,
  NumberCell,
} from '../../../dataplane/middleware/telemetry/index.js';
import { WORKLOAD_STATUSES } from '../../../workloads/index.js';
import type { SkepApp } from '../app.js';
import type { ApiContext } from '../../app/index.js';

/** Seconds: API calls take from sub-millisecond reads to multi-second starts and pulls. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Label of requests that matched no route (kept apart so random paths add no series). */
export const UNMATCHED_ROUTE = 'unmatched';

export async function metricsRoutes(app: SkepApp, ctx: ApiContext): Promise<void> {
  // The run-time half of telemetry (instruments, exposition), as a proxy's telemetry stage loads it.
  const { MetricRegistry, PROMETHEUS_CONTENT_TYPE, processFamilies, toPrometheusText } =
    await import('../../../dataplane/middleware/telemetry/runtime.js');
  const startMs = Date.now();
  const registry = new MetricRegistry();
  const requests = registry.counter(
    'skep_api_requests',
    'Management API requests by method, route and status',
  );
  const duration = registry.histogram(
    'skep_api_request_duration',
    'Management API request latency in seconds',
    LATENCY_BUCKETS,
  );
  const series = new Map<string, { count: NumberCell; duration: HistogramCell }>();
  registry.collect((): MetricFamily[] => {
    const counts = new Map<string, number>(WORKLOAD_STATUSES.map((s) => [s, 0]));
    for (const w of ctx.workloads.list({ all: true })) counts.set(w.status, (counts.get(w.status) ?? 0) + 1);
    return [
      {
        name: 'skep_workloads',
        description: 'Workloads by status',
        unit: '',
        kind: 'gauge',
        scope: undefined,
        points: [...counts].map(([status, value]) => ({ labels: { status }, value, startMs })),
      },
    ];
  });

  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    const method = request.method;
    const status = reply.statusCode;
    const key = `${method} ${status} ${route}`;
    let s = series.get(key);
    if (s === undefined) {
      const labels = { method, route, status: String(status) };
      s = { count: requests.series(labels), duration: duration.series(labels) };
      series.set(key, s);
    }
    s.count.value++;
    s.duration.record(reply.elapsedTime / 1000);
  });

  app.get(
    '/metrics',
    {
      schema: {
        tags: ['system'],
        summary: 'Metrics of the server (Prometheus text format)',
        description:
          'API requests by method, route and status (`skep_api_requests_total`), their latency ' +
          '(`skep_api_request_duration_seconds`), workloads by status (`skep_workloads`) and the ' +
          'process (`process_*`, `nodejs_*`), in the Prometheus text exposition format 0.0.4. ' +
          'Needs the API token like every route. A workload’s own proxy metrics are on its port ' +
          '(`telemetry_config.enablePrometheusMetricsPath`).',
        response: {
          200: {
            description: 'Prometheus text exposition format',
            content: { 'text/plain': { schema: Type.String() } },
          },
        },
      },
    },
    async (_request, reply) => {
      const families = registry.snapshot();
      families.push(...processFamilies(startMs));
      return reply
        .type(PROMETHEUS_CONTENT_TYPE)
        .header('cache-control', 'no-store')
        .send(toPrometheusText(families));
    },
  );
}
