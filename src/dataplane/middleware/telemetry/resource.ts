/**
 * The resource of a workload's telemetry (as ToolHive builds it): the attributes of
 * `OTEL_RESOURCE_ATTRIBUTES`, the host name, `customAttributes`, then `service.name` and
 * `service.version` (later entries win). OTLP exports carry it as the resource; Prometheus
 * shows it as `target_info`.
 */
import { hostname } from 'node:os';
import type { TelemetrySettings } from './config.js';

/** `k1=v1,k2=v2` (values percent-encoded, as the OpenTelemetry specification defines the variable). */
export function parseResourceAttributesEnv(value: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (value === undefined) return out;
  for (const pair of value.split(',')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) continue;
    const key = pair.slice(0, eq).trim();
    let v = pair.slice(eq + 1).trim();
    try {
      v = decodeURIComponent(v);
    } catch {
      // Not percent-encoded after all: keep it as written.
    }
    if (key !== '') out[key] = v;
  }
  return out;
}

export function resourceAttributes(
  settings: Pick<TelemetrySettings, 'serviceName' | 'serviceVersion' | 'customAttributes'>,
  env: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  return Object.assign(
    parseResourceAttributesEnv(env['OTEL_RESOURCE_ATTRIBUTES']),
    { 'host.name': hostname() },
    settings.customAttributes,
    { 'service.name': settings.serviceName, 'service.version': settings.serviceVersion },
  );
}
