/**
 * Server spans of a workload's proxy, recorded straight into OTLP protobuf (as ToolHive's telemetry
 * middleware records them): W3C trace context in and out, ParentBased(TraceIdRatio) sampling, and
 * batches exported like the SDK's `BatchSpanProcessor` does (512 spans or `OTEL_BSP_SCHEDULE_DELAY`
 * ms, default 5000; at most `OTEL_BSP_MAX_QUEUE_SIZE` spans waiting, default 2048, beyond which
 * spans are dropped and counted).
 *
 * Why not the OpenTelemetry SDK's tracer: at sampling 1.0 every proxied call is a span, and the
 * SDK's span objects (attribute validation per `setAttribute`, a span processor chain) plus its
 * protobuf serializer (an intermediate object tree per span) cost a proxy ~10 µs of CPU per
 * call where the proxy itself spends ~60 µs (measured with `npm run bench -- ops` and CPU
 * profiles), far from the 85 % throughput target. Here a span is a few numbers until it
 * ends; then it is written once into the batch buffer, attributes and all. The export —
 * HTTP, headers, TLS, retries, timeouts, partial-success handling — is the SDK's
 * (`otlp.ts`), and `test/unit/telemetry/spans.test.ts` checks the bytes decode to what the
 * SDK's own serializer produces for the same span.
 *
 * Field numbers: opentelemetry-proto v1 `trace/v1/trace.proto` and `collector/trace/v1`.
 */
import { randomFillSync } from 'node:crypto';
import type { Logger } from '../../../shared/index.js';
import { LEN, ProtobufWriter, VARINT } from './protobuf-writer.js';
import type { SpanAttributeValue, WorkSpan } from './work-spans.js';

/** `00`–`ff`: a word is written as four table lookups (`toString(16)` and `padStart` cost ~4× more). */
const HEX_BYTE = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
const hex8 = (n: number): string =>
  HEX_BYTE[n >>> 24]! + HEX_BYTE[(n >>> 16) & 0xff]! + HEX_BYTE[(n >>> 8) & 0xff]! + HEX_BYTE[n & 0xff]!;

/** A trace id as four 32-bit words and a span id as two, big-endian. */
export type SpanIdWords = readonly [t0: number, t1: number, t2: number, t3: number, s0: number, s1: number];

/** The ids of a span (its own, or a remote parent's): trace id `t0`–`t3`, span id `s0`–`s1`. */
export class SpanIds {
  readonly t0: number;
  readonly t1: number;
  readonly t2: number;
  readonly t3: number;
  readonly s0: number;
  readonly s1: number;

  constructor(ids: SpanIdWords) {
    this.t0 = ids[0];
    this.t1 = ids[1];
    this.t2 = ids[2];
    this.t3 = ids[3];
    this.s0 = ids[4];
    this.s1 = ids[5];
  }

  get traceId(): string {
    return `${hex8(this.t0)}${hex8(this.t1)}${hex8(this.t2)}${hex8(this.t3)}`;
  }

  get spanId(): string {
    return `${hex8(this.s0)}${hex8(this.s1)}`;
  }
}

/** A remote parent from `traceparent` (+ `tracestate`). */
export class TraceParent extends SpanIds {
  /** W3C trace flags (bit 0: sampled). */
  readonly flags: number;
  readonly state: string | undefined;

  constructor(ids: SpanIdWords, flags: number, state: string | undefined) {
    super(ids);
    this.flags = flags;
    this.state = state;
  }
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * W3C Trace Context `traceparent` (§3.2): version 00 exactly four fields, a later version may
 * add more; `ff`, an all-zero trace id or parent id are invalid (no parent).
 */
export function parseTraceparent(value: unknown, state?: unknown): TraceParent | undefined {
  if (typeof value !== 'string') return undefined;
  const m = TRACEPARENT.exec(value.trim());
  if (m === null) return undefined;
  const [, version, trace, parent, flags, rest] = m as unknown as [
    string,
    string,
    string,
    string,
    string,
    string?,
  ];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (/^0+$/.test(trace) || /^0+$/.test(parent)) return undefined;
  const word = (hex: string, i: number) => Number.parseInt(hex.slice(i * 8, i * 8 + 8), 16);
  // tracestate is passed on as received when it is plausible (Trace Context §3.3: at most 512
  // characters kept).
  const ts =
    typeof state === 'string' && state.length <= 512 && !/[\r\n]/.test(state) ? state.trim() : undefined;
  return new TraceParent(
    [word(trace, 0), word(trace, 1), word(trace, 2), word(trace, 3), word(parent, 0), word(parent, 1)],
    Number.parseInt(flags, 16),
    ts === '' ? undefined : ts,
  );
}

/** One request's span while it is open: ids, sampling, start time. */
export class ServerSpan extends SpanIds {
  readonly sampled: boolean;
  readonly parent: TraceParent | undefined;
  /** Unix ms with µs precision. */
  readonly startMs: number;
  /** An INTERNAL span of this process's own work, whose parent is local (`SpanRecorder.startChild`). */
  readonly internal: boolean;

  constructor(
    ids: SpanIdWords,
    sampled: boolean,
    parent: TraceParent | undefined,
    startMs: number,
    internal = false,
  ) {
    super(ids);
    this.sampled = sampled;
    this.parent = parent;
    this.startMs = startMs;
    this.internal = internal;
  }

  /** `traceparent` for a request this span makes (W3C, version 00). */
  traceparent(): string {
    return `00-${this.traceId}-${this.spanId}-${this.sampled ? '01' : '00'}`;
  }
}

/** What sends one encoded `ExportTraceServiceRequest` (the SDK's OTLP/HTTP transport, `otlp.ts`). */
export type SendSpans = (request: Uint8Array, spans: number) => Promise<void>;

export interface SpanRecorderOptions {
  /** Share of new root traces kept, 0..1. */
  samplingRate: number;
  resource: Readonly<Record<string, string>>;
  scope: { readonly name: string; readonly version?: string };
  send: SendSpans;
  logger: Logger;
  /** Defaults from `OTEL_BSP_*`, else the SDK's (512, 5000 ms, 2048). */
  batchSize?: number;
  delayMs?: number;
  maxQueue?: number;
  /** Unix ms (µs precision); tests freeze it. */
  now?: () => number;
}

/** Status codes as OTLP writes them. */
export const STATUS_UNSET = 0;
export const STATUS_OK = 1;
export const STATUS_ERROR = 2;

/** OTLP SpanKind INTERNAL and SERVER. */
const KIND_INTERNAL = 1;
const KIND_SERVER = 2;
const DROP_LOG_INTERVAL_MS = 30_000;

function envNumber(name: string): number | undefined {
  const n = Number(process.env[name] ?? '');
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

const nowMs = (): number => performance.timeOrigin + performance.now();

export class SpanRecorder {
  readonly #rate: number;
  readonly #send: SendSpans;
  readonly #logger: Logger;
  readonly #batchSize: number;
  readonly #delayMs: number;
  readonly #maxQueue: number;
  readonly #now: () => number;
  /** Resource and scope messages, encoded once. */
  readonly #resource: Buffer;
  readonly #scope: Buffer;
  /** Finished spans waiting for export, each as a `ScopeSpans.spans` field. */
  readonly #batch = new ProtobufWriter(64 * 1024);
  #queued = 0;
  #spanMark = -1;
  #timer: NodeJS.Timeout | undefined;
  #inFlight: Promise<void> | undefined;
  #dropped = 0;
  #lastDropLog = -Infinity;
  #closed = false;
  /** Random 32-bit words for ids, refilled 1 KiB at a time. */
  readonly #ids = new Uint32Array(256);
  #idAt = 256;

  constructor(options: SpanRecorderOptions) {
    this.#rate = options.samplingRate;
    this.#send = options.send;
    this.#logger = options.logger;
    this.#batchSize = options.batchSize ?? envNumber('OTEL_BSP_MAX_EXPORT_BATCH_SIZE') ?? 512;
    this.#delayMs = options.delayMs ?? envNumber('OTEL_BSP_SCHEDULE_DELAY') ?? 5000;
    this.#maxQueue = Math.max(
      this.#batchSize,
      options.maxQueue ?? envNumber('OTEL_BSP_MAX_QUEUE_SIZE') ?? 2048,
    );
    this.#now = options.now ?? nowMs;
    const resource = new ProtobufWriter(256);
    for (const [k, v] of Object.entries(options.resource)) resource.stringAttr(1, k, v);
    this.#resource = resource.take();
    const scope = new ProtobufWriter(128);
    scope.string(1, options.scope.name);
    if (options.scope.version) scope.string(2, options.scope.version);
    this.#scope = scope.take();
  }

  #spanWords(): [number, number] {
    let s0 = this.#word();
    let s1 = this.#word();
    while (s0 === 0 && s1 === 0) {
      s0 = this.#word();
      s1 = this.#word();
    }
    return [s0, s1];
  }

  #word(): number {
    if (this.#idAt >= this.#ids.length) {
      randomFillSync(this.#ids);
      this.#idAt = 0;
    }
    return this.#ids[this.#idAt++] as number;
  }

  /** Opens the span of a request: a new span id, the parent's trace or a new one, the sampling decision. */
  start(parent: TraceParent | undefined): ServerSpan {
    const [s0, s1] = this.#spanWords();
    if (parent !== undefined)
      return new ServerSpan(
        [parent.t0, parent.t1, parent.t2, parent.t3, s0, s1],
        (parent.flags & 1) === 1,
        parent,
        this.#now(),
      );
    const t0 = this.#word();
    const t1 = this.#word();
    const t2 = this.#word();
    const t3 = this.#word() || 1;
    // TraceIdRatio on the trace id's last 32 random bits (ParentBased: a parent decides above).
    const sampled = this.#rate >= 1 || (this.#rate > 0 && t3 / 4294967296 < this.#rate);
    return new ServerSpan([t0, t1, t2, t3, s0, s1], sampled, undefined, this.#now());
  }

  /** Opens an INTERNAL span under `parent`, a span of this process: same trace, same sampling. */
  startChild(parent: ServerSpan): ServerSpan {
    const [s0, s1] = this.#spanWords();
    const local = new TraceParent(
      [parent.t0, parent.t1, parent.t2, parent.t3, parent.s0, parent.s1],
      parent.sampled ? 1 : 0,
      parent.parent?.state,
    );
    return new ServerSpan(
      [parent.t0, parent.t1, parent.t2, parent.t3, s0, s1],
      parent.sampled,
      local,
      this.#now(),
      true,
    );
  }

  /**
   * Begins writing `span`, finished now as `name`: returns the writer for its attributes
   * (`stringAttr(9, ...)` and friends), or undefined when the span is not sampled or the
   * queue is full (dropped). Call `close` after the attributes.
   */
  open(span: ServerSpan, name: string): ProtobufWriter | undefined {
    if (!span.sampled || this.#closed) return undefined;
    if (this.#queued >= this.#maxQueue) {
      this.#drop();
      return undefined;
    }
    const w = this.#batch;
    this.#spanMark = w.begin(2);
    w.words(1, span.t0, span.t1, span.t2, span.t3);
    w.words(2, span.s0, span.s1);
    const parent = span.parent;
    if (parent !== undefined) {
      if (parent.state !== undefined) w.string(3, parent.state);
      w.words(4, parent.s0, parent.s1);
    }
    w.string(5, name);
    w.tag(6, VARINT);
    w.varint(span.internal ? KIND_INTERNAL : KIND_SERVER);
    w.fixed64TimeMs(7, span.startMs);
    w.fixed64TimeMs(8, this.#now());
    return w;
  }

  /** Ends the span `open` began: status and flags; queues it for export. */
  close(span: ServerSpan, status: number, message?: string): void {
    const w = this.#batch;
    const mark = w.begin(15);
    if (message !== undefined && message !== '') w.string(2, message);
    if (status !== STATUS_UNSET) {
      w.tag(3, VARINT);
      w.varint(status);
    }
    w.end(mark);
    // W3C flags | "has is_remote" | the parent is remote (it came with the request).
    const remote = span.parent !== undefined && !span.internal;
    w.fixed32(16, (span.sampled ? 1 : 0) | 0x100 | (remote ? 0x200 : 0));
    w.end(this.#spanMark);
    this.#queued++;
    if (this.#queued >= this.#batchSize) void this.#flush();
    else if (this.#timer === undefined) {
      this.#timer = setTimeout(() => void this.#flush(), this.#delayMs);
      this.#timer.unref();
    }
  }

  #drop(): void {
    this.#dropped++;
    const now = Date.now();
    if (now - this.#lastDropLog < DROP_LOG_INTERVAL_MS) return;
    this.#lastDropLog = now;
    this.#logger.warn(
      { dropped: this.#dropped },
      'telemetry: spans dropped, the export queue is full (the collector is slow or unreachable)',
    );
  }

  /** Sends what is queued; one export at a time (later spans wait in the queue). */
  #flush(): Promise<void> {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#inFlight !== undefined || this.#queued === 0) return this.#inFlight ?? Promise.resolve();
    const spans = this.#queued;
    const request = this.#frame(this.#batch.take());
    this.#queued = 0;
    this.#inFlight = this.#send(request, spans)
      .catch((err: unknown) =>
        this.#logger.warn(
          { err: err instanceof Error ? err.message : String(err), spans },
          'telemetry: span export failed',
        ),
      )
      .finally(() => {
        this.#inFlight = undefined;
        if (this.#queued >= this.#batchSize || (this.#closed && this.#queued > 0)) void this.#flush();
        else if (this.#queued > 0 && this.#timer === undefined) {
          this.#timer = setTimeout(() => void this.#flush(), this.#delayMs);
          this.#timer.unref();
        }
      });
    return this.#inFlight;
  }

  /** `ExportTraceServiceRequest { ResourceSpans { Resource, ScopeSpans { scope, spans } } }`. */
  #frame(spans: Buffer): Buffer {
    const head = new ProtobufWriter(64 + this.#resource.length + this.#scope.length);
    const size = (n: number) => {
      let bytes = 1;
      for (let v = n; v >= 0x80; v = Math.floor(v / 0x80)) bytes++;
      return bytes;
    };
    const scopeSpans = 1 + size(this.#scope.length) + this.#scope.length + spans.length;
    const resourceSpans =
      1 + size(this.#resource.length) + this.#resource.length + 1 + size(scopeSpans) + scopeSpans;
    head.tag(1, LEN);
    head.varint(resourceSpans);
    head.bytes(1, this.#resource);
    head.tag(2, LEN);
    head.varint(scopeSpans);
    head.bytes(1, this.#scope);
    return Buffer.concat([head.buf.subarray(0, head.pos), spans]);
  }

  /** Spans dropped because the queue was full. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Exports everything queued (and waits for it). */
  async forceFlush(): Promise<void> {
    while (this.#queued > 0 || this.#inFlight !== undefined) {
      if (this.#inFlight !== undefined) await this.#inFlight;
      else await this.#flush();
    }
  }

  /** Stops recording and exports what is queued. Idempotent. */
  async shutdown(): Promise<void> {
    this.#closed = true;
    await this.forceFlush();
  }
}

/**
 * A `WorkSpan` recorded by a `SpanRecorder`: the request's SERVER span (which the telemetry
 * stage ends itself: `run` only opens children of it) or an INTERNAL child span.
 */
export class RecordedWorkSpan implements WorkSpan {
  readonly #recorder: SpanRecorder;
  readonly #span: ServerSpan;
  #attributes: Map<string, SpanAttributeValue> | undefined;
  #failure: string | undefined;

  constructor(recorder: SpanRecorder, span: ServerSpan) {
    this.#recorder = recorder;
    this.#span = span;
  }

  get traceparent(): string {
    return this.#span.traceparent();
  }

  set(key: string, value: SpanAttributeValue): void {
    (this.#attributes ??= new Map()).set(key, value);
  }

  fail(message: string): void {
    this.#failure = message;
  }

  async run<T>(
    name: string,
    attributes: Readonly<Record<string, SpanAttributeValue>>,
    work: (span: WorkSpan) => Promise<T>,
  ): Promise<T> {
    const child = new RecordedWorkSpan(this.#recorder, this.#recorder.startChild(this.#span));
    for (const [key, value] of Object.entries(attributes)) child.set(key, value);
    try {
      const value = await work(child);
      child.#end(name, undefined);
      return value;
    } catch (err) {
      child.#end(name, err instanceof Error ? err.message : String(err));
      throw err;
    }
  }

  /** Writes the span (sampled ones only): its attributes, then Ok or Error with the failure. */
  #end(name: string, error: string | undefined): void {
    const w = this.#recorder.open(this.#span, name);
    if (w === undefined) return;
    for (const [key, value] of this.#attributes ?? []) {
      if (typeof value === 'string') w.stringAttr(9, key, value);
      else if (typeof value === 'boolean') w.boolAttr(9, key, value);
      else if (Number.isSafeInteger(value)) w.intAttr(9, key, value);
      else w.doubleAttr(9, key, value);
    }
    const failure = error ?? this.#failure;
    if (failure === undefined) this.#recorder.close(this.#span, STATUS_OK);
    else this.#recorder.close(this.#span, STATUS_ERROR, failure);
  }
}
