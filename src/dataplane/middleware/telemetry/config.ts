/**
 * `telemetry_config` (ToolHive's shape, camelCase keys), parsed once into frozen
 * settings. Where the reference sets a trap, Skep refuses or does the evident thing instead
 * (docs/differences.md lists the differences):
 * - a config with only `endpoint` turns tracing and OTLP metrics on (the reference reads the
 *   absent booleans as false and then refuses to start);
 * - an unparsable or out-of-range `samplingRate` is a 400 naming it (the reference silently
 *   samples nothing); an absent or empty one is 0.1, the reference CLI's default;
 * - `http://` in `endpoint` means plain HTTP: it needs `insecure: true` (the reference strips the
 *   scheme and speaks TLS unless `insecure`), and `https://` with `insecure: true` is refused;
 * - settings with nowhere to go (no `endpoint`, no `enablePrometheusMetricsPath`) are refused
 *   by the run-configuration field rules (`workloads/unsupported-fields.ts`).
 */
import { readFileSync } from 'node:fs';
import { validateTelemetryConfig, validationProblem } from '../../../schemas/validators/index.js';
import { SkepError } from '../../../shared/index.js';

export interface TelemetrySettings {
  /** OTLP/HTTP base URL (`scheme://host:port[/base]`, no trailing slash); undefined: no OTLP export. */
  readonly endpoint: string | undefined;
  /** Spans are exported (needs `endpoint`). */
  readonly tracing: boolean;
  /** Metrics are exported over OTLP (needs `endpoint`); `/metrics` is `prometheus`. */
  readonly otlpMetrics: boolean;
  /** Root spans kept, 0..1 (ParentBased(TraceIdRatio): a sampled remote parent is always followed). */
  readonly samplingRate: number;
  readonly serviceName: string;
  readonly serviceVersion: string;
  /** Sent on every OTLP export (API keys: never logged). */
  readonly headers: Readonly<Record<string, string>>;
  /** PEM certificate authority for the collector's TLS (the file's text, read once). */
  readonly ca: string | undefined;
  /** `/metrics` in the Prometheus text format on the proxy's own port. */
  readonly prometheus: boolean;
  /** Span attributes `environment.<NAME>` from the proxy's environment. */
  readonly environmentVariables: readonly string[];
  /** Resource attributes on every span and metric export (and Prometheus `target_info`). */
  readonly customAttributes: Readonly<Record<string, string>>;
  /** Also emit the pre-semconv attribute names (ToolHive's `useLegacyAttributes`). */
  readonly legacyAttributes: boolean;
}

/** The reference CLI's `--otel-sampling-rate` default. */
export const DEFAULT_SAMPLING_RATE = 0.1;

/** What the schema lets through (ToolHive's JSON writes an absent field as null). */
interface RawTelemetryConfig {
  readonly endpoint?: string | null;
  readonly serviceName?: string | null;
  readonly serviceVersion?: string | null;
  readonly tracingEnabled?: boolean | null;
  readonly metricsEnabled?: boolean | null;
  readonly samplingRate?: unknown;
  readonly headers?: Readonly<Record<string, string>> | null;
  readonly insecure?: boolean | null;
  readonly caCertPath?: string | null;
  readonly enablePrometheusMetricsPath?: boolean | null;
  readonly environmentVariables?: readonly string[] | null;
  readonly customAttributes?: Readonly<Record<string, string>> | null;
  readonly useLegacyAttributes?: boolean | null;
}

function bad(field: string, message: string): never {
  throw new SkepError('invalid_config', `telemetry_config.${field} ${message}`);
}

/** `samplingRate`: a decimal string (the reference's type) or a number, within 0..1. */
export function parseSamplingRate(value: unknown): number {
  if (value === undefined || value === null || value === '') return DEFAULT_SAMPLING_RATE;
  const text =
    typeof value === 'number' ? String(value) : typeof value === 'string' ? value.trim() : undefined;
  if (text === undefined) bad('samplingRate', 'must be a decimal string between 0 and 1, e.g. "0.1"');
  const rate = /^[+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isFinite(rate) || rate < 0 || rate > 1)
    bad(
      'samplingRate',
      `must be a number between 0 and 1 (the share of new traces kept, e.g. "0.1"), got ${JSON.stringify(value)}`,
    );
  return rate;
}

/**
 * `endpoint` → the OTLP base URL: `host:port[/path]` with an optional `http://` / `https://`.
 * TLS unless `insecure`; an explicit scheme must agree with `insecure`.
 */
export function parseEndpoint(value: string, insecure: boolean): string {
  const m = /^(https?):\/\//i.exec(value);
  const scheme = m?.[1]?.toLowerCase();
  if (scheme === 'http' && !insecure)
    bad(
      'endpoint',
      `says http:// (plain HTTP) but insecure is false: set insecure: true for a plain-HTTP collector, or write https:// or no scheme for TLS`,
    );
  if (scheme === 'https' && insecure)
    bad('endpoint', 'says https:// but insecure is true: remove insecure, or use http:// for plain HTTP');
  const rest = m === null ? value : value.slice(m[0].length);
  let url: URL;
  try {
    url = new URL(`${insecure ? 'http' : 'https'}://${rest}`);
  } catch {
    bad(
      'endpoint',
      `must be host:port with an optional base path (e.g. "otel-collector:4318"), got '${value}'`,
    );
  }
  if (url.hostname === '' || url.search !== '' || url.hash !== '' || rest.includes('?') || rest.includes('#'))
    bad('endpoint', `must be host:port with an optional base path, no query, got '${value}'`);
  if (url.username !== '' || url.password !== '')
    bad('endpoint', 'must not carry credentials: send them in telemetry_config.headers');
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
}

/**
 * True when `raw` (a `telemetry_config` value) sends data somewhere: an OTLP endpoint or the
 * Prometheus path. Without either, the stage is not built.
 */
export function telemetryHasDestination(raw: unknown): boolean {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return false;
  const r = raw as Record<string, unknown>;
  return (
    (typeof r['endpoint'] === 'string' && r['endpoint'].trim() !== '') ||
    r['enablePrometheusMetricsPath'] === true
  );
}

/**
 * The settings of `raw`, or undefined when it configures no telemetry (no endpoint, no
 * Prometheus path). `workload` names the default service (`thv-<workload>`, as the reference
 * CLI and API fill it in, so dashboards keyed on it keep working). Reads `caCertPath`.
 */
export function parseTelemetryConfig(
  raw: unknown,
  defaults: { workload: string; version: string },
): TelemetrySettings | undefined {
  if (raw === undefined || raw === null) return undefined;
  const problem = validationProblem(validateTelemetryConfig, raw, 'telemetry_config');
  if (problem !== undefined) throw new SkepError('invalid_config', problem);
  const r = raw as RawTelemetryConfig;
  const insecure = r.insecure ?? false;
  const endpointText = (r.endpoint ?? '').trim();
  const endpoint = endpointText === '' ? undefined : parseEndpoint(endpointText, insecure);
  const prometheus = r.enablePrometheusMetricsPath ?? false;
  const samplingRate = parseSamplingRate(r.samplingRate);
  const headers = { ...r.headers };
  const customAttributes = { ...r.customAttributes };
  const environmentVariables = (r.environmentVariables ?? []).map((n) => n.trim());

  if (endpoint === undefined && !prometheus) return undefined;
  // Absent flags mean "on" when there is an endpoint (better than the reference: see above).
  const tracing = endpoint !== undefined && r.tracingEnabled !== false;
  const otlpMetrics = endpoint !== undefined && r.metricsEnabled !== false;
  if (endpoint !== undefined && !tracing && !otlpMetrics)
    bad(
      'endpoint',
      'is set but tracingEnabled and metricsEnabled are both false, so nothing is sent to it: enable one, or remove endpoint',
    );
  const caCertPath = (r.caCertPath ?? '').trim();
  let ca: string | undefined;
  if (caCertPath !== '') {
    if (endpoint === undefined)
      bad('caCertPath', 'needs an endpoint (it is the collector’s certificate authority)');
    if (insecure) bad('caCertPath', 'is for TLS, and insecure is true: remove one of them');
    try {
      ca = readFileSync(caCertPath, 'utf8');
    } catch (err) {
      bad('caCertPath', `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}): ${caCertPath}`);
    }
    if (!ca.includes('-----BEGIN CERTIFICATE-----'))
      bad('caCertPath', `is not a PEM certificate file: ${caCertPath}`);
  }
  if (endpoint === undefined && Object.keys(headers).length > 0)
    bad('headers', 'are sent to the OTLP endpoint, and there is none: set endpoint, or remove headers');
  return Object.freeze({
    endpoint,
    tracing,
    otlpMetrics,
    samplingRate,
    serviceName: (r.serviceName ?? '').trim() || `thv-${defaults.workload}`,
    serviceVersion: (r.serviceVersion ?? '').trim() || defaults.version,
    headers: Object.freeze(headers),
    ca,
    prometheus,
    environmentVariables: Object.freeze(environmentVariables),
    customAttributes: Object.freeze(customAttributes),
    legacyAttributes: r.useLegacyAttributes ?? false,
  });
}
