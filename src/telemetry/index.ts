/**
 * Telemetry of a workload's proxy (reference middleware.md §5) and of `skep serve`: the
 * `telemetry_config` parser, metric instruments and their Prometheus exposition. What a
 * proxied request records (`proxy-telemetry.ts`, with `proxy-metrics.ts` and
 * `arguments.ts`) and the OTLP export with the OpenTelemetry SDK (`otlp.ts`) are imported on
 * demand by the telemetry stage and exported here as types only, so a workload without
 * telemetry loads neither, and one without an OTLP endpoint no `@opentelemetry` package.
 */
export {
  DEFAULT_SAMPLING_RATE,
  parseEndpoint,
  parseSamplingRate,
  parseTelemetryConfig,
  type TelemetrySettings,
  telemetryHasDestination,
} from './config.js';
export {
  cutLabel,
  type HistogramCell,
  type HistogramPoint,
  type Labels,
  MAX_SERIES,
  type MetricFamily,
  MetricRegistry,
  type MetricScope,
  type NumberCell,
  type NumberPoint,
  processFamilies,
} from './metrics.js';
export type { OtlpExport } from './otlp.js';
export { PROMETHEUS_CONTENT_TYPE, prometheusName, toPrometheusText } from './prometheus.js';
export type { RateLimitSource } from './proxy-metrics.js';
export type { ProxyTelemetry } from './proxy-telemetry.js';
export { parseResourceAttributesEnv, resourceAttributes } from './resource.js';
