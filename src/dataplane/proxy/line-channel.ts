/**
 * Newline-delimited JSON-RPC over a stdio pair (MCP stdio transport: one message per line,
 * no embedded newlines). Reading never pauses for a slow client: lines are handed over as
 * they arrive; writing reports how much is buffered so callers can refuse work instead of
 * growing memory without bound.
 *
 * Writes are coalesced: the lines sent during one turn of the event loop (under load, the
 * requests of several clients read in the same poll phase) go to the server in one `write`
 * at the end of that turn (`setImmediate`, which runs right after the poll phase, so a lone
 * request waits for nothing). A pipe write is a system call that also wakes the server, so
 * one per turn instead of one per message is measurably cheaper for both processes
 * (`npm run bench -- cpu`).
 */
import type { Readable, Writable } from 'node:stream';
import { errorMessage, INTERNAL_ERROR, type JsonRpcId, type JsonRpcMessage } from '../../protocol/index.js';

/** Characters kept of each end of a dropped line: where a response's `id` is written. */
const EDGE = 256;

/**
 * The answer a request gets when the server's message was larger than the proxy reads of
 * one message (`maxUpstreamMessageBytes`: a stdio line here, a JSON body or SSE event in
 * transparent mode): a JSON-RPC internal error naming the limit, never the unread answer.
 */
export function oversizedAnswer(id: JsonRpcId, max: number): string {
  const message =
    `The server's answer is larger than ${max} bytes, the most the proxy reads of one ` +
    'message (maxUpstreamMessageBytes); it was not relayed';
  return errorMessage(id, INTERNAL_ERROR, message, { maxUpstreamMessageBytes: max });
}

/** What a channel tells the bridge: each message from the server, and its end. */
export interface ChannelHandlers {
  /** One message from the server (a line of its stdout, without the newline). */
  onLine(line: string): void;
  /**
   * A line longer than the limit was dropped (reported once it ended): its length, and its
   * first and last characters, where a response names its `id`.
   */
  onOversize(length: number, edges: { readonly head: string; readonly tail: string }): void;
  /** The server's stdout ended or a stream failed; called once. */
  onClosed(reason: string): void;
}

/** How the stdio bridge sends to its server: `LineChannel` (pipes) or `InProcessChannel`. */
export interface ServerChannel {
  /** Sends one message given as its JSON text; false when the channel is closed. */
  send(json: string): boolean;
  /**
   * Sends one message object, which is the channel's from then on: the caller does not touch it
   * again (an in-process server takes it as it is, and may change it). False when closed.
   */
  sendMessage(message: JsonRpcMessage): boolean;
  /** What is waiting to be written to the server (UTF-16 units, or bytes of a pipe). */
  readonly buffered: number;
  /** Stops delivering the server's messages; what was sent before still goes to the server. */
  detach(): void;
}

/** The characters kept of each end of a message too large to relay (where its `id` is). */
export function messageEdges(text: string): { readonly head: string; readonly tail: string } {
  return { head: text.slice(0, EDGE), tail: text.slice(-EDGE) };
}

export class LineChannel implements ServerChannel {
  #tail = '';
  #skipping = false;
  /** Of the line being skipped: its length so far, its first and last `EDGE` characters. */
  #skipped = { length: 0, head: '', tail: '' };
  #ended = false;
  /** Lines sent this turn, not yet written (each ends with a newline). */
  #pending = '';
  #flushScheduled = false;
  readonly #flush = (): void => {
    this.#flushScheduled = false;
    const text = this.#pending;
    this.#pending = '';
    if (text === '' || this.#ended || this.#stdin.destroyed || this.#stdin.writableEnded) return;
    this.#stdin.write(text);
  };
  readonly #onData = (chunk: string): void => this.#consume(chunk);
  readonly #onEnd = (): void => this.#finish('server output ended');
  readonly #onError = (err: Error): void => this.#finish(`server stream failed: ${err.message}`);

  readonly #stdin: Writable;
  readonly #stdout: Readable;
  readonly #maxLine: number;
  readonly #handlers: ChannelHandlers;

  constructor(stdin: Writable, stdout: Readable, maxLine: number, handlers: ChannelHandlers) {
    this.#stdin = stdin;
    this.#stdout = stdout;
    this.#maxLine = maxLine;
    this.#handlers = handlers;
    stdout.setEncoding('utf8');
    stdout.on('data', this.#onData);
    stdout.on('end', this.#onEnd);
    stdout.on('close', this.#onEnd);
    stdout.on('error', this.#onError);
    stdin.on('error', this.#onError);
  }

  get closed(): boolean {
    return this.#ended;
  }

  /** Bytes (UTF-16 units for the lines of this turn) waiting to be written to the server. */
  get buffered(): number {
    return this.#stdin.writableLength + this.#pending.length;
  }

  /** Writes one message (at the end of this turn, with the others); false when the channel is closed. */
  send(json: string): boolean {
    if (this.#ended || this.#stdin.destroyed || this.#stdin.writableEnded) return false;
    this.#pending += json + '\n';
    if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      setImmediate(this.#flush);
    }
    return true;
  }

  sendMessage(message: JsonRpcMessage): boolean {
    return this.send(JSON.stringify(message));
  }

  /** Detaches from the streams without closing them (the runner owns the process). */
  detach(): void {
    if (this.#ended) return;
    // What was sent before goes out, as it would have without coalescing.
    this.#flush();
    this.#ended = true;
    this.#stdout.off('data', this.#onData);
    this.#stdout.off('end', this.#onEnd);
    this.#stdout.off('close', this.#onEnd);
    // Keep a no-op error listener: a late EPIPE must not crash the process.
    this.#stdout.off('error', this.#onError);
    this.#stdout.on('error', noop);
    this.#stdin.off('error', this.#onError);
    this.#stdin.on('error', noop);
  }

  #finish(reason: string): void {
    if (this.#ended) return;
    this.detach();
    this.#handlers.onClosed(reason);
  }

  #consume(chunk: string): void {
    let start = 0;
    let nl = chunk.indexOf('\n');
    if (nl === -1) {
      this.#append(chunk);
      return;
    }
    while (nl !== -1) {
      const piece = chunk.slice(start, nl);
      if (this.#skipping) {
        this.#skipping = false;
        this.#skip(piece);
        const { length, head, tail } = this.#skipped;
        this.#handlers.onOversize(length, { head, tail: tail.endsWith('\r') ? tail.slice(0, -1) : tail });
      } else if (this.#tail.length > 0) {
        const line = this.#tail + piece;
        this.#tail = '';
        this.#emit(line);
      } else {
        this.#emit(piece);
      }
      if (this.#ended) return;
      start = nl + 1;
      nl = chunk.indexOf('\n', start);
    }
    if (start < chunk.length) this.#append(chunk.slice(start));
  }

  #append(part: string): void {
    if (this.#skipping) {
      this.#skip(part);
      return;
    }
    if (this.#tail.length + part.length > this.#maxLine) {
      const tail = this.#tail;
      this.#skipped = { length: tail.length, head: tail.slice(0, EDGE), tail: tail.slice(-EDGE) };
      this.#tail = '';
      this.#skipping = true;
      this.#skip(part);
      return;
    }
    this.#tail += part;
  }

  /** Counts `part` of a line being dropped, keeping only its ends. */
  #skip(part: string): void {
    const s = this.#skipped;
    s.length += part.length;
    if (s.head.length < EDGE) s.head += part.slice(0, EDGE - s.head.length);
    s.tail = part.length >= EDGE ? part.slice(-EDGE) : (s.tail + part).slice(-EDGE);
  }

  #emit(line: string): void {
    // Tolerate CRLF and blank lines from servers that print them.
    const text = line.charCodeAt(line.length - 1) === 13 ? line.slice(0, -1) : line;
    if (text.length === 0) return;
    if (text.length > this.#maxLine) {
      this.#handlers.onOversize(text.length, messageEdges(text));
      return;
    }
    this.#handlers.onLine(text);
  }
}

function noop(): void {}
