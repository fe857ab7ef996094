/**
 * Metric instruments with cumulative aggregation kept in plain objects, read by the
 * Prometheus text serializer (`prometheus.ts`) and, for OTLP, by a bridge into the
 * OpenTelemetry SDK's metric reader (`otlp.ts`). No OpenTelemetry code is loaded here:
 * a workload with only `/metrics`, and `skep serve`, use this alone.
 *
 * Why not the SDK's instruments on the request path: every `add`/`record` there hashes its
 * attribute object (sorted keys, JSON) to find the series — ~4 µs per request for the
 * proxy's two instruments (measured), where the whole proxy spends ~60 µs on a call. Here a
 * caller looks a series up once per distinct label set (`Instrument.series`) and keeps the
 * returned cell; recording is then `cell.value += 1` or `cell.record(seconds)`.
 *
 * Cardinality: label values the client controls (tool names, resource ids) could otherwise
 * grow the series without bound. Each instrument holds at most `MAX_SERIES` series; later
 * label sets land in one overflow series labelled `otel.metric.overflow="true"` (the
 * OpenTelemetry SDK's cardinality-limit behaviour and default limit). The reference has no
 * limit.
 */

export type Labels = Readonly<Record<string, string>>;

export interface MetricScope {
  readonly name: string;
  readonly version?: string;
}

export type MetricKind = 'counter' | 'updown' | 'gauge' | 'histogram';

/** One series of a counter, up-down counter or gauge. */
export interface NumberPoint {
  readonly labels: Labels;
  readonly value: number;
  /** Series start, ms since the epoch (OTLP `start_time_unix_nano` of a cumulative series). */
  readonly startMs: number;
}

/** One series of a histogram; `counts` has one more entry than the family's boundaries (+Inf). */
export interface HistogramPoint {
  readonly labels: Labels;
  readonly counts: readonly number[];
  readonly sum: number;
  readonly count: number;
  /** Smallest and largest value recorded, when known. */
  readonly min?: number;
  readonly max?: number;
  readonly startMs: number;
}

export interface MetricFamily {
  /** The OpenTelemetry instrument name (`toolhive_mcp_requests`, `mcp.server.operation.duration`). */
  readonly name: string;
  readonly description: string;
  /** UCUM unit (`s`, `By`, `1`) or ''. */
  readonly unit: string;
  readonly kind: MetricKind;
  /** The instrumentation scope (meter name); undefined for Skep's own process metrics. */
  readonly scope: MetricScope | undefined;
  /** Histogram bucket upper bounds. */
  readonly boundaries?: readonly number[] | undefined;
  readonly points: readonly (NumberPoint | HistogramPoint)[];
}

export const MAX_SERIES = 2000;
const OVERFLOW: Labels = Object.freeze({ 'otel.metric.overflow': 'true' });

/** A counter's, up-down counter's or gauge's series. */
export class NumberCell {
  value = 0;
  readonly labels: Labels;
  readonly startMs: number;

  constructor(labels: Labels, startMs: number) {
    this.labels = labels;
    this.startMs = startMs;
  }
}

/** A histogram's series. */
export class HistogramCell {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  min = Infinity;
  max = -Infinity;
  readonly labels: Labels;
  readonly startMs: number;
  readonly #bounds: readonly number[];

  constructor(labels: Labels, startMs: number, bounds: readonly number[]) {
    this.labels = labels;
    this.startMs = startMs;
    this.#bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
  }

  record(value: number): void {
    const bounds = this.#bounds;
    let i = 0;
    // Prometheus `le` buckets: a value equal to a bound belongs to that bound's bucket.
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    this.counts[i] = (this.counts[i] as number) + 1;
    this.sum += value;
    this.count++;
    if (value < this.min) this.min = value;
    if (value > this.max) this.max = value;
  }
}

/** The key of a label set, independent of the order its keys were written in. */
function canonical(labels: Labels): string {
  const keys = Object.keys(labels).sort();
  let out = '';
  for (const k of keys) out += `${k}\u0001${labels[k]}\u0002`;
  return out;
}

export class Instrument<C extends NumberCell | HistogramCell> {
  readonly name: string;
  readonly description: string;
  readonly unit: string;
  readonly kind: MetricKind;
  readonly scope: MetricScope | undefined;
  readonly boundaries: readonly number[] | undefined;
  readonly #cells = new Map<string, C>();
  readonly #make: (labels: Labels) => C;
  #overflow: C | undefined;

  constructor(
    init: {
      name: string;
      description: string;
      unit?: string;
      kind: MetricKind;
      scope?: MetricScope | undefined;
      boundaries?: readonly number[];
    },
    make: (labels: Labels) => C,
  ) {
    this.name = init.name;
    this.description = init.description;
    this.unit = init.unit ?? '';
    this.kind = init.kind;
    this.scope = init.scope;
    this.boundaries = init.boundaries;
    this.#make = make;
  }

  /** The series of `labels` (created on first use; the overflow series past `MAX_SERIES`). Keep it. */
  series(labels: Labels): C {
    const key = canonical(labels);
    let cell = this.#cells.get(key);
    if (cell !== undefined) return cell;
    if (this.#cells.size >= MAX_SERIES) {
      this.#overflow ??= this.#make(OVERFLOW);
      return this.#overflow;
    }
    cell = this.#make(Object.freeze(Object.assign({}, labels)));
    this.#cells.set(key, cell);
    return cell;
  }

  get size(): number {
    return this.#cells.size;
  }

  snapshot(): MetricFamily {
    const cells = [...this.#cells.values()];
    if (this.#overflow !== undefined) cells.push(this.#overflow);
    return {
      name: this.name,
      description: this.description,
      unit: this.unit,
      kind: this.kind,
      scope: this.scope,
      boundaries: this.boundaries,
      points: cells.map((c) =>
        c instanceof HistogramCell
          ? {
              labels: c.labels,
              counts: [...c.counts],
              sum: c.sum,
              count: c.count,
              min: c.min,
              max: c.max,
              startMs: c.startMs,
            }
          : { labels: c.labels, value: c.value, startMs: c.startMs },
      ),
    };
  }
}

/** Families computed when metrics are read (rate-limit counters, workloads by status, process). */
export type MetricCollector = () => readonly MetricFamily[];

/** A registry's instruments of one scope, from `MetricRegistry.meter`; units default as there. */
export interface Meter {
  counter(name: string, description: string, unit?: string): Instrument<NumberCell>;
  upDownCounter(name: string, description: string, unit?: string): Instrument<NumberCell>;
  histogram(
    name: string,
    description: string,
    boundaries: readonly number[],
    unit?: string,
  ): Instrument<HistogramCell>;
}

export class MetricRegistry {
  readonly #instruments: Instrument<NumberCell | HistogramCell>[] = [];
  readonly #collectors: MetricCollector[] = [];
  readonly #now: () => number;

  constructor(options: { now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  counter(name: string, description: string, scope?: MetricScope, unit = ''): Instrument<NumberCell> {
    return this.#add(
      new Instrument<NumberCell>(
        { name, description, unit, kind: 'counter', scope },
        (labels) => new NumberCell(labels, this.#now()),
      ),
    );
  }

  upDownCounter(name: string, description: string, scope?: MetricScope, unit = ''): Instrument<NumberCell> {
    return this.#add(
      new Instrument<NumberCell>(
        { name, description, unit, kind: 'updown', scope },
        (labels) => new NumberCell(labels, this.#now()),
      ),
    );
  }

  histogram(
    name: string,
    description: string,
    boundaries: readonly number[],
    scope?: MetricScope,
    unit = 's',
  ): Instrument<HistogramCell> {
    const bounds = Object.freeze([...boundaries]);
    return this.#add(
      new Instrument<HistogramCell>(
        { name, description, unit, kind: 'histogram', scope, boundaries: bounds },
        (labels) => new HistogramCell(labels, this.#now(), bounds),
      ),
    );
  }

  /** The instruments of one instrumentation scope (an OpenTelemetry meter). */
  meter(scope: MetricScope): Meter {
    return {
      counter: (name, description, unit) => this.counter(name, description, scope, unit),
      upDownCounter: (name, description, unit) => this.upDownCounter(name, description, scope, unit),
      histogram: (name, description, boundaries, unit) =>
        this.histogram(name, description, boundaries, scope, unit),
    };
  }

  /** Adds families computed at read time. */
  collect(collector: MetricCollector): void {
    this.#collectors.push(collector);
  }

  /** Every family with at least one series, instruments first, in registration order. */
  snapshot(): MetricFamily[] {
    const out: MetricFamily[] = [];
    for (const i of this.#instruments) if (i.size > 0) out.push(i.snapshot());
    for (const c of this.#collectors) for (const f of c()) if (f.points.length > 0) out.push(f);
    return out;
  }

  #add<C extends NumberCell | HistogramCell>(instrument: Instrument<C>): Instrument<C> {
    this.#instruments.push(instrument);
    return instrument;
  }
}

/**
 * A client-controlled label value cut to `maxBytes` of UTF-8 on a character boundary, ending in
 * `...` when cut (ToolHive cuts at 128 bytes; here the result, `...` included, is at most
 * `maxBytes`, so a label never exceeds the limit).
 */
export function cutLabel(value: string, maxBytes = 128): string {
  // Fast path: no string of at most maxBytes/3 UTF-16 units can exceed maxBytes of UTF-8.
  if (value.length * 3 <= maxBytes) return value;
  if (Buffer.byteLength(value, 'utf8') <= maxBytes) return value;
  const budget = maxBytes - 3;
  let bytes = 0;
  let end = 0;
  while (end < value.length) {
    const code = value.codePointAt(end) as number;
    const size = code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    if (bytes + size > budget) break;
    bytes += size;
    end += code >= 0x10000 ? 2 : 1;
  }
  return `${value.slice(0, end)}...`;
}

/** The workload process's own metrics (the reference exports Go's runtime and process collectors). */
export function processFamilies(startMs: number): MetricFamily[] {
  const mem = process.memoryUsage();
  const cpu = process.cpuUsage();
  const point = (value: number): NumberPoint => ({ labels: {}, value, startMs });
  const gauge = (name: string, description: string, value: number, unit = ''): MetricFamily => ({
    name,
    description,
    unit,
    kind: 'gauge',
    scope: undefined,
    points: [point(value)],
  });
  return [
    {
      name: 'process_cpu_seconds_total',
      description: 'Total user and system CPU time spent in seconds.',
      unit: '',
      kind: 'counter',
      scope: undefined,
      points: [point((cpu.user + cpu.system) / 1e6)],
    },
    gauge('process_resident_memory_bytes', 'Resident memory size in bytes.', mem.rss),
    gauge(
      'process_start_time_seconds',
      'Start time of the process since unix epoch in seconds.',
      Math.round(Date.now() / 1000 - process.uptime()),
    ),
    gauge('nodejs_heap_size_used_bytes', 'V8 heap used, bytes.', mem.heapUsed),
    gauge('nodejs_heap_size_total_bytes', 'V8 heap allocated, bytes.', mem.heapTotal),
  ];
}
