/**
 * The instrumentation of one workload's proxy requests (as ToolHive's telemetry middleware does
 * it): a span per request (with an OTLP endpoint and tracing on), the proxy's metrics, and the
 * `/metrics` endpoint. The `telemetry` pipeline stage (`pipeline/stages/telemetry.ts`) imports this
 * module on demand, so a workload without telemetry loads none of it.
 *
 * A span's context comes from the request's `traceparent`/`tracestate` headers, then from
 * `params._meta` (which wins, as in the reference); requests to an HTTP server carry the
 * span's `traceparent` (and the parent's `tracestate`, and `baggage` as received). The span
 * is written when the exchange is over, with every attribute at once (`spans.ts`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ExchangeEnd, ProxyRequestContext } from '../../proxy/index.js';
import { summarizeArguments } from './arguments.js';
import type { TelemetrySettings } from './config.js';
import { type MetricRegistry, processFamilies } from './metrics.js';
import type { OtlpExport } from './otlp.js';
import { PROMETHEUS_CONTENT_TYPE, toPrometheusText } from './prometheus.js';
import { ProxyMetrics, type RateLimitSource, rateLimitFamilies } from './proxy-metrics.js';
import { ProtobufWriter } from './protobuf-writer.js';
import {
  parseTraceparent,
  RecordedWorkSpan,
  type ServerSpan,
  type SpanRecorder,
  STATUS_ERROR,
  STATUS_OK,
  STATUS_UNSET,
  type TraceParent,
} from './spans.js';
import { bindRequestSpan } from './work-spans.js';

/** Span.attributes (trace.proto field 9). */
const A = 9;

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

/** The request's remote parent: `params._meta` wins over the headers (as in ToolHive). */
function parentOf(
  ctx: ProxyRequestContext,
  meta: Record<string, unknown> | undefined,
): TraceParent | undefined {
  if (meta !== undefined && meta['traceparent'] !== undefined) {
    const fromMeta = parseTraceparent(meta['traceparent'], meta['tracestate']);
    if (fromMeta !== undefined) return fromMeta;
  }
  const tp = ctx.headers['traceparent'];
  return tp === undefined ? undefined : parseTraceparent(tp, header(ctx, 'tracestate'));
}

/** Attributes written by `write`, encoded once (those whose keys and values never change). */
function encodedOnce(write: (w: ProtobufWriter) => void): Buffer {
  const w = new ProtobufWriter(512);
  write(w);
  return w.take();
}

/** One workload's telemetry: what the stage's `handle` and the `/metrics` endpoint share. */
export class ProxyTelemetry {
  readonly #legacy: boolean;
  readonly #server: string;
  readonly #transport: string;
  readonly #metrics: ProxyMetrics;
  readonly #registry: MetricRegistry;
  readonly #resource: Record<string, string>;
  readonly #otlp: OtlpExport | undefined;
  readonly #spans: SpanRecorder | undefined;
  /** `environment.<NAME>` attributes: [key, value] pairs. */
  readonly #environment: readonly (readonly [string, string])[];
  /**
   * Attributes the same on every span, encoded when the stage is built (a span has about 25;
   * each written afresh is a few hundred ns): the HTTP scheme, and for an MCP request whose
   * client named neither `X-MCP-Server-Name` nor `X-MCP-Transport`, the server and transport
   * ones (`#serverAttributes`). The environment attributes are the last of each span.
   */
  readonly #fixedHttp: Buffer;
  readonly #fixedServer: Buffer;
  readonly #fixedEnvironment: Buffer;
  readonly #rateLimits: readonly RateLimitSource[];
  readonly #startMs = Date.now();

  constructor(
    params: { settings: TelemetrySettings; serverName: string; transport: string },
    registry: MetricRegistry,
    resource: Record<string, string>,
    otlp: OtlpExport | undefined,
    rateLimits: readonly RateLimitSource[],
  ) {
    this.#legacy = params.settings.legacyAttributes;
    this.#server = params.serverName;
    this.#transport = params.transport;
    this.#registry = registry;
    this.#resource = resource;
    this.#otlp = otlp;
    this.#spans = otlp?.spans;
    this.#rateLimits = rateLimits;
    this.#metrics = new ProxyMetrics(registry, params.serverName, params.transport);
    // The proxy's environment does not change while it runs: read once (the reference reads it per request).
    this.#environment = params.settings.environmentVariables.map(
      (name) => [`environment.${name}`, process.env[name] ?? ''] as const,
    );
    this.#fixedHttp = encodedOnce((w) => {
      w.stringAttr(A, 'url.scheme', 'http');
      if (this.#legacy) w.stringAttr(A, 'http.scheme', 'http');
    });
    this.#fixedServer = encodedOnce((w) => this.#serverAttributes(w, this.#server, this.#transport));
    this.#fixedEnvironment = encodedOnce((w) => {
      for (const [key, value] of this.#environment) w.stringAttr(A, key, value);
    });
    // Read at collection time: the rate limit stages may be built after this one.
    registry.collect(() => rateLimitFamilies(this.#rateLimits, this.#startMs));
  }

  handle(ctx: ProxyRequestContext): void {
    const start = performance.now();
    if (ctx.method === 'GET' && ctx.path.endsWith('/sse')) {
      this.#metrics.opened(true);
      if (this.#spans !== undefined) this.#sseSpan(ctx, this.#spans);
      ctx.onEnd(() => this.#metrics.closed(true));
      return;
    }
    this.#metrics.opened(false);
    let span: ServerSpan | undefined;
    const spans = this.#spans;
    if (spans !== undefined) {
      const meta = metaOf(ctx);
      span = spans.start(parentOf(ctx, meta));
      // A tool call may do work of its own under its span (a virtual MCP's composite tool).
      if (ctx.mcp?.method === 'tools/call') bindRequestSpan(ctx, new RecordedWorkSpan(spans, span));
      // HTTP servers continue the trace; a stdio server has no headers to carry it, but an
      // in-process one reads `traceparent` (the virtual MCP server parents its inner calls).
      const out = ctx.outboundHeaders;
      out['traceparent'] = span.traceparent();
      if (ctx.backendTransport !== 'stdio') {
        if (span.parent?.state !== undefined) out['tracestate'] = span.parent.state;
        const baggage = typeof meta?.['baggage'] === 'string' ? meta['baggage'] : header(ctx, 'baggage');
        if (baggage !== undefined && baggage !== '') out['baggage'] = baggage;
      }
    }
    ctx.onEnd((end) => this.#finish(ctx, end, start, span));
  }

  #finish(ctx: ProxyRequestContext, end: ExchangeEnd, start: number, span: ServerSpan | undefined): void {
    const seconds = (performance.now() - start) / 1000;
    const status = end.status;
    const mcp = ctx.mcp;
    const metrics = this.#metrics;
    metrics.closed(false);
    metrics.finished(ctx.method, status, mcp?.method, mcp?.resourceId, seconds);
    if (span === undefined || !span.sampled) return;
    const spans = this.#spans as SpanRecorder;
    // Renamed once the request is over: `<mcp method> <resource id>` (ToolHive's span name).
    const name =
      mcp === undefined
        ? `${ctx.method} ${ctx.path}`
        : mcp.resourceId === undefined
          ? mcp.method
          : `${mcp.method} ${mcp.resourceId}`;
    const w = spans.open(span, name);
    if (w === undefined) return;
    const legacy = this.#legacy;
    this.#httpAttributes(w, ctx);
    w.intAttr(A, 'http.response.status_code', status);
    const bytes = end.responseBytes;
    if (bytes !== undefined) w.intAttr(A, 'http.response.body.size', bytes);
    if (legacy) {
      w.intAttr(A, 'http.status_code', status);
      if (bytes !== undefined) w.intAttr(A, 'http.response_content_length', bytes);
      w.doubleAttr(A, 'http.duration_ms', seconds * 1000);
    }
    if (mcp !== undefined) {
      w.stringAttr(A, 'mcp.method.name', mcp.method);
      const id = mcp.id === undefined || mcp.id === null ? undefined : String(mcp.id);
      if (id !== undefined) w.stringAttr(A, 'jsonrpc.request.id', id);
      if (mcp.resourceId !== undefined && RESOURCE_METHODS.has(mcp.method))
        w.stringAttr(A, 'mcp.resource.uri', mcp.resourceId);
      const serverName = header(ctx, 'x-mcp-server-name');
      const transport = header(ctx, 'x-mcp-transport');
      if (serverName === undefined && transport === undefined) w.raw(this.#fixedServer);
      else this.#serverAttributes(w, serverName ?? this.#server, transport ?? this.#transport);
      w.stringAttr(A, 'network.protocol.version', ctx.httpVersion);
      if (ctx.remoteAddress !== undefined) w.stringAttr(A, 'client.address', ctx.remoteAddress);
      if (ctx.remotePort !== undefined) w.intAttr(A, 'client.port', ctx.remotePort);
      const session = header(ctx, 'mcp-session-id');
      if (session !== undefined) w.stringAttr(A, 'mcp.session.id', session);
      const version = header(ctx, 'mcp-protocol-version');
      if (version !== undefined) w.stringAttr(A, 'mcp.protocol.version', version);
      const client = clientName(ctx, metaOf(ctx));
      if (client !== undefined) w.stringAttr(A, 'mcp.client.name', client);
      if (legacy) {
        w.stringAttr(A, 'mcp.method', mcp.method);
        if (id !== undefined) w.stringAttr(A, 'mcp.request.id', id);
        if (mcp.resourceId !== undefined) w.stringAttr(A, 'mcp.resource.id', mcp.resourceId);
      }
      if (mcp.method === 'tools/call' && mcp.resourceId !== undefined) {
        w.stringAttr(A, 'gen_ai.tool.name', mcp.resourceId);
        w.stringAttr(A, 'gen_ai.operation.name', 'execute_tool');
        const args = mcp.arguments === undefined ? undefined : summarizeArguments(mcp.arguments);
        if (args !== undefined) w.stringAttr(A, 'gen_ai.tool.call.arguments', args);
        if (legacy) {
          w.stringAttr(A, 'mcp.tool.name', mcp.resourceId);
          if (args !== undefined) w.stringAttr(A, 'mcp.tool.arguments', args);
        }
      } else if (mcp.method === 'prompts/get' && mcp.resourceId !== undefined) {
        w.stringAttr(A, 'gen_ai.prompt.name', mcp.resourceId);
        if (legacy) w.stringAttr(A, 'mcp.prompt.name', mcp.resourceId);
      }
    }
    w.raw(this.#fixedEnvironment);
    // What later stages added (the rate limit's decision, as ToolHive's rate limiter records it).
    const added = ctx.spanAttributes;
    if (added !== undefined)
      for (const [key, value] of added)
        if (typeof value === 'boolean') w.boolAttr(A, key, value);
        else w.stringAttr(A, key, value);
    // Status, as ToolHive sets it: ≥ 500 Error with error.type, 4xx unset, else Ok.
    if (status >= 500) {
      w.stringAttr(A, 'error.type', String(status));
      spans.close(span, STATUS_ERROR);
    } else spans.close(span, status >= 400 ? STATUS_UNSET : STATUS_OK);
  }

  /** The attributes of an MCP request's span that name the server and its transport. */
  #serverAttributes(w: ProtobufWriter, serverName: string, transport: string): void {
    w.stringAttr(A, 'rpc.system.name', 'jsonrpc');
    w.stringAttr(A, 'jsonrpc.protocol.version', '2.0');
    w.stringAttr(A, 'mcp.server.name', serverName);
    w.stringAttr(A, 'network.transport', transport === 'stdio' ? 'pipe' : 'tcp');
    if (transport !== 'stdio') w.stringAttr(A, 'network.protocol.name', 'http');
    if (transport === 'sse') w.stringAttr(A, 'mcp.backend.protocol.version', '1.1');
    w.boolAttr(A, 'mcp.is_batch', false);
    if (this.#legacy) {
      w.stringAttr(A, 'rpc.system', 'jsonrpc');
      w.stringAttr(A, 'rpc.service', 'mcp');
      w.stringAttr(A, 'mcp.transport', transport);
    }
  }

  /** HTTP attributes of the request (those ToolHive's spans carry). */
  #httpAttributes(w: ProtobufWriter, ctx: ProxyRequestContext): void {
    const host = header(ctx, 'host') ?? '';
    const target = ctx.query === '' ? ctx.path : `${ctx.path}?${ctx.query}`;
    const userAgent = header(ctx, 'user-agent');
    const length = header(ctx, 'content-length');
    w.stringAttr(A, 'http.request.method', ctx.method);
    w.stringAttr(A, 'url.full', target);
    w.raw(this.#fixedHttp);
    w.stringAttr(A, 'server.address', host);
    w.stringAttr(A, 'url.path', ctx.path);
    if (userAgent !== undefined) w.stringAttr(A, 'user_agent.original', userAgent);
    if (ctx.query !== '') w.stringAttr(A, 'url.query', ctx.query);
    const size = length !== undefined && /^\d+$/.test(length) ? Number(length) : undefined;
    if (size !== undefined) w.intAttr(A, 'http.request.body.size', size);
    if (this.#legacy) {
      w.stringAttr(A, 'http.method', ctx.method);
      w.stringAttr(A, 'http.url', target);
      w.stringAttr(A, 'http.host', host);
      w.stringAttr(A, 'http.target', target);
      if (userAgent !== undefined) w.stringAttr(A, 'http.user_agent', userAgent);
      if (length !== undefined) w.stringAttr(A, 'http.request_content_length', length);
      if (ctx.query !== '') w.stringAttr(A, 'http.query', ctx.query);
    }
  }

  /** The short span of a legacy SSE stream's opening (the stream itself gets none). */
  #sseSpan(ctx: ProxyRequestContext, spans: SpanRecorder): void {
    const span = spans.start(parentOf(ctx, undefined));
    const w = spans.open(span, 'sse.connection_established');
    if (w === undefined) return;
    const transport = header(ctx, 'x-mcp-transport') ?? this.#transport;
    this.#httpAttributes(w, ctx);
    w.stringAttr(A, 'sse.event_type', 'connection_established');
    w.stringAttr(A, 'mcp.server.name', header(ctx, 'x-mcp-server-name') ?? this.#server);
    w.stringAttr(A, 'network.transport', transport === 'stdio' ? 'pipe' : 'tcp');
    if (transport !== 'stdio') w.stringAttr(A, 'network.protocol.name', 'http');
    if (this.#legacy) w.stringAttr(A, 'mcp.transport', transport);
    w.raw(this.#fixedEnvironment);
    spans.close(span, STATUS_OK);
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
