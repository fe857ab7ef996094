/**
 * What both webhook chains share: the request they judge, how a refusal goes back to the MCP client
 * (ToolHive's error mapping: one status → JSON-RPC code table, the request id echoed, and omitted —
 * never null — when the request has none), and the size cap.
 */
import {
  INTERNAL_ERROR,
  INVALID_REQUEST,
  jsonRpcError,
  type JsonRpcErrorResponse,
} from '../../../protocol/index.js';
import type { Logger } from '../../../shared/index.js';
import { WEBHOOK_LIMITS } from './config.js';
import {
  callWebhook,
  type WebhookCaller,
  type WebhookRequestContext,
  type WebhookResponse,
} from './client.js';
import type { WebhookPrincipal } from './principal.js';

/** One MCP request on its way through a webhook chain. */
export interface WebhookChainInput {
  /** The JSON-RPC body as received (or as an earlier stage re-serialised it). */
  readonly bodyText: string;
  /** The same body, parsed. */
  readonly body: unknown;
  /** The JSON-RPC id; undefined for a notification. */
  readonly id: string | number | undefined;
  readonly principal: Readonly<WebhookPrincipal> | null;
  readonly context: WebhookRequestContext;
}

/** A chain's refusal: the HTTP status and a JSON-RPC error body. */
export interface WebhookRejection {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: JsonRpcErrorResponse;
}

/** ToolHive's mapping: 403 and 422 → JSON-RPC 403; 413 → -32600 (invalid request); else -32603. */
export function jsonRpcCodeForStatus(status: number): number {
  if (status === 403 || status === 422) return 403;
  if (status === 413) return INVALID_REQUEST;
  return INTERNAL_ERROR;
}

export function webhookRejection(
  status: number,
  message: string,
  id: string | number | undefined,
): WebhookRejection {
  return {
    status,
    headers: { 'content-type': 'application/json' },
    body: jsonRpcError(id, jsonRpcCodeForStatus(status), message),
  };
}

/** As in ToolHive, a body over 1 MiB is not sent to webhooks; the request is refused with 413. */
export function oversizeRejection(
  input: Pick<WebhookChainInput, 'bodyText' | 'id'>,
): WebhookRejection | undefined {
  if (Buffer.byteLength(input.bodyText, 'utf8') <= WEBHOOK_LIMITS.maxRequestBytes) return undefined;
  return webhookRejection(413, 'Request body exceeds maximum size', input.id);
}

/**
 * A webhook that could not answer (timeout, network, 5xx, bad JSON): logs it and says whether
 * the chain goes on (`failure_policy: ignore`) or the request is refused (`fail`), as in ToolHive.
 */
export function onWebhookFailure(
  kind: 'validating' | 'mutating',
  webhook: { name: string; failurePolicy: 'fail' | 'ignore' },
  reason: string,
  logger: Logger,
): 'ignore' | 'fail' {
  const log = { webhook: webhook.name, reason };
  if (webhook.failurePolicy === 'ignore') {
    logger.warn(log, `${kind} webhook failed; ignored (failure_policy ignore)`);
    return 'ignore';
  }
  logger.error(log, `${kind} webhook failed; request refused (failure_policy fail)`);
  return 'fail';
}

/** A chain's refusal of one outcome: the HTTP status and the message the MCP client gets. */
export type ChainRefusal = readonly [status: number, message: string];

/** How a chain refuses each outcome of a webhook call but an allowing answer. */
export interface ChainRefusals {
  /** HTTP 422: refused whatever `failure_policy` says. */
  readonly alwaysDeny: ChainRefusal;
  /** The webhook could not answer (timeout, network, other status, bad JSON) under `failure_policy: fail`. */
  readonly failure: ChainRefusal;
  /** `allowed: false`: a decision, honoured whatever the failure policy says. */
  readonly denied: ChainRefusal;
}

/** One webhook's part in a chain: its allowing answer, or the rejection that ends the chain. */
export type WebhookStep =
  | { readonly response: WebhookResponse; readonly rejection?: undefined }
  | { readonly rejection: WebhookRejection; readonly response?: undefined };

/**
 * Asks one webhook of a `kind` chain about `bodyText` (the request as the chain has it so far).
 * `undefined`: it could not answer and `failure_policy: ignore` lets the chain go on. Denials
 * and failures are logged; the webhook's own `reason` and `message` go only to the log.
 */
export async function askWebhook(
  kind: 'validating' | 'mutating',
  client: WebhookCaller,
  input: WebhookChainInput,
  bodyText: string,
  refusals: ChainRefusals,
  logger: Logger,
  now: () => number,
): Promise<WebhookStep | undefined> {
  const { name, failurePolicy } = client.config;
  const result = await callWebhook(client, input, bodyText, now);
  if (result.kind === 'always-deny') {
    logger.info({ webhook: name }, `${kind} webhook denied the request (HTTP 422)`);
    return { rejection: webhookRejection(refusals.alwaysDeny[0], refusals.alwaysDeny[1], input.id) };
  }
  if (result.kind === 'failure') {
    if (onWebhookFailure(kind, { name, failurePolicy }, result.reason, logger) === 'ignore') return undefined;
    return { rejection: webhookRejection(refusals.failure[0], refusals.failure[1], input.id) };
  }
  const { response } = result;
  if (!response.allowed) {
    logger.info(
      { webhook: name, reason: response.reason, message: response.message },
      `${kind} webhook denied the request`,
    );
    return { rejection: webhookRejection(refusals.denied[0], refusals.denied[1], input.id) };
  }
  return { response };
}
