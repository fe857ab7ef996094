/**
 * OTLP/HTTP export of one workload's telemetry, with the OpenTelemetry JS SDK's exporters
 * (loaded only when `telemetry_config.endpoint` is set: this module is imported on demand):
 * - traces: spans recorded by `spans.ts` (already protobuf) are sent by the SDK's OTLP/HTTP
 *   transport to `<endpoint>/v1/traces` — headers, TLS with `caCertPath`, retries with
 *   backoff, timeouts, partial-success warnings;
 * - metrics: a `PeriodicExportingMetricReader` (every `OTEL_METRIC_EXPORT_INTERVAL` ms, default
 *   60 000) into the SDK's OTLP/HTTP protobuf metric exporter at `<endpoint>/v1/metrics`, fed
 *   with the registry's families (`metrics.ts`) through a `MetricProducer`, cumulative.
 * One meter provider per workload, never registered globally.
 */
import { diag, DiagLogLevel, type HrTime, ValueType } from '@opentelemetry/api';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
import {
  convertLegacyHttpOptions,
  createOtlpHttpExportDelegate,
} from '@opentelemetry/otlp-exporter-base/node-http';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AggregationTemporality,
  type CollectionResult,
  type DataPoint,
  DataPointType,
  type MetricData,
  MeterProvider,
  type MetricProducer,
  PeriodicExportingMetricReader,
  type ScopeMetrics,
} from '@opentelemetry/sdk-metrics';
import type { Logger } from '../../../shared/index.js';
import type { TelemetrySettings } from './config.js';
import type { HistogramPoint, MetricFamily, MetricRegistry, NumberPoint } from './metrics.js';
import { TELEMETRY_SCOPE } from './proxy-metrics.js';
import { SpanRecorder } from './spans.js';

/** What the telemetry stage uses of the export. */
export interface OtlpExport {
  /** Undefined when `tracingEnabled` is false. */
  readonly spans: SpanRecorder | undefined;
  /** Exports what is pending and stops. Idempotent. */
  close(): Promise<void>;
}

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

/** The points of a counter, up-down counter or gauge as SDK data points, up to `end`. */
function numberDataPoints(points: readonly NumberPoint[], end: HrTime): DataPoint<number>[] {
  return points.map((p) => ({
    startTime: hrTime(p.startMs),
    endTime: end,
    attributes: p.labels,
    value: p.value,
  }));
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
        dataPoints: numberDataPoints(f.points as NumberPoint[], end),
      };
    } else {
      data = {
        descriptor,
        aggregationTemporality: AggregationTemporality.CUMULATIVE,
        dataPointType: DataPointType.SUM,
        isMonotonic: f.kind === 'counter',
        dataPoints: numberDataPoints(f.points as NumberPoint[], end),
      };
    }
    scope.metrics.push(data);
  }
  return [...byScope.values()];
}

/** One encoded span batch (`spans.ts`) and how many spans it holds (the SDK counts them). */
interface SpanBatch {
  readonly bytes: Uint8Array;
  readonly spans: number;
}

/** The SDK's OTLP/HTTP transport for already-encoded span batches. */
function spanSender(
  url: string,
  settings: TelemetrySettings,
): (bytes: Uint8Array, spans: number) => Promise<void> {
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
  const exporter = new OTLPExporterBase<SpanBatch>(
    createOtlpHttpExportDelegate(
      options,
      {
        serializeRequest: (batch: SpanBatch) => batch.bytes,
        deserializeResponse: (data: Uint8Array) => ProtobufTraceSerializer.deserializeResponse(data),
      },
      'otlp_http_span_exporter',
      { name: 'span', countItems: (batch: SpanBatch) => batch.spans },
      undefined,
    ),
  );
  return (bytes, spans) =>
    new Promise<void>((resolve, reject) =>
      exporter.export({ bytes, spans }, (result) => {
        if (result.code === 0) resolve();
        else reject(result.error ?? new Error('export failed'));
      }),
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
  const spans = settings.tracing
    ? new SpanRecorder({
        samplingRate: settings.samplingRate,
        resource: attributes,
        scope: TELEMETRY_SCOPE,
        send: spanSender(`${endpoint}/v1/traces`, settings),
        logger,
      })
    : undefined;
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
    spans,
    close() {
      closed ??= (async () => {
        const results = await Promise.allSettled([spans?.shutdown(), meterProvider?.shutdown()]);
        for (const r of results)
          if (r.status === 'rejected')
            logger.warn({ err: r.reason }, 'opentelemetry: the last export before stopping failed');
      })();
      return closed;
    },
  };
}
