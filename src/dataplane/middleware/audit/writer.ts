/**
 * Writes audit events without ever making a request wait: `write` only queues, and the queue
 * is drained asynchronously in batches (one append per batch, the events of up to `flushMs`
 * together, so that a file append — a round trip through libuv's thread pool that wakes the
 * event loop when it completes — is not paid per request) to the sink — the `logFile`
 * (opened append-only, created with mode 0600) or the runner's log. The queue is bounded;
 * when it is full (the disk cannot keep up) further events are dropped and counted, and the
 * count is reported in a WARN line at most once per `dropReportMs` and at close. A failed
 * write loses its batch and is reported the same way. `close()` writes what is queued first.
 */
import { type FileHandle, open } from 'node:fs/promises';
import { linesOf, type Logger, mayRedact, SkepError } from '../../../shared/index.js';
import { type AuditEvent, auditLine, auditMembers } from './event.js';

/** Where a writer's batches go; `T` is what its queue holds for one event. */
export interface AuditSink<T = AuditEvent> {
  /**
   * What the queue holds for an event, made as the event is queued (without it, the event
   * itself). The file sink encodes the line at once: an event object kept for the batching
   * window would be copied by every young-generation GC that runs meanwhile, and a runner's
   * small semi-spaces run them often (in one process under a runner's V8 flags, audit to a file
   * cost 16.5 µs per request with event objects queued, 8.2 with their lines).
   */
  encode?(event: AuditEvent): T;
  /** Writes a batch in order; a rejection loses the batch (the writer counts and reports it). */
  write(batch: readonly T[]): Promise<void> | void;
  close(): Promise<void> | void;
}

/**
 * Opens `path` for appending, creating it with mode 0600 (events name users and may carry
 * request data); the mode of an existing file is left as its owner set it. A failure is a
 * start error naming the file.
 */
export async function openAuditFile(path: string): Promise<AuditSink<Buffer>> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'a', 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new SkepError('invalid_path', `audit_config.logFile: cannot open ${path} for appending (${code})`, {
      cause: err,
    });
  }
  return {
    // A small Buffer's bytes are outside the JS heap (Node's pool): GCs do not copy them.
    encode: (event) => Buffer.from(auditLine(event), 'utf8'),
    async write(lines) {
      // One write per batch (appendFile would add a promise chain per call); a short write is continued.
      let data = lines.length === 1 ? lines[0]! : Buffer.concat(lines);
      while (data.length > 0) {
        const { bytesWritten } = await handle.write(data, 0, data.length, null);
        data = data.subarray(bytesWritten);
      }
    },
    close: () => handle.close(),
  };
}

/**
 * The runner's log as the sink (no `logFile`): one structured INFO line per event, the
 * event's keys as fields and `msg:"audit_event"`, in the runner log's own line format. A
 * logger that makes its lines apart from writing them (`LineLogger`: the runner's) gets each
 * event's line made as the event is queued, its keys in the wire format's order as in the
 * audit file, kept as bytes off the JS heap as the file sink keeps them, and a batch appended
 * in one write; any other logger is called once per event.
 */
export function loggerSink(logger: Logger): AuditSink<unknown> {
  const out = linesOf(logger);
  if (out === undefined) {
    const each: AuditSink<AuditEvent> = {
      write(events) {
        for (const event of events) logger.info(event, 'audit_event');
      },
      close() {},
    };
    return each;
  }
  const batched: AuditSink<Buffer> = {
    encode(event) {
      // Serialized as the audit file's line is, unless the logger would redact something in it
      // (a `token` in the request data, say): then as any entry is, key by key.
      const members = auditMembers(event);
      const line = mayRedact(members)
        ? out.info(event, 'audit_event')
        : out.infoMembers(members, 'audit_event');
      // Info off: an empty line, as `logger.info` would have written nothing.
      return Buffer.from(line ?? '', 'utf8');
    },
    write(lines) {
      const data = lines.length === 1 ? lines[0]! : Buffer.concat(lines);
      if (data.length > 0) out.write(data);
    },
    close() {},
  };
  return batched;
}

export interface AuditWriterOptions<T> {
  sink: AuditSink<T>;
  /** Where drops and write failures are reported. */
  logger: Logger;
  /** Most events waiting to be written; beyond it events are dropped (default 4096). */
  maxQueued?: number;
  /** Least time between two drop reports, ms (default 5000). */
  dropReportMs?: number;
  /** How long the first event of a batch waits for others before the batch is written, ms (default 5). */
  flushMs?: number;
  now?: () => number;
}

export class AuditWriter<T = unknown> {
  readonly #sink: AuditSink<T>;
  readonly #logger: Logger;
  readonly #maxQueued: number;
  readonly #reportMs: number;
  readonly #flushMs: number;
  readonly #now: () => number;
  readonly #encode: (event: AuditEvent) => T;
  #queue: T[] = [];
  #draining: Promise<void> | undefined;
  /** The batching window of the current drain, ended early by `close`. */
  #window: NodeJS.Timeout | undefined;
  #windowEnds: (() => void) | undefined;
  #closing: Promise<void> | undefined;
  /** Set when the sink is about to close: from then on events are ignored. */
  #sealed = false;
  #dropped = 0;
  #failed = 0;
  #lastError: unknown;
  #droppedTotal = 0;
  #lastReport = Number.NEGATIVE_INFINITY;
  #reportTimer: NodeJS.Timeout | undefined;

  constructor(options: AuditWriterOptions<T>) {
    this.#sink = options.sink;
    this.#encode = options.sink.encode?.bind(options.sink) ?? ((event) => event as T);
    this.#logger = options.logger;
    this.#maxQueued = options.maxQueued ?? 4096;
    this.#reportMs = options.dropReportMs ?? 5000;
    this.#flushMs = options.flushMs ?? 5;
    this.#now = options.now ?? Date.now;
  }

  /** Events lost so far (queue full or write failed). */
  get dropped(): number {
    return this.#droppedTotal;
  }

  /**
   * Queues one event; never blocks and never throws. Events that arrive while `close` is
   * flushing are still written (the last exchanges end as the proxy shuts down).
   */
  write(event: AuditEvent): void {
    if (this.#sealed) return;
    if (this.#queue.length >= this.#maxQueued) {
      this.#dropped++;
      this.#droppedTotal++;
      this.#scheduleReport();
      return;
    }
    this.#queue.push(this.#encode(event));
    this.#draining ??= this.#drain();
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        // Let the requests of the next few milliseconds queue up: one append per batch, also
        // for the events that arrived while the last append was in flight, which would
        // otherwise go out as soon as it completed, a few at a time. Closing does not wait.
        if (this.#closing === undefined)
          await new Promise<void>((resolve) => {
            this.#windowEnds = resolve;
            this.#window = setTimeout(resolve, this.#flushMs);
          });
        this.#window = undefined;
        this.#windowEnds = undefined;
        const batch = this.#queue;
        this.#queue = [];
        try {
          await this.#sink.write(batch);
        } catch (err) {
          this.#failed += batch.length;
          this.#droppedTotal += batch.length;
          this.#lastError = err;
          this.#scheduleReport();
        }
      }
    } finally {
      this.#draining = undefined;
    }
  }

  #scheduleReport(): void {
    if (this.#reportTimer !== undefined || this.#closing !== undefined) return;
    const wait = this.#lastReport + this.#reportMs - this.#now();
    if (wait <= 0) {
      this.#report();
      return;
    }
    this.#reportTimer = setTimeout(() => {
      this.#reportTimer = undefined;
      this.#report();
    }, wait);
    this.#reportTimer.unref();
  }

  #report(): void {
    if (this.#dropped === 0 && this.#failed === 0) return;
    const fields: Record<string, unknown> = { dropped_total: this.#droppedTotal };
    if (this.#dropped > 0) fields['queue_full'] = this.#dropped;
    if (this.#failed > 0) {
      fields['write_failed'] = this.#failed;
      fields['err'] = this.#lastError;
    }
    this.#logger.warn(
      fields,
      `audit: ${this.#dropped + this.#failed} events lost` +
        (this.#dropped > 0 ? ' (the queue was full: the audit log cannot keep up)' : '') +
        (this.#failed > 0 ? ' (writing the audit log failed)' : ''),
    );
    this.#dropped = 0;
    this.#failed = 0;
    this.#lastReport = this.#now();
  }

  /** Writes what is queued, reports what was lost, releases the sink. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      if (this.#window !== undefined) clearTimeout(this.#window);
      this.#windowEnds?.();
      while (this.#draining !== undefined || this.#queue.length > 0) {
        this.#draining ??= this.#drain();
        await this.#draining;
      }
      this.#sealed = true;
      if (this.#reportTimer !== undefined) clearTimeout(this.#reportTimer);
      this.#reportTimer = undefined;
      this.#report();
      await this.#sink.close();
    })();
    return this.#closing;
  }
}
