/**
 * The `telemetry` stage (reference middleware.md §5): a span per request, the proxy's metrics,
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
 * The OpenTelemetry SDK is imported only when there is an endpoint; a workload with only
 * `/metrics` loads none of it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Attributes, Span } from '@opentelemetry/api';
import type { ExchangeEnd, ProxyRequestContext } from '../../proxy/index.js';
import { SKEP_VERSION, SkepError } from '../../shared/index.js';
import {
  MetricRegistry,
  type OtlpExport,
  PROMETHEUS_CONTENT_TYPE,
  parseTelemetryConfig,
  ProxyMetrics,
  processFamilies,
  rateLimitFamilies,
  resourceAttributes,
  summarizeArguments,
  type TelemetrySettings,
  telemetryHasDestination,
  toPrometheusText,
} from '../../telemetry/index.js';
import { paramsObject, stringParam } from './params.js';
import type { PipelinePeers, Stage, StageDeps, StageFactory } from '../types.js';

/** `@opentelemetry/api` values, written out so that this module loads none of it. */
const SPAN_KIND_SERVER = 1;
const STATUS_OK = 1;
const STATUS_ERROR = 2;

const PARAMETER_KEYS = ['config', 'server_name', 'transport'];
const TRANSPORTS = ['stdio', 'sse', 'streamable-http'];
const RESOURCE_METHODS = new Set([
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'notifications/resources/updated',
]);

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
      'bad_request',
      `telemetry parameters: unknown key(s) ${unknown.join(', ')} (known: ${PARAMETER_KEYS.join(', ')})`,
    );
  const serverName = stringParam('telemetry', params, 'server_name') || defaults.name;
  const transport = stringParam('telemetry', params, 'transport') || defaults.transport;
  if (!TRANSPORTS.includes(transport))
    throw new SkepError(
      'bad_request',
      `telemetry parameters.transport must be one of ${TRANSPORTS.join(', ')}`,
    );
  return {
    settings: parseTelemetryConfig(params['config'], { workload: serverName, version: SKEP_VERSION }),
    serverName,
    transport,
  };
}

function header(ctx: ProxyRequestContext, name: string): string | undefined {
  const v = ctx.headers[name];
  return typeof v === 'string' ? v : Array.isArray(v) ? v[0] : undefined;
}

function metaOf(ctx: ProxyRequestContext): Record<string, unknown> | undefined {
  const params = (ctx.mcp?.message as { params?: unknown } | undefined)?.params;
  if (params === null || typeof params !== 'object') return undefined;
  const meta = (params as { _meta?: unknown })._meta;
  return meta !== null && typeof meta === 'object' ? (meta as Record<string, unknown>) : undefined;
}

/** `_meta.clientInfo.name`, or the `initialize` request's `clientInfo.name`. */
function clientName(ctx: ProxyRequestContext, meta: Record<string, unknown> | undefined): string | undefined {
  const fromMeta = (meta?.['clientInfo'] as { name?: unknown } | undefined)?.name;
  if (typeof fromMeta === 'string') return fromMeta;
  if (ctx.mcp?.method === 'initialize') return ctx.mcp.resourceId;
  return undefined;
}

/** One workload's telemetry: what `handle` and the `/metrics` endpoint share. */
class ProxyTelemetry {
  readonly #settings: TelemetrySettings;
  readonly #server: string;
  readonly #transport: string;
  readonly #metrics: ProxyMetrics;
  readonly #registry: MetricRegistry;
  readonly #resource: Record<string, string>;
  readonly #otlp: OtlpExport | undefined;
  readonly #environment: Attributes;
  readonly #peers: PipelinePeers | undefined;
  readonly #startMs = Date.now();

  constructor(
    params: { settings: TelemetrySettings; serverName: string; transport: string },
    registry: MetricRegistry,
    resource: Record<string, string>,
    otlp: OtlpExport | undefined,
    peers: PipelinePeers | undefined,
  ) {
    this.#settings = params.settings;
    this.#server = params.serverName;
    this.#transport = params.transport;
    this.#registry = registry;
    this.#resource = resource;
    this.#otlp = otlp;
    this.#peers = peers;
    this.#metrics = new ProxyMetrics(registry, params.serverName, params.transport);
    // The proxy's environment does not change while it runs: read once (the reference reads it per request).
    const environment: Attributes = {};
    for (const name of params.settings.environmentVariables)
      environment[`environment.${name}`] = process.env[name] ?? '';
    this.#environment = environment;
    registry.collect(() => rateLimitFamilies(this.#peers?.rateLimits ?? [], this.#startMs));
  }

  handle(ctx: ProxyRequestContext): void {
    const start = performance.now();
    if (ctx.method === 'GET' && ctx.path.endsWith('/sse')) {
      this.#metrics.opened(true);
      if (this.#otlp?.tracer !== undefined) this.#sseSpan(ctx, this.#otlp);
      ctx.onEnd(() => this.#metrics.closed(true));
      return;
    }
    this.#metrics.opened(false);
    let span: Span | undefined;
    const otlp = this.#otlp;
    if (otlp?.tracer !== undefined) {
      const parent = otlp.extract(ctx.headers, metaOf(ctx));
      span = otlp.startSpan(
        `${ctx.method} ${ctx.path}`,
        { kind: SPAN_KIND_SERVER, attributes: this.#httpAttributes(ctx) },
        parent,
      );
      // HTTP servers continue the trace; a stdio server has no headers to carry it.
      if (ctx.backendTransport !== 'stdio') otlp.inject(span, parent, ctx.outboundHeaders);
    }
    ctx.onEnd((end) => this.#finish(ctx, end, start, span));
  }

  #finish(ctx: ProxyRequestContext, end: ExchangeEnd, start: number, span: Span | undefined): void {
    const seconds = (performance.now() - start) / 1000;
    const status = end.status;
    const mcp = ctx.mcp;
    const metrics = this.#metrics;
    metrics.closed(false);
    metrics.request(ctx.method, status, mcp?.method, mcp?.resourceId, seconds);
    if (mcp !== undefined) {
      const named = mcp.method === 'tools/call' || mcp.method === 'prompts/get' ? mcp.resourceId : undefined;
      metrics.operation(mcp.method, named, status, seconds);
      if (mcp.method === 'tools/call' && mcp.resourceId !== undefined)
        metrics.toolCall(mcp.resourceId, status);
    }
    if (span === undefined) return;
    const legacy = this.#settings.legacyAttributes;
    const attrs: Attributes = { 'http.response.status_code': status };
    if (legacy) {
      attrs['http.status_code'] = status;
      attrs['http.duration_ms'] = seconds * 1000;
    }
    if (mcp !== undefined) {
      const transport = header(ctx, 'x-mcp-transport') ?? this.#transport;
      attrs['mcp.method.name'] = mcp.method;
      attrs['rpc.system.name'] = 'jsonrpc';
      attrs['jsonrpc.protocol.version'] = '2.0';
      if (mcp.id !== undefined && mcp.id !== null) attrs['jsonrpc.request.id'] = String(mcp.id);
      if (mcp.resourceId !== undefined && RESOURCE_METHODS.has(mcp.method))
        attrs['mcp.resource.uri'] = mcp.resourceId;
      attrs['mcp.server.name'] = header(ctx, 'x-mcp-server-name') ?? this.#server;
      attrs['network.transport'] = transport === 'stdio' ? 'pipe' : 'tcp';
      if (transport !== 'stdio') attrs['network.protocol.name'] = 'http';
      if (transport === 'sse') attrs['mcp.backend.protocol.version'] = '1.1';
      if (ctx.remoteAddress !== undefined) attrs['client.address'] = ctx.remoteAddress;
      const session = header(ctx, 'mcp-session-id');
      if (session !== undefined) attrs['mcp.session.id'] = session;
      const version = header(ctx, 'mcp-protocol-version');
      if (version !== undefined) attrs['mcp.protocol.version'] = version;
      const client = clientName(ctx, metaOf(ctx));
      if (client !== undefined) attrs['mcp.client.name'] = client;
      attrs['mcp.is_batch'] = false;
      if (legacy) {
        attrs['mcp.method'] = mcp.method;
        attrs['rpc.system'] = 'jsonrpc';
        attrs['rpc.service'] = 'mcp';
        if (mcp.id !== undefined && mcp.id !== null) attrs['mcp.request.id'] = String(mcp.id);
        if (mcp.resourceId !== undefined) attrs['mcp.resource.id'] = mcp.resourceId;
        attrs['mcp.transport'] = transport;
      }
      if (mcp.method === 'tools/call' && mcp.resourceId !== undefined) {
        attrs['gen_ai.tool.name'] = mcp.resourceId;
        attrs['gen_ai.operation.name'] = 'execute_tool';
        const args = mcp.arguments === undefined ? undefined : summarizeArguments(mcp.arguments);
        if (args !== undefined) attrs['gen_ai.tool.call.arguments'] = args;
        if (legacy) {
          attrs['mcp.tool.name'] = mcp.resourceId;
          if (args !== undefined) attrs['mcp.tool.arguments'] = args;
        }
      } else if (mcp.method === 'prompts/get' && mcp.resourceId !== undefined) {
        attrs['gen_ai.prompt.name'] = mcp.resourceId;
        if (legacy) attrs['mcp.prompt.name'] = mcp.resourceId;
      }
      span.updateName(mcp.resourceId === undefined ? mcp.method : `${mcp.method} ${mcp.resourceId}`);
    }
    for (const name in this.#environment) attrs[name] = this.#environment[name];
    if (status >= 500) {
      attrs['error.type'] = String(status);
      span.setStatus({ code: STATUS_ERROR });
    } else if (status < 400) span.setStatus({ code: STATUS_OK });
    span.setAttributes(attrs);
    span.end();
  }

  /** HTTP attributes known when the request arrives (reference §5.2). */
  #httpAttributes(ctx: ProxyRequestContext): Attributes {
    const host = header(ctx, 'host') ?? '';
    const target = ctx.query === '' ? ctx.path : `${ctx.path}?${ctx.query}`;
    const userAgent = header(ctx, 'user-agent');
    const length = header(ctx, 'content-length');
    const attrs: Attributes = {
      'http.request.method': ctx.method,
      'url.full': target,
      'url.scheme': 'http',
      'server.address': host,
      'url.path': ctx.path,
    };
    if (userAgent !== undefined) attrs['user_agent.original'] = userAgent;
    if (ctx.query !== '') attrs['url.query'] = ctx.query;
    if (length !== undefined && /^\d+$/.test(length)) attrs['http.request.body.size'] = Number(length);
    if (this.#settings.legacyAttributes) {
      attrs['http.method'] = ctx.method;
      attrs['http.url'] = target;
      attrs['http.scheme'] = 'http';
      attrs['http.host'] = host;
      attrs['http.target'] = target;
      if (userAgent !== undefined) attrs['http.user_agent'] = userAgent;
      if (length !== undefined) attrs['http.request_content_length'] = length;
      if (ctx.query !== '') attrs['http.query'] = ctx.query;
    }
    return attrs;
  }

  /** The short span of a legacy SSE stream's opening (the stream itself gets none). */
  #sseSpan(ctx: ProxyRequestContext, otlp: OtlpExport): void {
    const attrs = this.#httpAttributes(ctx);
    const transport = header(ctx, 'x-mcp-transport') ?? this.#transport;
    attrs['sse.event_type'] = 'connection_established';
    attrs['mcp.server.name'] = header(ctx, 'x-mcp-server-name') ?? this.#server;
    attrs['network.transport'] = transport === 'stdio' ? 'pipe' : 'tcp';
    if (transport !== 'stdio') attrs['network.protocol.name'] = 'http';
    if (this.#settings.legacyAttributes) attrs['mcp.transport'] = transport;
    for (const name in this.#environment) attrs[name] = this.#environment[name];
    const span = otlp.startSpan(
      'sse.connection_established',
      { kind: SPAN_KIND_SERVER, attributes: attrs },
      otlp.extract(ctx.headers, undefined),
    );
    span.setStatus({ code: STATUS_OK });
    span.end();
  }

  /** `/metrics` (GET or HEAD): every family in the Prometheus text format. */
  async serveMetrics(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    if ((q === -1 ? url : url.slice(0, q)) !== '/metrics') return false;
    req.resume();
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' });
      res.end('Method Not Allowed: use GET\n');
      return true;
    }
    const families = this.#registry.snapshot();
    families.push(...processFamilies(this.#startMs));
    const body = toPrometheusText(families, this.#resource);
    res.writeHead(200, {
      'content-type': PROMETHEUS_CONTENT_TYPE,
      'cache-control': 'no-store',
      'content-length': Buffer.byteLength(body),
    });
    res.end(req.method === 'HEAD' ? undefined : body);
    return true;
  }

  close(): Promise<void> {
    return this.#otlp?.close() ?? Promise.resolve();
  }
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
    const settings = params.settings;
    if (settings === undefined) {
      deps.logger.info('telemetry_config has no endpoint and no Prometheus path: no telemetry');
      return undefined;
    }
    const registry = new MetricRegistry();
    const resource = resourceAttributes(settings);
    let otlp: OtlpExport | undefined;
    if (settings.endpoint !== undefined) {
      // The OpenTelemetry SDK: loaded by the workloads that export over OTLP only.
      const { startOtlpExport } = await import('../../telemetry/otlp.js');
      otlp = startOtlpExport({ settings, resource, registry, logger: deps.logger });
    }
    const telemetry = new ProxyTelemetry(
      { settings, serverName: params.serverName, transport: params.transport },
      registry,
      resource,
      otlp,
      deps.peers,
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
      async handle(ctx) {
        telemetry.handle(ctx);
        return undefined;
      },
      close: () => telemetry.close(),
    };
    if (settings.prometheus) stage.handler = (req, res) => telemetry.serveMetrics(req, res);
    return stage;
  },
};
