/**
 * The `telemetry` stage (ToolHive's telemetry middleware): a span per request, the proxy's metrics,
 * and `/metrics` on the proxy's own port. Built from `telemetry_config`, or from a
 * `middleware_configs` entry with the reference's parameters `{config, server_name, transport}`.
 *
 * Spans (with an OTLP `endpoint` and tracing on): one SERVER span per request, named
 * `<HTTP method> <path>` and renamed to `<mcp method> <resource id>` when the request is over;
 * the parent is the W3C context of the request's headers, then of `params._meta` (which wins);
 * its context goes to HTTP servers as `traceparent`/`tracestate`/`baggage`. HTTP and MCP
 * attributes as the reference emits them (legacy names too with `useLegacyAttributes`); a
 * `/sse` stream gets a short `sse.connection_established` span instead. Status: ≥ 500 Error,
 * 4xx unset, else Ok. The span ends, and the metrics are recorded, when the exchange is
 * over (`ctx.onEnd`), so rejections of later stages (a 429 of the rate limit) are seen.
 *
 * Metrics (`telemetry/proxy-metrics.ts`): recorded always, exported over OTLP with
 * `metricsEnabled` and served as `/metrics` with `enablePrometheusMetricsPath`. `/metrics` is
 * served on the workload's proxy port (no fixed shared port: many workloads share one
 * machine), outside the pipeline like the reference's, behind the proxy's Host/Origin guard.
 *
 * What a request does is in `telemetry/proxy-telemetry.ts`, imported when the stage is built,
 * and the OpenTelemetry SDK (`telemetry/otlp.ts`) only when there is an endpoint: a workload
 * without telemetry loads neither, one with only `/metrics` no `@opentelemetry` package.
 */
import { SKEP_VERSION, SkepError } from '../../../shared/index.js';
import {
  type OtlpExport,
  parseTelemetryConfig,
  type TelemetrySettings,
  telemetryHasDestination,
} from '../../middleware/telemetry/index.js';
import type { SecretLookup } from '../../../secrets/index.js';
import type { Stage, StageDeps, StageFactory } from '../types.js';
import { paramsObject, stringParam } from './params.js';
import { secretOrLiteral } from './secrets.js';

const PARAMETER_KEYS = ['config', 'server_name', 'transport'];
const TRANSPORTS = ['stdio', 'sse', 'streamable-http'];

interface TelemetryParameters {
  settings: TelemetrySettings | undefined;
  serverName: string;
  transport: string;
}

function parseParameters(value: unknown, defaults: { name: string; transport: string }): TelemetryParameters {
  const params = paramsObject('telemetry', value);
  const unknown = Object.keys(params).filter((k) => !PARAMETER_KEYS.includes(k));
  if (unknown.length > 0)
    throw new SkepError(
      'invalid_config',
      `telemetry parameters: unknown key(s) ${unknown.join(', ')} (known: ${PARAMETER_KEYS.join(', ')})`,
    );
  const serverName = stringParam('telemetry', params, 'server_name') || defaults.name;
  const transport = stringParam('telemetry', params, 'transport') || defaults.transport;
  if (!TRANSPORTS.includes(transport))
    throw new SkepError(
      'invalid_config',
      `telemetry parameters.transport must be one of ${TRANSPORTS.join(', ')}`,
    );
  return {
    settings: parseTelemetryConfig(params['config'], { workload: serverName, version: SKEP_VERSION }),
    serverName,
    transport,
  };
}

/**
 * `headers` values given as secret references (`<name>,target=…`) read from the secrets provider:
 * how credentials for the collector stay out of the stored configuration (the Kubernetes
 * operator passes the reference's `sensitiveHeaders` this way, from env vars filled by Secrets).
 */
async function withSecretHeaders(
  settings: TelemetrySettings,
  lookup: SecretLookup,
): Promise<TelemetrySettings> {
  const entries = await Promise.all(
    Object.entries(settings.headers).map(
      async ([name, value]) =>
        [name, await secretOrLiteral(value, lookup, `telemetry_config.headers.${name}`)] as const,
    ),
  );
  return Object.freeze(Object.assign({}, settings, { headers: Object.freeze(Object.fromEntries(entries)) }));
}

export const telemetryStage: StageFactory = {
  type: 'telemetry',

  fromRunConfig(config) {
    const raw = config.telemetry_config;
    if (raw === undefined || !telemetryHasDestination(raw)) return undefined;
    return { config: raw, server_name: config.name, transport: config.transport };
  },

  check(parameters, config) {
    parseParameters(parameters, { name: config.name, transport: config.transport });
  },

  async create(parameters: unknown, deps: StageDeps): Promise<Stage | undefined> {
    const params = parseParameters(parameters, { name: deps.config.name, transport: deps.config.transport });
    if (params.settings === undefined) {
      deps.logger.info('telemetry_config has no endpoint and no Prometheus path: no telemetry');
      return undefined;
    }
    const settings = await withSecretHeaders(params.settings, deps.secretLookup);
    // Loaded here, so that a workload without telemetry loads none of it (runner footprint).
    const { ProxyTelemetry } = await import('../../middleware/telemetry/proxy-telemetry.js');
    const { MetricRegistry, resourceAttributes } = await import('../../middleware/telemetry/runtime.js');
    const registry = new MetricRegistry();
    const resource = resourceAttributes(settings);
    let otlp: OtlpExport | undefined;
    if (settings.endpoint !== undefined) {
      // The OpenTelemetry SDK: loaded by the workloads that export over OTLP only.
      const { startOtlpExport } = await import('../../middleware/telemetry/otlp.js');
      otlp = startOtlpExport({ settings, resource, registry, logger: deps.logger });
    }
    const telemetry = new ProxyTelemetry(
      { settings, serverName: params.serverName, transport: params.transport },
      registry,
      resource,
      otlp,
      deps.peers?.rateLimits ?? [],
    );
    deps.logger.info(
      {
        endpoint: settings.endpoint,
        tracing: settings.tracing,
        sampling_rate: settings.tracing ? settings.samplingRate : undefined,
        otlp_metrics: settings.otlpMetrics,
        prometheus: settings.prometheus,
      },
      'telemetry',
    );
    const stage: Stage = {
      name: 'telemetry',
      handle(ctx) {
        telemetry.handle(ctx);
        return undefined;
      },
      close: () => telemetry.close(),
    };
    if (settings.prometheus) stage.handler = (req, res) => telemetry.serveMetrics(req, res);
    return stage;
  },
};
