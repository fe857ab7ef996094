/**
 * The guardrails on one workload's traffic: tool arguments on the way in (`tools/call`), and
 * the answers to `tools/call`, `resources/read` and `prompts/get` on the way out (their
 * `result`, or a JSON-RPC `error`'s message and data). List results (`tools/list`, ...) and
 * every other method pass untouched.
 *
 * The proxy hands each answer to the reply hook as one parsed message, whatever carries it:
 * a stdio line, a JSON body, or one event of an SSE stream (each event is its own message, so
 * a streamed answer is judged event by event, as it arrives). The hook works on that message
 * in place: it copies no part of it except a string it redacts.
 *
 * A block is a JSON-RPC error naming the detector and the kind of match, never the text:
 * on the way in an HTTP 403 (like an authorization refusal), on the way out the answer's
 * `result` is replaced by the error. Every finding (audit, redact or block) becomes one audit
 * event per message, type `guardrails_finding`.
 */
import type { JsonRpcId, JsonRpcMessage } from '../../../protocol/index.js';
import type { ProxyMiddlewareResult, ProxyRequestContext } from '../../proxy/index.js';
import { actsOn, type EffectiveGuardrails } from './config.js';
import type { DetectorName } from './detectors.js';
import { type Direction, type Inspection, inspect, type Plan, planFor } from './engine.js';

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

/** What a finding event says about one exchange. */
export interface FindingReport {
  readonly ctx: ProxyRequestContext;
  readonly direction: Direction;
  readonly method: string;
  readonly inspection: Inspection;
}

export interface GuardOptions {
  readonly config: EffectiveGuardrails;
  /** The workload's own secret values by name (never logged). */
  readonly secrets: ReadonlyMap<string, string>;
  /** Called once per inspected message with findings. */
  readonly report: (report: FindingReport) => void;
}

/** The error message of a block: the detector and the kind of match, never the matched text. */
export function blockMessage(detector: DetectorName, kind: string, direction: Direction): string {
  const where = direction === 'arguments' ? 'the tool arguments contain' : 'the answer contains';
  return `Blocked by guardrails (detector ${detector}, ${kind}): ${where} ${DETECTOR_WORDS[detector]}`;
}

function blockError(
  id: JsonRpcId | undefined,
  blocked: NonNullable<Inspection['blocked']>,
  direction: Direction,
) {
  return {
    jsonrpc: '2.0' as const,
    ...(id === undefined ? {} : { id }),
    error: {
      code: GUARDRAILS_BLOCKED,
      message: blockMessage(blocked.detector, blocked.kind, direction),
      data: { detector: blocked.detector, kind: blocked.kind, direction },
    },
  };
}

export class Guard {
  readonly results: Plan | undefined;
  readonly arguments: Plan | undefined;
  readonly #report: GuardOptions['report'];

  constructor(options: GuardOptions) {
    const { config, secrets } = options;
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
      ctx.onReply((reply) => this.judgeReply(ctx, method, plan, reply));
    }
    return undefined;
  }

  #judgeArguments(ctx: ProxyRequestContext, plan: Plan): ProxyMiddlewareResult | undefined {
    const mcp = ctx.mcp;
    if (mcp === undefined) return undefined;
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

  /** The reply hook: inspects `result` or `error` in place; a block replaces `result` by an error. */
  judgeReply(ctx: ProxyRequestContext, method: string, plan: Plan, reply: JsonRpcMessage): void {
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
