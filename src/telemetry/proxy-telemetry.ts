/**
 * The instrumentation of one workload's proxy requests (reference middleware.md §5.2–§5.4):
 * a span per request (with an OTLP exporter), the proxy's metrics, and the `/metrics`
 * endpoint. The `telemetry` pipeline stage (`pipeline/stages/telemetry.ts`) imports this
 * module on demand, so a workload without telemetry loads none of it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Attributes, Span } from '@opentelemetry/api';
import type { ExchangeEnd, ProxyRequestContext } from '../proxy/index.js';
import { summarizeArguments } from './arguments.js';
import type { TelemetrySettings } from './config.js';
import { type MetricRegistry, processFamilies } from './metrics.js';
import type { OtlpExport } from './otlp.js';
import { PROMETHEUS_CONTENT_TYPE, toPrometheusText } from './prometheus.js';
import { ProxyMetrics, type RateLimitSource, rateLimitFamilies } from './proxy-metrics.js';

/** `@opentelemetry/api` values, written out so that this module loads none of it. */
const SPAN_KIND_SERVER = 1;
const STATUS_OK = 1;
const STATUS_ERROR = 2;

const RESOURCE_METHODS = new Set([
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'notifications/resources/updated',
]);

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

/** One workload's telemetry: what the stage's `handle` and the `/metrics` endpoint share. */
export class ProxyTelemetry {
  readonly #settings: TelemetrySettings;
  readonly #server: string;
  readonly #transport: string;
  readonly #metrics: ProxyMetrics;
  readonly #registry: MetricRegistry;
  readonly #resource: Record<string, string>;
  readonly #otlp: OtlpExport | undefined;
  readonly #environment: Attributes;
  readonly #rateLimits: readonly RateLimitSource[];
  readonly #startMs = Date.now();

  constructor(
    params: { settings: TelemetrySettings; serverName: string; transport: string },
    registry: MetricRegistry,
    resource: Record<string, string>,
    otlp: OtlpExport | undefined,
    rateLimits: readonly RateLimitSource[],
  ) {
    this.#settings = params.settings;
    this.#server = params.serverName;
    this.#transport = params.transport;
    this.#registry = registry;
    this.#resource = resource;
    this.#otlp = otlp;
    this.#rateLimits = rateLimits;
    this.#metrics = new ProxyMetrics(registry, params.serverName, params.transport);
    // The proxy's environment does not change while it runs: read once (the reference reads it per request).
    const environment: Attributes = {};
    for (const name of params.settings.environmentVariables)
      environment[`environment.${name}`] = process.env[name] ?? '';
    this.#environment = environment;
    // Read at collection time: the rate limit stages may be built after this one.
    registry.collect(() => rateLimitFamilies(this.#rateLimits, this.#startMs));
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
