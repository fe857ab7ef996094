/**
 * The guardrails on one workload's traffic: tool arguments on the way in (`tools/call`), and
 * the answers to `tools/call`, `resources/read` and `prompts/get` on the way out (their
 * `result`, or a JSON-RPC `error`'s message and data); and what a server sends on its own,
 * over stdio or HTTP: log lines, progress messages, sampling and elicitation requests
 * (`screenServerMessage`). List results (`tools/list`, ...) and every other method pass
 * untouched.
 *
 * An answer whose JSON text holds none of the detectors' hints (`mayMatch`) is not parsed
 * for the guard: the reply hook says so (`needs`), and the stdio bridge relays it as written.
 *
 * The proxy hands each answer to the reply hook as one parsed message, whatever carries it:
 * a stdio line, a JSON body, or one event of an SSE stream (each event is its own message, so
 * a streamed answer is judged event by event, as it arrives). The hook works on that message
 * in place: it copies no part of it except a string it redacts.
 *
 * The work per message is bounded by `maxInspectBytes`: an answer (or a call's body) larger
 * than that is not inspected and not passed on either: it is blocked with an error naming
 * the limit (a security stage never lets an uninspected message through silently). The
 * proxy reads at most `maxUpstreamMessageBytes` of one message, so memory stays bounded
 * whatever the server sends, and an SSE stream is never held whole.
 *
 * A block is a JSON-RPC error naming the detector and the kind of match, never the text:
 * on the way in an HTTP 403 (like an authorization refusal), on the way out the answer's
 * `result` is replaced by the error. Every finding (audit, redact or block) becomes one audit
 * event per message, type `guardrails_finding`.
 */
import type { JsonRpcId, JsonRpcMessage } from '../../../protocol/index.js';
import type { ProxyMiddlewareResult, ProxyRequestContext, ServerMessageVerdict } from '../../proxy/index.js';
import { actsOn, type EffectiveGuardrails } from './config.js';
import type { DetectorName } from './detectors.js';
import { type Direction, type Inspection, inspect, mayMatch, type Plan, planFor } from './engine.js';

/**
 * The JSON-RPC code of a guardrails block: one of the codes JSON-RPC 2.0 §5.1 leaves to the
 * implementation (-32000 to -32099).
 */
export const GUARDRAILS_BLOCKED = -32010;

/** Methods whose answers are inspected: what a server sends the model. */
export const INSPECTED_METHODS: ReadonlySet<string> = new Set([
  'tools/call',
  'resources/read',
  'prompts/get',
]);

const DETECTOR_WORDS: Record<DetectorName, string> = {
  ownSecrets: "one of this workload's own secrets",
  credentials: 'a credential',
  personalData: 'personal data',
  promptInjection: 'a prompt-injection phrase',
};

/**
 * What the server sends on its own that reaches the client (MCP 2025-11-25): a log line
 * (`notifications/message`, its `data`), a progress message (`notifications/progress`, its
 * `message`), and requests to the client (`sampling/createMessage`, `elicitation/create`,
 * their `params`). Each maps to the part a detector reads.
 */
const INSPECTED_SERVER_MESSAGES: ReadonlyMap<string, (params: Record<string, unknown>) => unknown> = new Map<
  string,
  (params: Record<string, unknown>) => unknown
>([
  ['notifications/message', (p) => p['data']],
  ['notifications/progress', (p) => p['message']],
  ['sampling/createMessage', (p) => p],
  ['elicitation/create', (p) => p],
]);

/** What a finding event says about one exchange. */
export interface FindingReport {
  /** The client request; undefined for a message the server sent on its own. */
  readonly ctx: ProxyRequestContext | undefined;
  readonly direction: Direction;
  readonly method: string;
  readonly inspection: Inspection;
  /** Set when the message was blocked unread for its size (`maxInspectBytes`). */
  readonly oversized?: Oversized;
}

/** A message too large to inspect: its size and the limit, bytes. */
export interface Oversized {
  readonly bytes: number;
  readonly limit: number;
}

export interface GuardOptions {
  readonly config: EffectiveGuardrails;
  /** The workload's own secret values by name (never logged). */
  readonly secrets: ReadonlyMap<string, string>;
  /** Called once per inspected message with findings. */
  readonly report: (report: FindingReport) => void;
}

/** The error message of a block: the detector and the kind of match, never the matched text. */
export function blockMessage(
  detector: DetectorName,
  kind: string,
  direction: Direction,
  fromServer = false,
): string {
  const where = fromServer
    ? 'the message from the server contains'
    : direction === 'arguments'
      ? 'the tool arguments contain'
      : 'the answer contains';
  return `Blocked by guardrails (detector ${detector}, ${kind}): ${where} ${DETECTOR_WORDS[detector]}`;
}

/** The error message of a message blocked for its size; names the setting to raise. */
export function oversizedMessage(oversized: Oversized, direction: Direction): string {
  const what = direction === 'arguments' ? 'the request' : 'the answer';
  return (
    `Blocked by guardrails: ${what} is ${oversized.bytes} bytes, more than ` +
    `guardrails_config.maxInspectBytes (${oversized.limit}) lets guardrails inspect`
  );
}

/**
 * The size of `text` in UTF-8 bytes when it is over `limit`, else undefined. A UTF-16 unit
 * is at most 3 UTF-8 bytes (a surrogate pair 4 for 2), so a text of up to a third of the
 * limit in length is settled without measuring it.
 */
export function sizeOver(text: string | undefined, limit: number): number | undefined {
  if (text === undefined || text.length * 3 <= limit) return undefined;
  const bytes = Buffer.byteLength(text);
  return bytes > limit ? bytes : undefined;
}

function oversizedError(id: JsonRpcId | undefined, oversized: Oversized, direction: Direction) {
  return {
    jsonrpc: '2.0' as const,
    ...(id === undefined ? {} : { id }),
    error: {
      code: GUARDRAILS_BLOCKED,
      message: oversizedMessage(oversized, direction),
      data: { limit: 'maxInspectBytes', bytes: oversized.bytes, maxInspectBytes: oversized.limit, direction },
    },
  };
}

function blockError(
  id: JsonRpcId | undefined,
  blocked: NonNullable<Inspection['blocked']>,
  direction: Direction,
  fromServer = false,
) {
  return {
    jsonrpc: '2.0' as const,
    ...(id === undefined ? {} : { id }),
    error: {
      code: GUARDRAILS_BLOCKED,
      message: blockMessage(blocked.detector, blocked.kind, direction, fromServer),
      data: { detector: blocked.detector, kind: blocked.kind, direction },
    },
  };
}

export class Guard {
  readonly results: Plan | undefined;
  readonly arguments: Plan | undefined;
  readonly #report: GuardOptions['report'];
  readonly #maxBytes: number;

  constructor(options: GuardOptions) {
    const { config, secrets } = options;
    this.#maxBytes = config.maxInspectBytes;
    this.results = actsOn(config, 'results') ? planFor(config, 'results', secrets) : undefined;
    this.arguments = actsOn(config, 'arguments') ? planFor(config, 'arguments', secrets) : undefined;
    this.#report = options.report;
  }

  /** The pipeline stage's `handle`: judges the arguments, and hooks the answer. */
  handle(ctx: ProxyRequestContext): ProxyMiddlewareResult | undefined {
    const mcp = ctx.mcp;
    if (mcp === undefined || mcp.id === undefined || !INSPECTED_METHODS.has(mcp.method)) return undefined;
    if (this.arguments !== undefined && mcp.method === 'tools/call' && mcp.arguments !== undefined) {
      const refusal = this.#judgeArguments(ctx, this.arguments);
      if (refusal !== undefined) return refusal;
    }
    const plan = this.results;
    if (plan !== undefined) {
      const method = mcp.method;
      ctx.onReply((reply, text) => this.judgeReply(ctx, method, plan, reply, text), { needs: this.#needs });
    }
    return undefined;
  }

  /**
   * Whether an answer of this JSON text needs the reply hook: when it is too large to
   * inspect, or a detector could match one of its strings.
   */
  readonly #needs = (text: string): boolean => {
    const plan = this.results;
    return plan !== undefined && (sizeOver(text, this.#maxBytes) !== undefined || mayMatch(plan, text));
  };

  #judgeArguments(ctx: ProxyRequestContext, plan: Plan): ProxyMiddlewareResult | undefined {
    const mcp = ctx.mcp;
    if (mcp === undefined) return undefined;
    const bytes = sizeOver(ctx.bodyText, this.#maxBytes);
    if (bytes !== undefined) {
      const oversized = { bytes, limit: this.#maxBytes };
      const inspection: Inspection = { changed: false, findings: [] };
      this.#report({ ctx, direction: 'arguments', method: mcp.method, inspection, oversized });
      return {
        status: 403,
        headers: { 'content-type': 'application/json' },
        body: oversizedError(mcp.id, oversized, 'arguments'),
      };
    }
    // The parsed body is read only: the walk runs on a copy, which replaces the body only
    // when something was redacted.
    const message = structuredClone(mcp.message) as JsonRpcMessage & { params: Record<string, unknown> };
    const { inspection } = inspect(plan, message.params['arguments']);
    if (inspection.findings.length > 0)
      this.#report({ ctx, direction: 'arguments', method: mcp.method, inspection });
    if (inspection.blocked !== undefined)
      return {
        status: 403,
        headers: { 'content-type': 'application/json' },
        body: blockError(mcp.id, inspection.blocked, 'arguments'),
      };
    if (inspection.changed) ctx.replaceBody(message);
    return undefined;
  }

  /**
   * Judges a notification or request the server sent on its own, in place, with the detectors
   * and actions of results: `redact` rewrites it, `block` stops it (no caller waits for a
   * notification, so it is dropped; a request to the client is answered with the error).
   * Other methods (list-changed notifications, `roots/list`, ...) pass.
   */
  screenServerMessage(message: JsonRpcMessage, text: string): ServerMessageVerdict {
    const method = message.method;
    const plan = this.results;
    const part = method === undefined ? undefined : INSPECTED_SERVER_MESSAGES.get(method);
    if (plan === undefined || method === undefined || part === undefined || !this.#needs(text))
      return undefined;
    const bytes = sizeOver(text, this.#maxBytes);
    if (bytes !== undefined) {
      const oversized = { bytes, limit: this.#maxBytes };
      const inspection: Inspection = { changed: false, findings: [] };
      this.#report({ ctx: undefined, direction: 'results', method, inspection, oversized });
      return { error: oversizedError(undefined, oversized, 'results').error };
    }
    const params = message.params;
    if (params === null || typeof params !== 'object' || Array.isArray(params)) return undefined;
    const target = part(params);
    if (target === undefined || target === null) return undefined;
    const { value, inspection } = inspect(plan, target);
    if (inspection.findings.length === 0) return undefined;
    this.#report({ ctx: undefined, direction: 'results', method, inspection });
    if (inspection.blocked !== undefined)
      return { error: blockError(undefined, inspection.blocked, 'results', true).error };
    if (!inspection.changed) return undefined;
    // A string at the top (a progress message, a log line's `data`) is replaced, not edited.
    if (value !== target) params[method === 'notifications/progress' ? 'message' : 'data'] = value;
    return 'rewritten';
  }

  /**
   * The reply hook: inspects `result` or `error` in place; a block replaces `result` by an
   * error. `text`, the JSON the proxy parsed `reply` from, is measured against
   * `maxInspectBytes` first: an answer over it is blocked without being walked.
   */
  judgeReply(
    ctx: ProxyRequestContext,
    method: string,
    plan: Plan,
    reply: JsonRpcMessage,
    text?: string,
  ): void {
    const bytes = sizeOver(text, this.#maxBytes);
    if (bytes !== undefined) {
      const oversized = { bytes, limit: this.#maxBytes };
      this.#report({
        ctx,
        direction: 'results',
        method,
        inspection: { changed: false, findings: [] },
        oversized,
      });
      delete reply.result;
      reply.error = oversizedError(undefined, oversized, 'results').error;
      return;
    }
    // A transport that parsed the answer anyway (HTTP upstreams) still skips the walk.
    if (text !== undefined && !mayMatch(plan, text)) return;
    const target = reply.result !== undefined ? reply.result : reply.error;
    if (target === undefined || target === null) return;
    const { inspection } = inspect(plan, target);
    if (inspection.findings.length === 0) return;
    this.#report({ ctx, direction: 'results', method, inspection });
    if (inspection.blocked !== undefined) {
      delete reply.result;
      reply.error = blockError(undefined, inspection.blocked, 'results').error;
    }
  }
}
