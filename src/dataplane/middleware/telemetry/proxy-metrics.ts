/**
 * The proxy's metric instruments, named and labelled as the reference emits them
 * (meter `github.com/stacklok/toolhive/pkg/telemetry`), and the rate limiter's (meter
 * `github.com/stacklok/toolhive/pkg/ratelimit`).
 *
 * Each record method finds its series through a small cache keyed by the label values as
 * received (the label objects, with client-controlled values cut to 128 bytes, are built once
 * per distinct set), so a request that repeats a known label set allocates nothing but the key.
 */
import {
  cutLabel,
  type HistogramCell,
  type Instrument,
  type Labels,
  MAX_SERIES,
  type MetricFamily,
  type MetricRegistry,
  type MetricScope,
  type NumberCell,
} from './metrics.js';

export const TELEMETRY_SCOPE: MetricScope = Object.freeze({
  name: 'github.com/stacklok/toolhive/pkg/telemetry',
});
export const RATE_LIMIT_SCOPE: MetricScope = Object.freeze({
  name: 'github.com/stacklok/toolhive/pkg/ratelimit',
});

/** MCP semantic conventions' duration buckets, seconds (as ToolHive's histograms use them). */
export const MCP_DURATION_BUCKETS: readonly number[] = Object.freeze([
  0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300,
]);

/**
 * The cells a finished request records into, found with one lookup: the request counter and
 * histogram, and — for a parsed request — the semconv operation histogram and, for a named
 * `tools/call`, the tool-call counter.
 */
interface FinishedSeries {
  readonly count: NumberCell;
  readonly duration: HistogramCell;
  readonly operation: HistogramCell | undefined;
  readonly toolCall: NumberCell | undefined;
}

export class ProxyMetrics {
  readonly #server: string;
  readonly #transport: string;
  readonly #requests: Instrument<NumberCell>;
  readonly #requestDuration: Instrument<HistogramCell>;
  readonly #operationDuration: Instrument<HistogramCell>;
  readonly #toolCalls: Instrument<NumberCell>;
  readonly #active: Instrument<NumberCell>;
  /** By the label values as received; at most `MAX_SERIES` kept (later ones are looked up each time). */
  readonly #finished = new Map<string, FinishedSeries>();
  readonly #activeCell: NumberCell;
  readonly #activeSseCell: NumberCell;
  readonly #sseOpened: NumberCell;
  readonly #networkProtocol: string | undefined;
  readonly #networkTransport: string;

  constructor(registry: MetricRegistry, server: string, transport: string) {
    this.#server = server;
    this.#transport = transport;
    this.#networkTransport = transport === 'stdio' ? 'pipe' : 'tcp';
    this.#networkProtocol = transport === 'stdio' ? undefined : 'http';
    const meter = registry.meter(TELEMETRY_SCOPE);
    this.#requests = meter.counter('toolhive_mcp_requests', 'Total number of MCP requests');
    this.#requestDuration = meter.histogram(
      'toolhive_mcp_request_duration',
      'Duration of MCP requests in seconds',
      MCP_DURATION_BUCKETS,
    );
    this.#operationDuration = meter.histogram(
      'mcp.server.operation.duration',
      'Duration of MCP server operations (MCP semantic conventions)',
      MCP_DURATION_BUCKETS,
    );
    this.#toolCalls = meter.counter('toolhive_mcp_tool_calls', 'Total number of MCP tool calls');
    this.#active = meter.upDownCounter('toolhive_mcp_active_connections', 'Number of active MCP connections');
    this.#activeCell = this.#active.series({ server, transport });
    this.#activeSseCell = this.#active.series({ server, transport, connection_type: 'sse' });
    this.#sseOpened = this.#requests.series({
      method: 'GET',
      status_code: '200',
      status: 'success',
      mcp_method: 'sse_connection',
      server,
      transport,
    });
  }

  /** A request started: one more active connection (`sse`: a legacy SSE stream, counted as a request too). */
  opened(sse: boolean): void {
    if (sse) {
      this.#activeSseCell.value++;
      this.#sseOpened.value++;
    } else this.#activeCell.value++;
  }

  closed(sse: boolean): void {
    if (sse) this.#activeSseCell.value--;
    else this.#activeCell.value--;
  }

  /**
   * One finished request: `toolhive_mcp_requests`, `toolhive_mcp_request_duration`, and for a
   * parsed one `mcp.server.operation.duration` (with the tool or prompt name) and, for a named
   * `tools/call`, `toolhive_mcp_tool_calls`.
   */
  finished(
    httpMethod: string,
    status: number,
    mcpMethod: string | undefined,
    resourceId: string | undefined,
    seconds: number,
  ): void {
    const key = `${httpMethod}\u0000${status}\u0000${mcpMethod ?? ''}\u0000${resourceId ?? ''}`;
    let series = this.#finished.get(key);
    if (series === undefined) {
      series = this.#series(httpMethod, status, mcpMethod, resourceId);
      if (this.#finished.size < MAX_SERIES) this.#finished.set(key, series);
    }
    series.count.value++;
    series.duration.record(seconds);
    series.operation?.record(seconds);
    if (series.toolCall !== undefined) series.toolCall.value++;
  }

  #series(
    httpMethod: string,
    status: number,
    mcpMethod: string | undefined,
    resourceId: string | undefined,
  ): FinishedSeries {
    const ok = status < 400;
    const labels: Labels = {
      method: cutLabel(httpMethod),
      status_code: String(status),
      status: ok ? 'success' : 'error',
      mcp_method: mcpMethod === undefined ? 'unknown' : cutLabel(mcpMethod),
      mcp_resource_id: resourceId === undefined ? '' : cutLabel(resourceId),
      server: this.#server,
      transport: this.#transport,
    };
    let operation: HistogramCell | undefined;
    let toolCall: NumberCell | undefined;
    if (mcpMethod !== undefined) {
      const op: Record<string, string> = {
        'mcp.method.name': cutLabel(mcpMethod),
        'jsonrpc.protocol.version': '2.0',
        'network.transport': this.#networkTransport,
      };
      if (this.#networkProtocol !== undefined) op['network.protocol.name'] = this.#networkProtocol;
      if (status >= 500) op['error.type'] = String(status);
      if (resourceId !== undefined && mcpMethod === 'tools/call') {
        op['gen_ai.operation.name'] = 'execute_tool';
        op['gen_ai.tool.name'] = cutLabel(resourceId);
        toolCall = this.#toolCalls.series({
          server: this.#server,
          tool: cutLabel(resourceId),
          status: ok ? 'success' : 'error',
        });
      } else if (resourceId !== undefined && mcpMethod === 'prompts/get') {
        op['gen_ai.prompt.name'] = cutLabel(resourceId);
      }
      operation = this.#operationDuration.series(op);
    }
    return {
      count: this.#requests.series(labels),
      duration: this.#requestDuration.series(labels),
      operation,
      toolCall,
    };
  }
}

/** What a rate limiter publishes for export (its `stats()`, see `ratelimit/limiter.ts`). */
export interface RateLimitSource {
  readonly namespace: string;
  readonly server: string;
  stats(): {
    readonly failOpen: number;
    readonly storeErrors: Readonly<Record<string, number>>;
    readonly decisions: Readonly<Record<string, Readonly<Record<string, number>>>>;
    /** Per bucket of `bounds` (the last +Inf), seconds. */
    readonly latency: {
      readonly bounds: readonly number[];
      readonly counts: readonly number[];
      readonly sum: number;
      readonly count: number;
    };
  };
}

/**
 * ToolHive's rate-limit metrics of the rate limiters of a pipeline, read from their counters when
 * metrics are collected (nothing is added to the limiter's per-call work).
 */
export function rateLimitFamilies(sources: readonly RateLimitSource[], startMs: number): MetricFamily[] {
  const decisions: MetricFamily['points'][number][] = [];
  const errors: MetricFamily['points'][number][] = [];
  const failOpen: MetricFamily['points'][number][] = [];
  const latency: MetricFamily['points'][number][] = [];
  let bounds: readonly number[] = [];
  for (const source of sources) {
    const s = source.stats();
    const base: Labels = { namespace: source.namespace, server: source.server };
    for (const [decision, kinds] of Object.entries(s.decisions))
      for (const [kind, value] of Object.entries(kinds)) {
        if (value === 0) continue;
        const [scope, operation] = kind.startsWith('per_user_')
          ? ['per_user', kind.slice('per_user_'.length)]
          : ['shared', kind.slice('shared_'.length)];
        decisions.push({
          labels: {
            namespace: source.namespace,
            server: source.server,
            decision,
            scope: scope,
            operation_type: operation,
          },
          value,
          startMs,
        });
      }
    for (const [type, value] of Object.entries(s.storeErrors))
      if (value > 0)
        errors.push({
          labels: { namespace: source.namespace, server: source.server, error_type: type },
          value,
          startMs,
        });
    if (s.failOpen > 0) failOpen.push({ labels: base, value: s.failOpen, startMs });
    if (s.latency.count > 0) bounds = s.latency.bounds;
    if (s.latency.count > 0)
      latency.push({
        labels: base,
        counts: s.latency.counts,
        sum: s.latency.sum,
        count: s.latency.count,
        startMs,
      });
  }
  const counter = (
    name: string,
    description: string,
    points: MetricFamily['points'][number][],
  ): MetricFamily => ({
    name,
    description,
    unit: '',
    kind: 'counter',
    scope: RATE_LIMIT_SCOPE,
    points,
  });
  return [
    counter('toolhive_rate_limit_decisions', 'Rate limit decisions per bucket checked', decisions),
    counter('toolhive_rate_limit_redis_errors', 'Errors of the rate limit bucket store', errors),
    counter('toolhive_rate_limit_fail_open', 'Calls allowed because the bucket store failed', failOpen),
    {
      name: 'toolhive_rate_limit_check_latency',
      description: 'Latency of rate limit checks in seconds',
      unit: 's',
      kind: 'histogram',
      scope: RATE_LIMIT_SCOPE,
      boundaries: bounds,
      points: latency,
    },
  ];
}
