/**
 * The validating chain (reference middleware.md §3.2/§3.3): each webhook in configuration
 * order is asked about the request; the first that says no ends it. The refusal never
 * carries the webhook's own `message` or `reason` (they go to the log), so a policy service
 * cannot leak details to the caller through Skep.
 *
 * | outcome                                   | fail                         | ignore       |
 * |-------------------------------------------|------------------------------|--------------|
 * | `allowed: false`                          | 403 "Request denied by policy" | the same   |
 * | HTTP 422                                  | 403 "Request denied by policy" | the same   |
 * | timeout, network, other status, bad JSON  | 403 "Request denied by policy" | next webhook |
 */
import type { Logger } from '../shared/index.js';
import { callWebhook, type WebhookCaller } from './client.js';
import {
  onWebhookFailure,
  oversizeRejection,
  type WebhookChainInput,
  type WebhookRejection,
  webhookRejection,
} from './request.js';

export const VALIDATING_DENIED = 'Request denied by policy';

export async function runValidatingChain(
  clients: readonly WebhookCaller[],
  input: WebhookChainInput,
  logger: Logger,
  now: () => number = Date.now,
): Promise<WebhookRejection | undefined> {
  const tooLarge = oversizeRejection(input);
  if (tooLarge !== undefined) return tooLarge;
  for (const client of clients) {
    const { name, failurePolicy } = client.config;
    const result = await callWebhook(client, input, input.bodyText, now);
    if (result.kind === 'always-deny') {
      logger.info({ webhook: name }, 'validating webhook denied the request (HTTP 422)');
      return webhookRejection(403, VALIDATING_DENIED, input.id);
    }
    if (result.kind === 'failure') {
      if (onWebhookFailure('validating', { name, failurePolicy }, result.reason, logger) === 'ignore')
        continue;
      return webhookRejection(403, VALIDATING_DENIED, input.id);
    }
    if (!result.response.allowed) {
      logger.info(
        { webhook: name, reason: result.response.reason, message: result.response.message },
        'validating webhook denied the request',
      );
      return webhookRejection(403, VALIDATING_DENIED, input.id);
    }
  }
  return undefined;
}
