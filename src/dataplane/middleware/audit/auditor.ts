/**
 * Follows each HTTP exchange through the proxy and writes its audit event when the outcome
 * is known: the final status (`onEnd`), and the JSON-RPC answer (`onReply`) for application
 * errors and response data. Audit sits outside authentication and the policy stages, so
 * their refusals (401, 403, 429, webhook denials) are audited too; it reads the identity and
 * the parsed request when the exchange ends, after the inner stages set them.
 *
 * A legacy-SSE POST is answered 202 at once and its answer travels on the GET stream later;
 * its event waits for that answer (at most `replyWaitMs`), so its outcome is the answer's.
 * A stream open (GET with `Accept: text/event-stream`) gives one `sse_connection` event,
 * written when the stream ends with the status it got (the reference writes it when the
 * response starts; the pipeline has no hook for that moment yet). A refused stream ends at
 * once, so its `denied` event is immediate. At shutdown every exchange still open is written.
 */
import type { JsonRpcMessage } from '../../../protocol/index.js';
import { SeqTable } from '../../../shared/index.js';
import type { ProxyRequestContext, ReplyHookOptions } from '../../proxy/index.js';
import type { AuditConfig } from './config.js';
import {
  type EventSettings,
  type ExchangeFacts,
  exchangeEvent,
  isLegacySsePath,
  isStreamOpen,
  streamOpenEvent,
} from './event.js';
import type { AuditWriter } from './writer.js';

export interface AuditorOptions {
  readonly config: AuditConfig;
  /** Resolved `component` of every event. */
  readonly component: string;
  /** `trust_proxy_headers`: believe `X-Forwarded-For` / `X-Real-IP` for `source.value`. */
  readonly trustProxyHeaders: boolean;
  readonly writer: AuditWriter;
  /**
   * Claims for a request no stage authenticated: the local user when the workload has no inbound
   * authentication (ToolHive's synthetic local user), undefined (`"anonymous"`) when it has.
   */
  readonly unauthenticatedClaims: () => Record<string, unknown> | undefined;
  /** How long a 202-answered request waits for its answer on the stream, ms (default 60 s). */
  readonly replyWaitMs?: number;
  readonly now?: () => number;
}

const LEGACY_ACCEPTED = 202;

const ALWAYS: ReplyHookOptions = { observeOnly: true };

/**
 * What the event needs of an answer: all of it with `includeResponseData`; with
 * `detectApplicationErrors`, only an answer whose text may hold an error (a JSON-RPC `error`
 * member or a tool result's `isError`; any `\u` escape could spell either key); otherwise
 * nothing. An answer the event does not need is relayed unparsed (the stdio bridge skips the
 * parse when no hook needs it), and its event is the one a plain success gets.
 */
function replyHookOptions(config: AuditConfig): ReplyHookOptions {
  if (config.includeResponseData) return ALWAYS;
  if (!config.detectApplicationErrors) return { observeOnly: true, needs: () => false };
  return {
    observeOnly: true,
    needs: (text) => text.includes('"error"') || text.includes('"isError"') || text.includes('\\u'),
  };
}
/** A stream still open when the proxy shuts down was established (a refusal ends at once). */
const STREAM_ESTABLISHED = 200;

/** How an exchange ended, as `Auditor.record` needs it. */
interface ExchangeOutcome {
  /** The HTTP status; 0 when the exchange never completed. */
  readonly status: number;
  /** When the stage first saw the request, ms. */
  readonly started: number;
  readonly reply: JsonRpcMessage | undefined;
  readonly requestText: string | undefined;
  /** A stream open: its `sse_connection` event instead of an exchange event. */
  readonly streamOpen: boolean;
}

/** One request followed from `handle` to its event. */
class Exchange {
  #reply: JsonRpcMessage | undefined;
  #status: number | undefined;
  #timer: NodeJS.Timeout | undefined;
  #done = false;

  readonly #auditor: Auditor;
  readonly #ctx: ProxyRequestContext;
  readonly #started: number;
  readonly #requestText: string | undefined;
  readonly #expectsReply: boolean;

  constructor(
    auditor: Auditor,
    /** Its key in `Auditor.open`. */
    readonly id: number,
    ctx: ProxyRequestContext,
    started: number,
    requestText: string | undefined,
    expectsReply: boolean,
    readonly streamOpen: boolean,
  ) {
    this.#auditor = auditor;
    this.#ctx = ctx;
    this.#started = started;
    this.#requestText = requestText;
    this.#expectsReply = expectsReply;
  }

  replied(reply: JsonRpcMessage): void {
    this.#reply = reply;
    // Outer reply hooks (the tools policy) may still rewrite the answer in this turn.
    if (this.#status !== undefined) setImmediate(() => this.finish());
  }

  ended(status: number): void {
    this.#status = status;
    if (status === LEGACY_ACCEPTED && this.#expectsReply && this.#reply === undefined) {
      this.#timer = setTimeout(() => this.finish(), this.#auditor.replyWaitMs);
      this.#timer.unref();
      return;
    }
    this.finish();
  }

  /**
   * Writes the event with what is known now. Idempotent. At shutdown a stream that is still
   * open counts as established; any other exchange that never ended has no status (0).
   */
  finish(): void {
    if (this.#done) return;
    this.#done = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#auditor.open.delete(this.id);
    this.#auditor.record(this.#ctx, {
      status: this.#status ?? (this.streamOpen ? STREAM_ESTABLISHED : 0),
      started: this.#started,
      reply: this.#reply,
      requestText: this.#requestText,
      streamOpen: this.streamOpen,
    });
  }
}

export class Auditor {
  readonly replyWaitMs: number;
  /** Exchanges whose event is not written yet (in flight, open streams, 202s awaiting their answer). */
  readonly open = new SeqTable<Exchange>();
  #seq = 0;
  readonly #options: AuditorOptions;
  readonly #settings: EventSettings;
  readonly #now: () => number;
  /** `ReplyHookOptions` of the answer hook of a request answered in its own exchange. */
  readonly #replyOptions: ReplyHookOptions;
  #closing: Promise<void> | undefined;

  constructor(options: AuditorOptions) {
    this.#options = options;
    this.#replyOptions = replyHookOptions(options.config);
    this.replyWaitMs = options.replyWaitMs ?? 60_000;
    this.#now = options.now ?? Date.now;
    this.#settings = {
      config: options.config,
      component: options.component,
      trustProxyHeaders: options.trustProxyHeaders,
      now: this.#now,
    };
  }

  /** Starts following one request; never rejects it. */
  handle(ctx: ProxyRequestContext): void {
    if (this.#closing !== undefined) return;
    const started = this.#now();
    const streamOpen = isStreamOpen(ctx.method, ctx.headers);
    const requestText = this.#options.config.includeRequestData && !streamOpen ? ctx.bodyText : undefined;
    const expectsReply = !streamOpen && ctx.mcp?.id !== undefined;
    const id = ++this.#seq;
    const exchange = new Exchange(this, id, ctx, started, requestText, expectsReply, streamOpen);
    this.open.set(id, exchange);
    // A legacy-SSE POST is answered 202 and its event waits for the answer: it must see each one.
    if (expectsReply)
      ctx.onReply(
        (reply) => exchange.replied(reply),
        isLegacySsePath(ctx.path) ? ALWAYS : this.#replyOptions,
      );
    ctx.onEnd((end) => exchange.ended(end.status));
  }

  /** Builds and queues the event of a finished exchange. */
  record(ctx: ProxyRequestContext, end: ExchangeOutcome): void {
    const { status, started, reply, requestText, streamOpen } = end;
    const mcp = ctx.mcp;
    const facts: ExchangeFacts = {
      httpMethod: ctx.method,
      path: ctx.path,
      headers: ctx.headers,
      remoteAddress: ctx.remoteAddress,
      mcp: mcp === undefined ? undefined : { method: mcp.method, resourceId: mcp.resourceId },
      claims: ctx.identity.claims ?? this.#options.unauthenticatedClaims(),
      status,
      durationMs: this.#now() - started,
      reply,
      requestText,
    };
    const event = streamOpen ? streamOpenEvent(facts, this.#settings) : exchangeEvent(facts, this.#settings);
    if (event !== undefined) this.#options.writer.write(event);
  }

  /**
   * Writes the events of the exchanges still open (with what is known: a stream that is still
   * open, an answer still awaited), then flushes. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      for (const exchange of this.open.values()) exchange.finish();
      await this.#options.writer.close();
    })();
    return this.#closing;
  }
}
