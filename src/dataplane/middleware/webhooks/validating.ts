/**
 * The validating chain (ToolHive's `validating_webhooks`): each webhook in configuration order is
 * asked about the request; the first that says no ends it. The refusal never carries the webhook's
 * own `message` or `reason` (they go to the log), so a policy service cannot leak details to the
 * caller through Skep.
 *
 * | outcome                                   | fail                         | ignore       |
 * |-------------------------------------------|------------------------------|--------------|
 * | `allowed: false`                          | 403 "Request denied by policy" | the same   |
 * | HTTP 422                                  | 403 "Request denied by policy" | the same   |
 * | timeout, network, other status, bad JSON  | 403 "Request denied by policy" | next webhook |
 */
import type { Logger } from '../../../shared/index.js';
import type { WebhookCaller } from './client.js';
import {
  askWebhook,
  type ChainRefusals,
  oversizeRejection,
  type WebhookChainInput,
  type WebhookRejection,
} from './request.js';

export const VALIDATING_DENIED = 'Request denied by policy';

/** The table above: every refusal is the same 403. */
const VALIDATING_REFUSALS: ChainRefusals = {
  alwaysDeny: [403, VALIDATING_DENIED],
  failure: [403, VALIDATING_DENIED],
  denied: [403, VALIDATING_DENIED],
};

export async function runValidatingChain(
  clients: readonly WebhookCaller[],
  input: WebhookChainInput,
  logger: Logger,
  now: () => number = Date.now,
): Promise<WebhookRejection | undefined> {
  const tooLarge = oversizeRejection(input);
  if (tooLarge !== undefined) return tooLarge;
  for (const client of clients) {
    const step = await askWebhook(
      'validating',
      client,
      input,
      input.bodyText,
      VALIDATING_REFUSALS,
      logger,
      now,
    );
    if (step?.rejection !== undefined) return step.rejection;
  }
  return undefined;
}
