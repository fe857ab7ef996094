/**
 * Running the middlewares' reply hooks (`ProxyRequestContext.onReply`) on the answer to one
 * request, whichever transport carries it: `HookedTarget` wraps the stdio bridge's reply
 * target, the transparent forwarder calls `runReplyHooks` on the answers it relays. And the
 * middlewares' judges of what the server sends on its own (`serverMessageScreen`), which both
 * apply.
 */
import { INTERNAL_ERROR, type JsonRpcMessage } from '../../protocol/index.js';
import { ForwardingTarget, type ReplyTarget } from './outlets.js';
import type { ProxyMiddleware, ReplyHook, ServerMessageVerdict } from './types.js';

/** What a reply hook needs of an answer, judged from its text (`ReplyHookOptions.needs`). */
export type ReplyGate = (text: string) => boolean;

/** True when every gate says its hook has nothing to do with an answer of this text. */
function noneNeeds(gates: readonly ReplyGate[], text: string): boolean {
  for (const needs of gates) if (needs(text)) return false;
  return true;
}

/** Answers a broken hook turned into an error (`failClosed`). */
const failedAnswers = new WeakSet<JsonRpcMessage>();

/** Turns the answer into the fail-closed error a broken hook leaves behind. */
function failClosed(reply: JsonRpcMessage): void {
  delete reply.result;
  reply.error = { code: INTERNAL_ERROR, message: 'internal error' };
  failedAnswers.add(reply);
}

function failedClosed(reply: JsonRpcMessage): boolean {
  return failedAnswers.has(reply);
}

async function runRest(
  hooks: readonly ReplyHook[],
  from: number,
  reply: JsonRpcMessage,
  text: string | undefined,
): Promise<void> {
  for (let i = from; i >= 0; i--) {
    try {
      await (hooks[i] as ReplyHook)(reply, text);
    } catch {
      failClosed(reply);
      return;
    }
  }
}

/**
 * Runs `hooks` on `reply`, innermost (last registered) first. Synchronous while every hook
 * is; returns a promise from the first hook that returns one. A hook that throws (or rejects)
 * turns the answer into a JSON-RPC internal error, and the remaining hooks see that.
 * `text`: the JSON text `reply` was parsed from, when there is one (`ReplyHook`).
 */
export function runReplyHooks(
  hooks: readonly ReplyHook[],
  reply: JsonRpcMessage,
  text?: string,
): void | Promise<void> {
  for (let i = hooks.length - 1; i >= 0; i--) {
    let out: void | Promise<void>;
    try {
      out = (hooks[i] as ReplyHook)(reply, text);
    } catch {
      failClosed(reply);
      continue;
    }
    if (out instanceof Promise) {
      return out.then(
        () => runRest(hooks, i - 1, reply, text),
        () => {
          failClosed(reply);
          return runRest(hooks, i - 1, reply, text);
        },
      );
    }
  }
  return undefined;
}

/** A reply target whose final answer passes the hooks first. Interim messages pass as they are. */
export class HookedTarget extends ForwardingTarget {
  /** The proxy puts the tools policy among the hooks (outermost), so the bridge must not. */
  readonly appliesToolPolicy = true;

  readonly #hooks: readonly ReplyHook[];
  readonly #mutate: boolean;
  readonly #gates: readonly ReplyGate[] | undefined;

  /**
   * `mutate` false: the hooks only read the answer, which is then relayed as it came. `gates`:
   * one per hook, when every hook has one; an answer none of them needs is relayed unparsed.
   */
  constructor(inner: ReplyTarget, hooks: readonly ReplyHook[], mutate = true, gates?: readonly ReplyGate[]) {
    super(inner);
    this.#hooks = hooks;
    this.#mutate = mutate;
    this.#gates = gates;
  }

  final(text: string): void {
    // Parsing and re-serialising cost more than the hooks' own look at the text.
    if (this.#gates !== undefined && noneNeeds(this.#gates, text)) {
      this.forward(text);
      return;
    }
    let reply: JsonRpcMessage;
    try {
      reply = JSON.parse(text) as JsonRpcMessage;
    } catch {
      this.forward(text);
      return;
    }
    const done = runReplyHooks(this.#hooks, reply, text);
    // A hook that throws rewrites the answer into an error (fail closed): only observers that
    // all succeeded leave the text as it was.
    const relay = (): void =>
      this.forward(this.#mutate || failedClosed(reply) ? JSON.stringify(reply) : text);
    if (done === undefined) relay();
    else void done.then(relay);
  }
}

/** The judge of a message the server sends on its own (`ProxyMiddleware.screenServerMessage`). */
export type ServerMessageScreen = (message: JsonRpcMessage, text: string) => ServerMessageVerdict;

/**
 * The middlewares' `screenServerMessage` as one judge, in pipeline order: the first that
 * stops a message decides; a rewrite by one is seen by the next. Undefined when none has one.
 * Built once per proxy and given to every transport that relays server messages: the stdio
 * bridge and the transparent forwarder.
 */
export function serverMessageScreen(
  middlewares: readonly ProxyMiddleware[],
): ServerMessageScreen | undefined {
  const judges = middlewares.filter((m) => m.screenServerMessage !== undefined);
  if (judges.length === 0) return undefined;
  return (message, text) => {
    let rewritten = false;
    for (const judge of judges) {
      const verdict = judge.screenServerMessage?.(message, rewritten ? JSON.stringify(message) : text);
      if (verdict === 'rewritten') rewritten = true;
      else if (verdict !== undefined) return verdict;
    }
    return rewritten ? 'rewritten' : undefined;
  };
}
