/**
 * The one reader of server-sent event streams (HTML Living Standard, "Server-sent events /
 * Parsing an event stream" and "Interpreting an event stream"), on `eventsource-parser`:
 * lines end in CRLF, LF or a lone CR, `data:` lines of one event are joined with LF, lines
 * that start with a colon are comments, and an event ends at a blank line. An event still
 * open when the stream ends is dropped, as the standard says.
 *
 * `SseDecoder` takes bytes (or text) as they arrive and calls back per event; `readSse`
 * iterates the events of a response body (undici's, fetch's, or a `node:http` response).
 * Both decode UTF-8 with a streaming decoder, so a character or a line split across chunks
 * is put back together. Nothing here touches the network or Node-only modules: the web UI
 * uses it too.
 */
import { createParser, type EventSourceParser } from 'eventsource-parser';

/** One event: its data (the `data:` lines joined with LF), and its `event` and `id` when sent. */
export interface SseEvent {
  data: string;
  event?: string | undefined;
  id?: string | undefined;
}

/** Plain functions (called without a `this`). */
export interface SseCallbacks {
  onEvent: (event: SseEvent) => void;
  /** The server set the reconnection time (`retry:`), ms. */
  onRetry?: ((ms: number) => void) | undefined;
  /** The pending event grew past `maxBufferSize`: nothing more is parsed. */
  onOverflow?: (() => void) | undefined;
}

export interface SseOptions {
  /** Characters a pending line plus the event it belongs to may hold; unbounded by default. */
  maxBufferSize?: number;
}

/** Decoder options of every chunk but the last (one object, not one per chunk). */
const STREAMING = { stream: true } as const;

export class SseDecoder {
  readonly #decoder = new TextDecoder();
  readonly #parser: EventSourceParser;
  #stopped = false;
  /** The text fed so far ends in CR: a line end the parser holds until it sees what follows. */
  #endsInCr = false;

  constructor(callbacks: SseCallbacks, options: SseOptions = {}) {
    this.#parser = createParser({
      onEvent: callbacks.onEvent,
      onRetry: callbacks.onRetry,
      onError: (err) => {
        if (err.type !== 'max-buffer-size-exceeded') return;
        this.#stopped = true;
        callbacks.onOverflow?.();
      },
      maxBufferSize: options.maxBufferSize,
    });
  }

  /** Feeds the next chunk; events complete in it are reported before this returns. */
  push(chunk: Uint8Array | string): void {
    if (this.#stopped) return;
    const text = typeof chunk === 'string' ? chunk : this.#decoder.decode(chunk, STREAMING);
    if (text === '') return;
    this.#endsInCr = text.charCodeAt(text.length - 1) === 13;
    this.#parser.feed(text);
  }

  /**
   * The stream ended: a line end still in doubt (a CR that a LF might have followed) counts,
   * and an event without its closing blank line is dropped.
   */
  end(): void {
    if (this.#stopped) return;
    this.push(this.#decoder.decode());
    // A LF after that CR makes one CRLF line end, which the parser then acts on.
    if (this.#endsInCr && !this.#stopped) this.#parser.feed('\n');
    this.#stopped = true;
    this.#parser.reset();
  }
}

/**
 * The events of a body, in order, as they complete. Ending the iteration early (`break`)
 * leaves the body to its owner, who cancels or destroys it.
 */
export async function* readSse(
  body: AsyncIterable<Uint8Array | string>,
  options: SseOptions = {},
): AsyncGenerator<SseEvent, void, undefined> {
  const ready: SseEvent[] = [];
  let overflow = false;
  const decoder = new SseDecoder(
    {
      onEvent: (e) => ready.push(e),
      onOverflow: () => {
        overflow = true;
      },
    },
    options,
  );
  for await (const chunk of body) {
    decoder.push(chunk);
    while (ready.length > 0) yield ready.shift()!;
    if (overflow) throw new Error('the event stream exceeds its buffer limit');
  }
  decoder.end();
  while (ready.length > 0) yield ready.shift()!;
}

/**
 * Callbacks that read each event's data as one JSON value (MCP 2025-11-25 "Transports /
 * Streamable HTTP": every event carries one JSON-RPC message); data that is not JSON, and
 * events without data (keep-alive), are skipped.
 */
export function jsonEvents<T>(onMessage: (message: T) => void): SseCallbacks['onEvent'] {
  return (e) => {
    if (e.data === '') return;
    let message: T;
    try {
      message = JSON.parse(e.data) as T;
    } catch {
      return;
    }
    onMessage(message);
  };
}
