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
import { SkepError } from '../shared/index.js';

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

const KNOWN = [
  'endpoint',
  'serviceName',
  'serviceVersion',
  'tracingEnabled',
  'metricsEnabled',
  'samplingRate',
  'headers',
  'insecure',
  'caCertPath',
  'enablePrometheusMetricsPath',
  'environmentVariables',
  'customAttributes',
  'useLegacyAttributes',
  // Newer reference fields, accepted at their defaults only (see below).
  'prometheusPort',
  'metricsOnTransportPort',
];

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function bad(field: string, message: string): never {
  throw new SkepError('bad_request', `telemetry_config.${field} ${message}`);
}

function optString(raw: Record<string, unknown>, key: string): string {
  const v = raw[key];
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') bad(key, 'must be a string');
  return v.trim();
}

function optBool(raw: Record<string, unknown>, key: string): boolean | undefined {
  const v = raw[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') bad(key, 'must be true or false');
  return v;
}

function stringMap(raw: Record<string, unknown>, key: string): Record<string, string> {
  const v = raw[key];
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) bad(key, 'must be an object of strings');
  const out: Record<string, string> = {};
  for (const [k, value] of Object.entries(v)) {
    if (typeof value !== 'string') bad(`${key}.${k}`, 'must be a string');
    if (k === '') bad(key, 'has an empty name');
    out[k] = value;
  }
  return out;
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
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw new SkepError('bad_request', 'telemetry_config must be an object');
  const r = raw as Record<string, unknown>;
  const unknown = Object.keys(r).filter((k) => !KNOWN.includes(k));
  if (unknown.length > 0)
    throw new SkepError(
      'bad_request',
      `telemetry_config: unknown key(s) ${unknown.join(', ')} (known: ${KNOWN.slice(0, -2).join(', ')})`,
    );
  const port = r['prometheusPort'];
  if (port !== undefined && port !== null && port !== 0)
    bad(
      'prometheusPort',
      'is not supported: Skep serves /metrics on the workload’s own proxy port (many workloads share one machine, so no fixed port); remove it',
    );
  if (r['metricsOnTransportPort'] === false)
    bad('metricsOnTransportPort', 'is not supported: Skep serves /metrics only on the proxy port; remove it');

  const insecure = optBool(r, 'insecure') ?? false;
  const endpointText = optString(r, 'endpoint');
  const endpoint = endpointText === '' ? undefined : parseEndpoint(endpointText, insecure);
  const prometheus = optBool(r, 'enablePrometheusMetricsPath') ?? false;
  const tracingFlag = optBool(r, 'tracingEnabled');
  const metricsFlag = optBool(r, 'metricsEnabled');
  const samplingRate = parseSamplingRate(r['samplingRate']);
  const headers = stringMap(r, 'headers');
  for (const [name, value] of Object.entries(headers)) {
    if (!HEADER_NAME.test(name)) bad('headers', `has an invalid header name '${name}'`);
    if (/[\r\n\0]/.test(value)) bad(`headers.${name}`, 'must not contain line breaks');
  }
  const customAttributes = stringMap(r, 'customAttributes');
  const envRaw = r['environmentVariables'] ?? [];
  if (!Array.isArray(envRaw) || envRaw.some((n) => typeof n !== 'string'))
    bad('environmentVariables', 'must be a list of environment variable names');
  const environmentVariables = (envRaw as string[]).map((n) => n.trim());
  for (const name of environmentVariables)
    if (!ENV_NAME.test(name)) bad('environmentVariables', `has an invalid variable name '${name}'`);

  if (endpoint === undefined && !prometheus) return undefined;
  // Absent flags mean "on" when there is an endpoint (better than the reference: see above).
  const tracing = endpoint !== undefined && tracingFlag !== false;
  const otlpMetrics = endpoint !== undefined && metricsFlag !== false;
  if (endpoint !== undefined && !tracing && !otlpMetrics)
    bad(
      'endpoint',
      'is set but tracingEnabled and metricsEnabled are both false, so nothing is sent to it: enable one, or remove endpoint',
    );
  const caCertPath = optString(r, 'caCertPath');
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
    serviceName: optString(r, 'serviceName') || `thv-${defaults.workload}`,
    serviceVersion: optString(r, 'serviceVersion') || defaults.version,
    headers: Object.freeze(headers),
    ca,
    prometheus,
    environmentVariables: Object.freeze(environmentVariables),
    customAttributes: Object.freeze(customAttributes),
    legacyAttributes: optBool(r, 'useLegacyAttributes') ?? false,
  });
}
