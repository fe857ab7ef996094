/**
 * The Prometheus text exposition format (0.0.4) of metric families, named the way the
 * reference's OpenTelemetry Prometheus exporter (Go) names them (ToolHive's `/metrics`), so
 * queries and dashboards built for it work: invalid characters become `_`
 * (`mcp.server.operation.duration` → `mcp_server_operation_duration`), the unit is appended
 * (`s` → `_seconds`, `By` → `_bytes`), counters end in `_total`, every series carries its
 * scope as `otel_scope_name` / `otel_scope_version`, and the resource is one `target_info`
 * series. (The OpenTelemetry JS exporter appends no unit suffix, hence this serializer.)
 */
import type { HistogramPoint, Labels, MetricFamily, NumberPoint } from './metrics.js';

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const UNIT_SUFFIX: Readonly<Record<string, string>> = {
  s: 'seconds',
  ms: 'milliseconds',
  By: 'bytes',
  '1': 'ratio',
};

/** A metric or label name with the characters Prometheus does not allow replaced by `_`. */
export function sanitizeName(name: string): string {
  const s = name.replace(/[^a-zA-Z0-9_:]/g, '_').replace(/__+/g, '_');
  return /^[0-9]/.test(s) ? `_${s}` : s;
}

/** The exposed name of a family: sanitized, unit suffix, `_total` for counters. */
export function prometheusName(family: Pick<MetricFamily, 'name' | 'unit' | 'kind'>): string {
  let name = sanitizeName(family.name);
  const unit = UNIT_SUFFIX[family.unit];
  if (unit !== undefined && !name.endsWith(`_${unit}`) && !name.endsWith(`_${unit}_total`)) {
    name = name.endsWith('_total') ? `${name.slice(0, -6)}_${unit}_total` : `${name}_${unit}`;
  }
  if (family.kind === 'counter' && !name.endsWith('_total')) name += '_total';
  return name;
}

const escapeValue = (v: string): string =>
  v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const escapeHelp = (v: string): string => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');

function labelText(labels: Labels, extra: Labels | undefined, le?: string): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(labels)) parts.push(`${sanitizeName(k)}="${escapeValue(v)}"`);
  if (extra !== undefined) for (const [k, v] of Object.entries(extra)) parts.push(`${k}="${escapeValue(v)}"`);
  if (le !== undefined) parts.push(`le="${le}"`);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

function num(n: number): string {
  if (n === Infinity) return '+Inf';
  if (n === -Infinity) return '-Inf';
  return String(n);
}

const TYPE: Readonly<Record<MetricFamily['kind'], string>> = {
  counter: 'counter',
  updown: 'gauge',
  gauge: 'gauge',
  histogram: 'histogram',
};

/**
 * The exposition of `families`; `resource` (service name, custom attributes...) becomes the
 * `target_info` series when given.
 */
export function toPrometheusText(families: readonly MetricFamily[], resource?: Labels): string {
  let out = '';
  if (resource !== undefined) {
    out += '# HELP target_info Target metadata\n# TYPE target_info gauge\n';
    out += `target_info${labelText(resource, undefined)} 1\n`;
  }
  // Families of one name are merged (one HELP/TYPE block), as Prometheus requires.
  const byName = new Map<string, MetricFamily[]>();
  for (const f of families) {
    const name = prometheusName(f);
    const list = byName.get(name);
    if (list === undefined) byName.set(name, [f]);
    else list.push(f);
  }
  for (const [name, list] of byName) {
    const first = list[0] as MetricFamily;
    out += `# HELP ${name} ${escapeHelp(first.description)}\n# TYPE ${name} ${TYPE[first.kind]}\n`;
    for (const f of list) {
      const scope: Labels | undefined =
        f.scope === undefined
          ? undefined
          : f.scope.version === undefined || f.scope.version === ''
            ? { otel_scope_name: f.scope.name }
            : { otel_scope_name: f.scope.name, otel_scope_version: f.scope.version };
      if (f.kind === 'histogram') {
        const bounds = f.boundaries ?? [];
        for (const p of f.points as HistogramPoint[]) {
          let cumulative = 0;
          for (let i = 0; i < p.counts.length; i++) {
            cumulative += p.counts[i] as number;
            const le = i < bounds.length ? num(bounds[i] as number) : '+Inf';
            out += `${name}_bucket${labelText(p.labels, scope, le)} ${cumulative}\n`;
          }
          out += `${name}_sum${labelText(p.labels, scope)} ${num(p.sum)}\n`;
          out += `${name}_count${labelText(p.labels, scope)} ${p.count}\n`;
        }
      } else {
        for (const p of f.points as NumberPoint[])
          out += `${name}${labelText(p.labels, scope)} ${num(p.value)}\n`;
      }
    }
  }
  return out;
}
