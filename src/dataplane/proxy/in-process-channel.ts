/**
 * The stdio bridge's channel to an MCP server in the proxy's own process (a virtual MCP
 * session): whole messages handed over, where a child's channel (`LineChannel`) writes lines
 * to a pipe and splits what comes back. Between two parts of one process there is nothing to
 * gain from a stream pair, line framing on both sides, or the write coalescing that saves a
 * pipe its system calls; each cost the virtual MCP CPU on every call. Nor from serialising:
 * the proxy has parsed each client message already, so the server gets the object itself
 * (`sendMessage`), and a text the bridge composes itself (`send`: errors, notifications it
 * makes up) is parsed once here. The server's messages come back as text, which the bridge
 * relays without parsing them.
 *
 * The proxy's messages reach the server in a microtask, in the order sent, never inside the
 * bridge's own call (the bridge records a request before it sends it, but a reply must not
 * arrive while it is still handling the client's message). The server's messages reach the
 * bridge as they are sent: the server runs on a stack of its own (this channel's microtask,
 * or its backends' I/O), never inside the bridge. A message larger than the bridge reads from
 * a server (`maxUpstreamMessageBytes`) is refused as a child's oversized line is.
 */
import type { JsonRpcMessage } from '../../protocol/index.js';
import { type ChannelHandlers, messageEdges, type ServerChannel } from './line-channel.js';
import type { InProcessServer } from './types.js';

export class InProcessChannel implements ServerChannel {
  /** Messages for the server, not delivered yet (sent during the current task). */
  #queue: JsonRpcMessage[] = [];
  #scheduled = false;
  #ended = false;
  /** True while the server's `connect` runs: an end it reports then is reported after it. */
  #connecting = true;
  readonly #toServer: (message: JsonRpcMessage) => void;
  readonly #maxMessage: number;
  readonly #handlers: ChannelHandlers;
  readonly #deliver = (): void => {
    this.#scheduled = false;
    const queue = this.#queue;
    this.#queue = [];
    for (const message of queue) {
      if (this.#ended) return;
      try {
        this.#toServer(message);
      } catch (err) {
        this.#finish(`the in-process server failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  };

  constructor(server: InProcessServer, maxMessage: number, handlers: ChannelHandlers) {
    this.#maxMessage = maxMessage;
    this.#handlers = handlers;
    this.#toServer = server.connect({
      message: (text) => this.#fromServer(text),
      closed: (reason) => this.#finish(reason),
    });
    this.#connecting = false;
  }

  /**
   * Nothing waits for a reader here: what is sent in a turn reaches the server in that turn's
   * microtasks, so no buffer can grow behind a slow server (the limit on a pipe's backlog,
   * `maxUpstreamBufferBytes`, has nothing to hold back).
   */
  get buffered(): number {
    return 0;
  }

  send(json: string): boolean {
    return this.sendMessage(JSON.parse(json) as JsonRpcMessage);
  }

  sendMessage(message: JsonRpcMessage): boolean {
    if (this.#ended) return false;
    this.#queue.push(message);
    if (!this.#scheduled) {
      this.#scheduled = true;
      queueMicrotask(this.#deliver);
    }
    return true;
  }

  detach(): void {
    if (this.#ended) return;
    // What was sent before goes to the server, as a child's channel writes it out.
    if (this.#scheduled) this.#deliver();
    this.#ended = true;
  }

  #fromServer(text: string): void {
    if (this.#ended) return;
    if (text.length > this.#maxMessage) this.#handlers.onOversize(text.length, messageEdges(text));
    else this.#handlers.onLine(text);
  }

  #finish(reason: string): void {
    if (this.#ended) return;
    if (this.#connecting) {
      // The bridge is still constructing this channel: it learns of the end once it holds it.
      queueMicrotask(() => this.#finish(reason));
      return;
    }
    this.detach();
    this.#handlers.onClosed(reason);
  }
}
