/**
 * Telemetry of a workload's proxy (reference middleware.md §5) and of `skep serve`: the
 * `telemetry_config` parser, metric instruments with their Prometheus exposition, and the
 * request attributes. OTLP export with the OpenTelemetry SDK lives in `otlp.ts`, which is
 * imported on demand only (it is not exported here, so a workload without an OTLP endpoint
 * never loads an `@opentelemetry` package).
 */
export {
  MAX_ARGUMENT_VALUE,
  MAX_ARGUMENTS_SUMMARY,
  isSensitiveKey,
  summarizeArguments,
} from './arguments.js';
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
  type HistogramPoint,
  type Labels,
  MAX_SERIES,
  type MetricFamily,
  MetricRegistry,
  type MetricScope,
  type NumberPoint,
  processFamilies,
} from './metrics.js';
export type { OtlpExport } from './otlp.js';
export { PROMETHEUS_CONTENT_TYPE, prometheusName, toPrometheusText } from './prometheus.js';
export {
  MCP_DURATION_BUCKETS,
  ProxyMetrics,
  RATE_LIMIT_SCOPE,
  type RateLimitSource,
  rateLimitFamilies,
  TELEMETRY_SCOPE,
} from './proxy-metrics.js';
export { parseResourceAttributesEnv, resourceAttributes } from './resource.js';
