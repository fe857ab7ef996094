/**
 * Where messages to one client go. An SSE outlet wraps a long-lived `text/event-stream`
 * response (the streamable-HTTP GET stream or the legacy `/sse` stream); a POST exchange is
 * the answer to one streamable-HTTP POST, sent as JSON when the response is all there is, or
 * upgraded to SSE when interim messages (progress, server requests, logs) come first.
 *
 * Backpressure: writes never wait. A client that stops reading lets its socket buffer grow;
 * past `maxBuffer` bytes the stream is cut, so one slow client costs bounded memory and never
 * delays anyone else.
 */
import type { ServerResponse } from 'node:http';
import type { Logger } from '../../shared/index.js';

export const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
} as const;

/** Receives the messages that belong to one client request. */
export interface ReplyTarget {
  /** A message before the response (progress, server request, log); false if it cannot go here. */
  interim(text: string): boolean;
  /** The response; ends the exchange. */
  final(text: string): void;
  /** True while the target can still deliver. */
  readonly open: boolean;
  /** Set when the target applies the tools policy to a `tools/list` answer itself (`HookedTarget`). */
  readonly appliesToolPolicy?: boolean;
}

/**
 * A reply target in front of another one that changes only the response: interim messages and
 * `open` pass through. A subclass implements `final` and hands its result on with `forward`.
 */
export abstract class ForwardingTarget implements ReplyTarget {
  readonly #inner: ReplyTarget;

  constructor(inner: ReplyTarget) {
    this.#inner = inner;
  }

  get open(): boolean {
    return this.#inner.open;
  }

  interim(text: string): boolean {
    return this.#inner.interim(text);
  }

  abstract final(text: string): void;

  protected forward(text: string): void {
    this.#inner.final(text);
  }
}

export interface Outlet {
  send(text: string): boolean;
  readonly open: boolean;
  close(): void;
}

/**
 * The recent events of one SSE stream for `Last-Event-ID` replay: numbered from 1, ids
 * `<prefix><seq>`, the last `keep` kept as ready-to-write frames.
 */
export class EventLog {
  #next = 1;
  readonly #events: Array<{ seq: number; frame: string }> = [];

  readonly #keep: number;
  readonly #prefix: string;

  constructor(keep: number, prefix = '') {
    this.#keep = keep;
    this.#prefix = prefix;
  }

  /** Numbers `text`, keeps it, and returns its frame. */
  append(text: string): string {
    const seq = this.#next++;
    const frame = `id: ${this.#prefix}${seq}\nevent: message\ndata: ${text}\n\n`;
    this.#events.push({ seq, frame });
    if (this.#events.length > this.#keep) this.#events.shift();
    return frame;
  }

  /** Kept frames after `seq`, and whether they are all the events after it (none dropped). */
  after(seq: number): { frames: string[]; complete: boolean } {
    const first = this.#events[0]?.seq ?? this.#next;
    return {
      frames: this.#events.filter((e) => e.seq > seq).map((e) => e.frame),
      complete: seq < this.#next && first <= seq + 1,
    };
  }
}

export class SseOutlet implements Outlet {
  #ended = false;
  /** Recent events for `Last-Event-ID` replay (streamable HTTP GET stream only). */
  readonly log: EventLog | undefined;

  readonly #res: ServerResponse;
  readonly #maxBuffer: number;
  readonly #onClose: () => void;

  constructor(
    res: ServerResponse,
    maxBuffer: number,
    keep: number,
    onClose: () => void,
    previous?: SseOutlet,
  ) {
    this.#res = res;
    this.#maxBuffer = maxBuffer;
    this.#onClose = onClose;
    // A reconnected GET stream continues the event numbering and history of the old one.
    this.log = previous?.log ?? (keep > 0 ? new EventLog(keep) : undefined);
    res.on('close', () => this.#markClosed());
  }

  /** Re-sends the events after `lastId` with their original ids, when none of them was dropped. */
  replayAfter(lastId: number): void {
    const missed = this.log?.after(lastId);
    if (this.#ended || missed === undefined || !missed.complete) return;
    for (const frame of missed.frames) this.#res.write(frame);
  }

  get open(): boolean {
    return !this.#ended;
  }

  /** Writes a raw SSE event (e.g. the legacy `endpoint` event). */
  writeEvent(event: string, data: string): void {
    if (this.#ended) return;
    this.#res.write(`event: ${event}\ndata: ${data}\n\n`);
  }

  send(text: string): boolean {
    if (this.#ended) return false;
    this.#res.write(this.log === undefined ? `event: message\ndata: ${text}\n\n` : this.log.append(text));
    if (this.#res.writableLength > this.#maxBuffer) {
      // The client stopped reading: cut it loose rather than buffer without bound.
      this.#res.destroy();
      this.#markClosed();
    }
    return true;
  }

  close(): void {
    if (this.#ended) return;
    this.#res.end();
    this.#markClosed();
  }

  #markClosed(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#onClose();
  }
}

/** Where a session keeps its resumable POST streams (`Session` implements it). */
export interface StreamRegistry {
  /** Registers a stream that turned into SSE; returns its number, unique in the session. */
  addStream(stream: PostExchange): number;
  removeStream(no: number): void;
}

export interface ResumeOptions {
  streams: StreamRegistry;
  /** Events kept for replay. */
  keep: number;
  /** How long a dropped stream waits for the client to resume it, ms. */
  graceMs: number;
  /** Told (debug) when a dropped stream was not resumed in time and its response is lost. */
  logger: Logger;
}

/**
 * The answer to one streamable-HTTP POST holding at least one request.
 *
 * Resumability (with `resumable`): once the answer turns into an SSE stream, every event carries
 * an id `<stream>-<seq>` and the last `keep` events are kept. If the connection drops before
 * the response, the exchange goes on collecting the server's messages for `graceMs`; a
 * `GET` with `Last-Event-ID` (`resume()`) replays what the client missed and carries the rest
 * of the stream, ending it after the response, as MCP 2025-11-25 "Resumability and
 * Redelivery" describes. A client that does not come back loses the response, as before.
 */
export class PostExchange implements ReplyTarget {
  #state: 'idle' | 'sse' | 'detached' | 'done' = 'idle';
  #sink: ServerResponse;
  #streamNo = 0;
  /** Numbers and keeps the events once the answer is a resumable stream. */
  #log: EventLog | undefined;
  #finished = false;
  #graceTimer: NodeJS.Timeout | undefined;

  readonly #acceptsSse: boolean;
  readonly #headers: Record<string, string>;
  readonly #maxBuffer: number;
  readonly #resumable: ResumeOptions | undefined;

  constructor(
    res: ServerResponse,
    acceptsSse: boolean,
    headers: Record<string, string>,
    maxBuffer: number,
    resumable?: ResumeOptions,
  ) {
    this.#acceptsSse = acceptsSse;
    this.#headers = headers;
    this.#maxBuffer = maxBuffer;
    this.#resumable = resumable;
    this.#sink = res;
    res.on('close', () => this.#sinkClosed(res));
  }

  /** Open while the response is still to come, connected or waiting to be resumed. */
  get open(): boolean {
    return this.#state !== 'done';
  }

  interim(text: string): boolean {
    if (this.#state === 'done' || !this.#acceptsSse) return false;
    if (this.#state === 'idle') {
      this.#sink.writeHead(200, Object.assign({}, this.#headers, SSE_HEADERS));
      this.#state = 'sse';
      if (this.#resumable !== undefined) {
        this.#streamNo = this.#resumable.streams.addStream(this);
        this.#log = new EventLog(this.#resumable.keep, `${this.#streamNo}-`);
      }
    }
    this.#emit(text);
    return true;
  }

  final(text: string): void {
    if (this.#state === 'done') return;
    if (this.#state === 'idle') {
      this.#headers['content-type'] = 'application/json';
      this.#headers['content-length'] = String(Buffer.byteLength(text));
      this.#sink.writeHead(200, this.#headers);
      this.#sink.end(text);
      this.#state = 'done';
      return;
    }
    this.#finished = true;
    this.#emit(text);
    if (this.#state === 'sse') this.#finish();
  }

  /**
   * Carries the rest of this stream on `res` (a GET with `Last-Event-ID: <stream>-<seq>`):
   * the kept events after `seq` first, then whatever comes.
   */
  resume(res: ServerResponse, afterSeq: number): void {
    if (this.#graceTimer !== undefined) clearTimeout(this.#graceTimer);
    this.#graceTimer = undefined;
    if (this.#state === 'sse') this.#sink.destroy();
    this.#sink = res;
    this.#state = 'sse';
    res.writeHead(200, SSE_HEADERS);
    // What is still kept goes out, even if older events were dropped: the response is what counts.
    for (const frame of this.#log?.after(afterSeq).frames ?? []) res.write(frame);
    res.on('close', () => this.#sinkClosed(res));
    if (this.#finished) this.#finish();
  }

  /** Gives up the stream (its session ended). */
  abandon(): void {
    if (this.#state === 'done') return;
    if (this.#state === 'sse') this.#sink.destroy();
    this.#finish();
  }

  #emit(text: string): void {
    const frame = this.#log === undefined ? `event: message\ndata: ${text}\n\n` : this.#log.append(text);
    if (this.#state !== 'sse' || this.#sink.destroyed) return;
    this.#sink.write(frame);
    // The client stopped reading: cut it loose rather than buffer without bound (it may resume).
    if (this.#sink.writableLength > this.#maxBuffer) this.#sink.destroy();
  }

  /** Ends the connected stream after the response and forgets it. */
  #finish(): void {
    if (this.#state === 'sse' && !this.#sink.writableEnded) this.#sink.end();
    this.#state = 'done';
    if (this.#graceTimer !== undefined) clearTimeout(this.#graceTimer);
    this.#graceTimer = undefined;
    if (this.#streamNo > 0) this.#resumable?.streams.removeStream(this.#streamNo);
  }

  #sinkClosed(res: ServerResponse): void {
    if (res !== this.#sink || this.#state === 'done') return;
    if (this.#state === 'sse' && this.#streamNo > 0 && this.#resumable !== undefined && !res.writableEnded) {
      // Dropped before the response: keep collecting for a while, for a resume.
      this.#state = 'detached';
      const { graceMs, logger } = this.#resumable;
      this.#graceTimer = setTimeout(() => {
        logger.debug(
          { stream: this.#streamNo, graceMs },
          'a dropped POST stream was not resumed in time; it is given up',
        );
        this.#finish();
      }, graceMs);
      this.#graceTimer.unref();
      return;
    }
    this.#state = 'done';
    if (this.#streamNo > 0) this.#resumable?.streams.removeStream(this.#streamNo);
  }
}

/** Collects the responses to a batch (2025-03-26 JSON-RPC batching) and answers with one array. */
export class BatchExchange implements ReplyTarget {
  readonly #replies: string[] = [];
  #done = false;

  readonly #expected: number;
  readonly #respond: (body: string) => void;

  constructor(expected: number, respond: (body: string) => void) {
    this.#expected = expected;
    this.#respond = respond;
  }

  get open(): boolean {
    return !this.#done;
  }

  interim(): boolean {
    return false;
  }

  final(text: string): void {
    if (this.#done) return;
    this.#replies.push(text);
    if (this.#replies.length >= this.#expected) {
      this.#done = true;
      this.#respond(`[${this.#replies.join(',')}]`);
    }
  }
}

/** A target that hands the response to a callback (legacy SSE: everything goes on the stream). */
export class OutletTarget implements ReplyTarget {
  readonly #outlet: Outlet;

  constructor(outlet: Outlet) {
    this.#outlet = outlet;
  }
  get open(): boolean {
    return this.#outlet.open;
  }
  interim(text: string): boolean {
    return this.#outlet.send(text);
  }
  final(text: string): void {
    this.#outlet.send(text);
  }
}
