/**
 * Metric instruments, their Prometheus exposition and the resource attributes: what a proxy
 * with telemetry (its stage imports this module on demand) and `skep serve`'s `/metrics` use.
 * The index exports only the configuration and types, so a workload without telemetry never
 * loads them.
 */
export { cutLabel, MAX_SERIES, MetricRegistry, processFamilies } from './metrics.js';
export { PROMETHEUS_CONTENT_TYPE, prometheusName, toPrometheusText } from './prometheus.js';
export { parseResourceAttributesEnv, resourceAttributes } from './resource.js';
