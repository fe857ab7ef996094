/**
 * An OTLP/HTTP receiver on loopback for tests, and a protobuf decoder for what it receives.
 *
 * No OpenTelemetry Collector is packaged for these machines (Debian has none, and the
 * project downloads no binaries), so the test receiver is this: a plain HTTP server that
 * accepts `POST /v1/traces` and `POST /v1/metrics` (`application/x-protobuf`), answers 200 with
 * an empty `Export*ServiceResponse`, and decodes each body with protobufjs against the
 * opentelemetry-proto v1 messages written out below (the subset a proxy's spans and metrics
 * use) — an encoding independent of the code under test.
 */
import { createServer, type IncomingHttpHeaders, type RequestListener, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import protobuf from 'protobufjs';

const PROTO = `
syntax = "proto3";
package otlp;
message AnyValue {
  oneof value {
    string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4;
    ArrayValue array_value = 5; bytes bytes_value = 7;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValue { string key = 1; AnyValue value = 2; }
message InstrumentationScope { string name = 1; string version = 2; repeated KeyValue attributes = 3; }
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }
message Status { string message = 2; int32 code = 3; }
message Event { fixed64 time_unix_nano = 1; string name = 2; repeated KeyValue attributes = 3; }
message Link { bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; repeated KeyValue attributes = 4; fixed32 flags = 6; }
message Span {
  bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; bytes parent_span_id = 4;
  fixed32 flags = 16; string name = 5; int32 kind = 6;
  fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9; uint32 dropped_attributes_count = 10;
  repeated Event events = 11; uint32 dropped_events_count = 12;
  repeated Link links = 13; uint32 dropped_links_count = 14; Status status = 15;
}
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; string schema_url = 3; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; string schema_url = 3; }
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }

message NumberDataPoint {
  repeated KeyValue attributes = 7; fixed64 start_time_unix_nano = 2; fixed64 time_unix_nano = 3;
  oneof value { double as_double = 4; sfixed64 as_int = 6; }
}
message HistogramDataPoint {
  repeated KeyValue attributes = 9; fixed64 start_time_unix_nano = 2; fixed64 time_unix_nano = 3;
  fixed64 count = 4; optional double sum = 5; repeated fixed64 bucket_counts = 6;
  repeated double explicit_bounds = 7; optional double min = 11; optional double max = 12;
}
message Sum { repeated NumberDataPoint data_points = 1; int32 aggregation_temporality = 2; bool is_monotonic = 3; }
message Gauge { repeated NumberDataPoint data_points = 1; }
message Histogram { repeated HistogramDataPoint data_points = 1; int32 aggregation_temporality = 2; }
message Metric {
  string name = 1; string description = 2; string unit = 3;
  oneof data { Gauge gauge = 5; Sum sum = 7; Histogram histogram = 9; }
}
message ScopeMetrics { InstrumentationScope scope = 1; repeated Metric metrics = 2; string schema_url = 3; }
message ResourceMetrics { Resource resource = 1; repeated ScopeMetrics scope_metrics = 2; string schema_url = 3; }
message ExportMetricsServiceRequest { repeated ResourceMetrics resource_metrics = 1; }
`;

const root = protobuf.parse(PROTO, { keepCase: true }).root;
const TraceRequest = root.lookupType('otlp.ExportTraceServiceRequest');
const MetricsRequest = root.lookupType('otlp.ExportMetricsServiceRequest');
const CONVERSION = { longs: String, bytes: String, defaults: false, oneofs: false } as const;

type Plain = Record<string, unknown>;

/** An attribute list as a plain object: key → string | number | boolean | array. */
export function attributeMap(list: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of (list as { key: string; value?: Plain }[] | undefined) ?? [])
    out[kv.key] = anyValue(kv.value);
  return out;
}

function anyValue(v: Plain | undefined): unknown {
  if (v === undefined) return undefined;
  if ('string_value' in v) return v['string_value'];
  if ('bool_value' in v) return v['bool_value'];
  if ('int_value' in v) return Number(v['int_value']);
  if ('double_value' in v) return v['double_value'];
  if ('array_value' in v)
    return ((v['array_value'] as { values?: Plain[] }).values ?? []).map((x) => anyValue(x));
  return undefined;
}

const hex = (b64: unknown): string =>
  typeof b64 === 'string' ? Buffer.from(b64, 'base64').toString('hex') : '';

/** One decoded span, flattened: ids in hex, attributes as an object. */
export interface DecodedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startNanos: bigint;
  endNanos: bigint;
  attributes: Record<string, unknown>;
  status: { code: number; message: string };
  flags: number;
  resource: Record<string, unknown>;
  scope: { name: string; version: string };
}

export function decodeTraces(body: Uint8Array): DecodedSpan[] {
  const msg = TraceRequest.toObject(TraceRequest.decode(body), CONVERSION) as {
    resource_spans?: {
      resource?: { attributes?: unknown };
      scope_spans?: { scope?: { name?: string; version?: string }; spans?: Plain[] }[];
    }[];
  };
  const out: DecodedSpan[] = [];
  for (const rs of msg.resource_spans ?? []) {
    const resource = attributeMap(rs.resource?.attributes);
    for (const ss of rs.scope_spans ?? []) {
      for (const s of ss.spans ?? []) {
        const status = (s['status'] ?? {}) as { code?: number; message?: string };
        out.push({
          traceId: hex(s['trace_id']),
          spanId: hex(s['span_id']),
          parentSpanId: hex(s['parent_span_id']),
          name: String(s['name'] ?? ''),
          kind: Number(s['kind'] ?? 0),
          startNanos: BigInt(String(s['start_time_unix_nano'] ?? 0)),
          endNanos: BigInt(String(s['end_time_unix_nano'] ?? 0)),
          attributes: attributeMap(s['attributes']),
          status: { code: status.code ?? 0, message: status.message ?? '' },
          flags: Number(s['flags'] ?? 0),
          resource,
          scope: { name: ss.scope?.name ?? '', version: ss.scope?.version ?? '' },
        });
      }
    }
  }
  return out;
}

/** One decoded metric point: name, kind, attributes and value (number, or histogram fields). */
export interface DecodedPoint {
  metric: string;
  unit: string;
  kind: 'sum' | 'gauge' | 'histogram';
  monotonic: boolean;
  scope: string;
  resource: Record<string, unknown>;
  attributes: Record<string, unknown>;
  value?: number;
  count?: number;
  sum?: number;
  bucketCounts?: number[];
  bounds?: number[];
}

export function decodeMetrics(body: Uint8Array): DecodedPoint[] {
  const msg = MetricsRequest.toObject(MetricsRequest.decode(body), CONVERSION) as {
    resource_metrics?: {
      resource?: { attributes?: unknown };
      scope_metrics?: { scope?: { name?: string }; metrics?: Plain[] }[];
    }[];
  };
  const out: DecodedPoint[] = [];
  for (const rm of msg.resource_metrics ?? []) {
    const resource = attributeMap(rm.resource?.attributes);
    for (const sm of rm.scope_metrics ?? []) {
      for (const m of sm.metrics ?? []) {
        const base = {
          metric: String(m['name']),
          unit: String(m['unit'] ?? ''),
          scope: sm.scope?.name ?? '',
          resource,
        };
        const sum = m['sum'] as { data_points?: Plain[]; is_monotonic?: boolean } | undefined;
        const gauge = m['gauge'] as { data_points?: Plain[] } | undefined;
        const histogram = m['histogram'] as { data_points?: Plain[] } | undefined;
        for (const p of sum?.data_points ?? gauge?.data_points ?? [])
          out.push({
            ...base,
            kind: sum === undefined ? 'gauge' : 'sum',
            monotonic: sum?.is_monotonic === true,
            attributes: attributeMap(p['attributes']),
            value: Number(p['as_double'] ?? p['as_int'] ?? 0),
          });
        for (const p of histogram?.data_points ?? [])
          out.push({
            ...base,
            kind: 'histogram',
            monotonic: false,
            attributes: attributeMap(p['attributes']),
            count: Number(p['count'] ?? 0),
            sum: Number(p['sum'] ?? 0),
            bucketCounts: ((p['bucket_counts'] as string[] | undefined) ?? []).map(Number),
            bounds: (p['explicit_bounds'] as number[] | undefined) ?? [],
          });
      }
    }
  }
  return out;
}

export interface ReceivedExport {
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** The loopback OTLP/HTTP receiver. `waitFor` resolves when a predicate over all exports holds. */
export class OtlpReceiver {
  readonly exports: ReceivedExport[];
  readonly #server: Server;
  readonly #waiters: Set<() => void>;

  private constructor(server: Server, exports: ReceivedExport[], waiters: Set<() => void>) {
    this.#server = server;
    this.exports = exports;
    this.#waiters = waiters;
  }

  /** Plain HTTP, or HTTPS with `tls` (a PEM certificate and key). */
  static async start(tls?: { cert: string; key: string }): Promise<OtlpReceiver> {
    const exports: ReceivedExport[] = [];
    const waiters = new Set<() => void>();
    const listener: RequestListener = (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        exports.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
        res.writeHead(200, { 'content-type': 'application/x-protobuf' });
        res.end();
        for (const w of waiters) w();
      });
    };
    const server = tls === undefined ? createServer(listener) : createTlsServer(tls, listener);
    const receiver = new OtlpReceiver(server, exports, waiters);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  /** `host:port`, as `telemetry_config.endpoint` takes it. */
  get endpoint(): string {
    return `127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  spans(): DecodedSpan[] {
    return this.exports.filter((e) => e.path === '/v1/traces').flatMap((e) => decodeTraces(e.body));
  }

  metrics(): DecodedPoint[] {
    return this.exports.filter((e) => e.path === '/v1/metrics').flatMap((e) => decodeMetrics(e.body));
  }

  /** Resolves with `probe`'s value once it is defined (re-checked on every export), or rejects after `timeoutMs`. */
  waitFor<T>(what: string, probe: () => T | undefined, timeoutMs = 30_000): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const check = (): boolean => {
        const value = probe();
        if (value === undefined) return false;
        cleanup();
        resolve(value);
        return true;
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out waiting for ${what} (${this.exports.length} exports received)`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.#waiters.delete(onExport);
      };
      const onExport = () => void check();
      this.#waiters.add(onExport);
      check();
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }
}
