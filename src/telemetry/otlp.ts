/**
 * OTLP/HTTP export of one workload's telemetry with the OpenTelemetry JS SDK (loaded only
 * when `telemetry_config.endpoint` is set: this module is imported on demand). One tracer
 * provider and one meter provider per workload, never registered globally:
 * - traces: `BasicTracerProvider` with ParentBased(TraceIdRatio(samplingRate)) and a
 *   `BatchSpanProcessor` (`OTEL_BSP_*` variables apply) into an OTLP/HTTP protobuf exporter
 *   at `<endpoint>/v1/traces` — the SDK's transport (headers, TLS with `caCertPath`, retries,
 *   timeouts) with this project's span encoder (`otlp-trace-encoder.ts`, see why there);
 * - metrics: a `PeriodicExportingMetricReader` (every `OTEL_METRIC_EXPORT_INTERVAL` ms, default
 *   60 000) into the SDK's OTLP/HTTP protobuf metric exporter at `<endpoint>/v1/metrics`, fed
 *   with the registry's families (`metrics.ts`) through a `MetricProducer`, cumulative;
 * - W3C trace context (`traceparent`, `tracestate`) and `baggage`: extracted from the request
 *   and injected into requests to HTTP servers.
 */
import {
  type Context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  diag,
  DiagLogLevel,
  type HrTime,
  ROOT_CONTEXT,
  type Span,
  type SpanOptions,
  trace,
  type Tracer,
  ValueType,
} from '@opentelemetry/api';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
import {
  convertLegacyHttpOptions,
  createOtlpHttpExportDelegate,
} from '@opentelemetry/otlp-exporter-base/node-http';
import { ProtobufTraceSerializer, TraceExporterMetricsHelper } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AggregationTemporality,
  type CollectionResult,
  DataPointType,
  type MetricData,
  MeterProvider,
  type MetricProducer,
  PeriodicExportingMetricReader,
  type ScopeMetrics,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  type ReadableSpan,
  type SpanExporter,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import type { Logger } from '../shared/index.js';
import type { TelemetrySettings } from './config.js';
import type { HistogramPoint, MetricFamily, MetricRegistry, NumberPoint } from './metrics.js';
import { encodeTraceRequest } from './otlp-trace-encoder.js';
import { TELEMETRY_SCOPE } from './proxy-metrics.js';

/** What the telemetry stage uses of the SDK. */
export interface OtlpExport {
  /** Undefined when `tracingEnabled` is false. */
  readonly tracer: Tracer | undefined;
  /** The parent context of a request: W3C headers, then `params._meta` (which wins). */
  extract(
    headers: Readonly<Record<string, unknown>>,
    meta: Readonly<Record<string, unknown>> | undefined,
  ): Context;
  /** Starts a SERVER span under `parent`. */
  startSpan(name: string, options: SpanOptions, parent: Context): Span;
  /** Writes `traceparent` (+ `tracestate`, `baggage`) for `span` under `parent` into `headers`. */
  inject(span: Span, parent: Context, headers: Record<string, string>): void;
  /** Exports what is pending and stops both providers. Idempotent. */
  close(): Promise<void>;
}

const propagator = new CompositePropagator({
  propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
});

let diagLogger: Logger | undefined;

/**
 * The SDK reports export failures through its global diagnostic logger: route it to the
 * (first) workload's logger, warnings and errors only. A runner serves one workload.
 */
function routeDiagnostics(logger: Logger): void {
  if (diagLogger !== undefined) return;
  diagLogger = logger;
  const log =
    (level: 'warn' | 'error') =>
    (message: string, ...args: unknown[]) =>
      logger[level](
        { otel: args.length > 0 ? args.map(String).join(' ') : undefined },
        `opentelemetry: ${message}`,
      );
  diag.setLogger(
    {
      error: log('error'),
      warn: log('warn'),
      info: () => {},
      debug: () => {},
      verbose: () => {},
    },
    { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
  );
}

function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
}

/** The registry's families (those with an OpenTelemetry scope) as SDK metric data, cumulative. */
export function toScopeMetrics(families: readonly MetricFamily[], nowMs: number): ScopeMetrics[] {
  const end = hrTime(nowMs);
  const byScope = new Map<string, ScopeMetrics>();
  for (const f of families) {
    if (f.scope === undefined) continue;
    let scope = byScope.get(f.scope.name);
    if (scope === undefined) {
      scope = {
        scope:
          f.scope.version === undefined
            ? { name: f.scope.name }
            : { name: f.scope.name, version: f.scope.version },
        metrics: [],
      };
      byScope.set(f.scope.name, scope);
    }
    const descriptor = {
      name: f.name,
      description: f.description,
      unit: f.unit,
      valueType: f.kind === 'histogram' ? ValueType.DOUBLE : ValueType.INT,
    };
    let data: MetricData;
    if (f.kind === 'histogram') {
      data = {
        descriptor,
        aggregationTemporality: AggregationTemporality.CUMULATIVE,
        dataPointType: DataPointType.HISTOGRAM,
        dataPoints: (f.points as HistogramPoint[]).map((p) => ({
          startTime: hrTime(p.startMs),
          endTime: end,
          attributes: p.labels,
          value: {
            buckets: { boundaries: [...(f.boundaries ?? [])], counts: [...p.counts] },
            sum: p.sum,
            count: p.count,
            ...(p.min === undefined || p.count === 0 ? {} : { min: p.min }),
            ...(p.max === undefined || p.count === 0 ? {} : { max: p.max }),
          },
        })),
      };
    } else if (f.kind === 'gauge') {
      data = {
        descriptor,
        aggregationTemporality: AggregationTemporality.CUMULATIVE,
        dataPointType: DataPointType.GAUGE,
        dataPoints: (f.points as NumberPoint[]).map((p) => ({
          startTime: hrTime(p.startMs),
          endTime: end,
          attributes: p.labels,
          value: p.value,
        })),
      };
    } else {
      data = {
        descriptor,
        aggregationTemporality: AggregationTemporality.CUMULATIVE,
        dataPointType: DataPointType.SUM,
        isMonotonic: f.kind === 'counter',
        dataPoints: (f.points as NumberPoint[]).map((p) => ({
          startTime: hrTime(p.startMs),
          endTime: end,
          attributes: p.labels,
          value: p.value,
        })),
      };
    }
    scope.metrics.push(data);
  }
  return [...byScope.values()];
}

function traceExporter(url: string, settings: TelemetrySettings): SpanExporter {
  const options = convertLegacyHttpOptions(
    {
      url,
      headers: { ...settings.headers },
      ...(settings.ca === undefined ? {} : { httpAgentOptions: { ca: settings.ca, keepAlive: true } }),
    },
    'TRACES',
    'v1/traces',
    { 'Content-Type': 'application/x-protobuf' },
  );
  const serializer = {
    serializeRequest: (spans: ReadableSpan[]) => encodeTraceRequest(spans),
    deserializeResponse: (data: Uint8Array) => ProtobufTraceSerializer.deserializeResponse(data),
  };
  return new OTLPExporterBase<ReadableSpan[]>(
    createOtlpHttpExportDelegate(
      options,
      serializer,
      'otlp_http_span_exporter',
      TraceExporterMetricsHelper,
      undefined,
    ),
  );
}

export interface OtlpExportOptions {
  settings: TelemetrySettings;
  /** `resource.ts` */
  resource: Record<string, string>;
  registry: MetricRegistry;
  logger: Logger;
}

export function startOtlpExport({
  settings,
  resource: attributes,
  registry,
  logger,
}: OtlpExportOptions): OtlpExport {
  const endpoint = settings.endpoint;
  if (endpoint === undefined) throw new Error('startOtlpExport: no endpoint');
  routeDiagnostics(logger);
  const resource = resourceFromAttributes(attributes);
  let tracerProvider: BasicTracerProvider | undefined;
  let tracer: Tracer | undefined;
  if (settings.tracing) {
    tracerProvider = new BasicTracerProvider({
      resource,
      sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(settings.samplingRate) }),
      spanProcessors: [new BatchSpanProcessor(traceExporter(`${endpoint}/v1/traces`, settings))],
    });
    tracer = tracerProvider.getTracer(TELEMETRY_SCOPE.name);
  }
  let meterProvider: MeterProvider | undefined;
  if (settings.otlpMetrics) {
    const producer: MetricProducer = {
      collect: async (): Promise<CollectionResult> => ({
        resourceMetrics: { resource, scopeMetrics: toScopeMetrics(registry.snapshot(), Date.now()) },
        errors: [],
      }),
    };
    const configured = Number(process.env['OTEL_METRIC_EXPORT_INTERVAL'] ?? '');
    const interval = Number.isInteger(configured) && configured > 0 ? configured : 60_000;
    meterProvider = new MeterProvider({
      resource,
      readers: [
        new PeriodicExportingMetricReader({
          exporter: new OTLPMetricExporter({
            url: `${endpoint}/v1/metrics`,
            headers: { ...settings.headers },
            temporalityPreference: AggregationTemporality.CUMULATIVE,
            ...(settings.ca === undefined ? {} : { httpAgentOptions: { ca: settings.ca, keepAlive: true } }),
          }),
          exportIntervalMillis: interval,
          // The SDK refuses a timeout longer than the interval.
          exportTimeoutMillis: Math.min(10_000, interval),
          metricProducers: [producer],
        }),
      ],
    });
  }
  let closed: Promise<void> | undefined;
  return {
    tracer,
    extract(headers, meta) {
      let ctx = ROOT_CONTEXT;
      if (headers['traceparent'] !== undefined || headers['baggage'] !== undefined)
        ctx = propagator.extract(ctx, headers, defaultTextMapGetter);
      if (meta !== undefined && (meta['traceparent'] !== undefined || meta['baggage'] !== undefined))
        ctx = propagator.extract(ctx, meta, defaultTextMapGetter);
      return ctx;
    },
    startSpan(name, options, parent) {
      return (tracer as Tracer).startSpan(name, options, parent);
    },
    inject(span, parent, headers) {
      propagator.inject(trace.setSpan(parent, span), headers, defaultTextMapSetter);
    },
    close() {
      closed ??= (async () => {
        const results = await Promise.allSettled([tracerProvider?.shutdown(), meterProvider?.shutdown()]);
        for (const r of results)
          if (r.status === 'rejected')
            logger.warn({ err: r.reason }, 'opentelemetry: the last export before stopping failed');
      })();
      return closed;
    },
  };
}
