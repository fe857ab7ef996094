/**
 * Telemetry of a workload's proxy (as ToolHive's telemetry middleware has it) and of `skep serve`:
 * the `telemetry_config` parser, metric instruments and their Prometheus exposition. What a proxied
 * request records (`proxy-telemetry.ts`, with `proxy-metrics.ts` and `arguments.ts`) and the OTLP
 * export with the OpenTelemetry SDK (`otlp.ts`) are imported on demand by the telemetry stage and
 * exported here as types only, so a workload without telemetry loads neither, and one without an
 * OTLP endpoint no `@opentelemetry` package. The metric instruments and the Prometheus exposition
 * are in `runtime.ts`, for the same reason. `work-spans.ts` (no imports) lets code that runs
 * inside a traced request, such as the virtual MCP's composite tools, open spans of its own.
 */
export {
  DEFAULT_SAMPLING_RATE,
  parseEndpoint,
  parseSamplingRate,
  parseTelemetryConfig,
  type TelemetrySettings,
  telemetryHasDestination,
} from './config.js';
export type {
  HistogramCell,
  HistogramPoint,
  Labels,
  MetricFamily,
  MetricScope,
  NumberCell,
  NumberPoint,
} from './metrics.js';
export type { OtlpExport } from './otlp.js';
export type { RateLimitSource } from './proxy-metrics.js';
export type { ProxyTelemetry } from './proxy-telemetry.js';
export { NO_SPAN, requestSpan, type SpanAttributeValue, type WorkSpan } from './work-spans.js';
// Metric instruments, the Prometheus text format and the resource attributes: `./runtime.js`.
