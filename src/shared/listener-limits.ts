/**
 * Bounds for every HTTP listener Skep serves itself (a workload's proxy, with the embedded
 * authorization server mounted on it; the admission webhook), so that slow or idle clients
 * cannot hold a listener's memory or connections:
 *
 * - a client has `headersTimeoutMs` to send its headers and `requestTimeoutMs` to send the
 *   whole request (Node's `headersTimeout`/`requestTimeout`: the server answers 408 and closes);
 *   both bound the request only, so a long response stream (SSE) is unaffected;
 * - at most `maxConnections` connections at once (Node drops the ones beyond);
 * - request bodies that are still arriving hold at most `maxUnfinishedBodyBytes` together:
 *   when a chunk would go past it, the largest unfinished body is given up and its connection
 *   closed — the slowest sender of the most data, so small calls of other clients go on.
 */
import type { IncomingMessage, ServerOptions } from 'node:http';
import { SeqTable } from './seq-table.js';

export interface ListenerLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  maxConnections: number;
  maxUnfinishedBodyBytes: number;
}

export const LISTENER_DEFAULTS: Readonly<ListenerLimits> = Object.freeze({
  headersTimeoutMs: 20_000,
  requestTimeoutMs: 60_000,
  maxConnections: 1024,
  maxUnfinishedBodyBytes: 16 * 1024 * 1024,
});

/** `createServer` options that apply the timeouts; set `maxConnections` on the server after. */
export function listenerOptions(limits: ListenerLimits): ServerOptions {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    // How often Node looks for connections past those timeouts (default 30 s).
    connectionsCheckingInterval: Math.min(5_000, limits.headersTimeoutMs),
  };
}

/** One body being read, as the budget sees it. */
export interface PendingBody {
  size: number;
  readonly req: IncomingMessage;
  /** Its key in the budget's table. */
  readonly id: number;
}

/**
 * The unfinished-body bytes of one listener. A reader registers its body, reports each chunk
 * (`grow`), and ends it (`end`) however the read finishes.
 */
export class BodyBudget {
  #used = 0;
  /**
   * The bodies being read. A `SeqTable`, not a `Set`: one entry comes and goes per request,
   * and a `Set` used that way keeps every request alive past young-generation collections
   * once a full GC has run (seq-table.ts).
   */
  readonly #bodies = new SeqTable<PendingBody>();
  #seq = 0;

  constructor(readonly limit: number) {}

  get used(): number {
    return this.#used;
  }

  start(req: IncomingMessage): PendingBody {
    const body: PendingBody = { size: 0, req, id: ++this.#seq };
    this.#bodies.set(body.id, body);
    return body;
  }

  /**
   * Counts `n` more bytes of `body`. While the listener is over its limit, the largest
   * unfinished body is given up (its connection destroyed); false when that is `body` itself.
   */
  grow(body: PendingBody, n: number): boolean {
    body.size += n;
    this.#used += n;
    while (this.#used > this.limit) {
      let largest = body;
      for (const [, other] of this.#bodies) if (other.size > largest.size) largest = other;
      this.end(largest);
      if (largest === body) return false;
      largest.req.socket.destroy();
    }
    return true;
  }

  end(body: PendingBody): void {
    if (!this.#bodies.delete(body.id)) return;
    this.#used -= body.size;
  }
}
