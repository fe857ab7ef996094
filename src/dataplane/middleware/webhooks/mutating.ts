/**
 * The mutating chain (ToolHive's `mutating_webhooks`): each webhook in configuration order sees the
 * request as the previous one left it and may answer with a JSON Patch applied to the envelope
 * `{"mcp_request": <body>}`. The result is the final body and whether it changed; the stage hands a
 * changed body to the proxy (`replaceBody`), so later stages and the server see it.
 *
 * | outcome                                        | fail                                   | ignore            |
 * |------------------------------------------------|----------------------------------------|-------------------|
 * | `allowed: false`                               | 403 "Request denied by webhook policy" | the same          |
 * | HTTP 422                                       | 422 "Request denied by webhook policy" | the same          |
 * | timeout, network, other status, bad JSON       | 500 "Webhook error"                    | body unchanged    |
 * | unsupported patch_type / malformed / invalid / |                                        |                   |
 * | out-of-scope patch / apply failure             | 500, the message of each (below)       | body unchanged    |
 */
import type { Logger } from '../../../shared/index.js';
import type { WebhookCaller } from './client.js';
import { applyPatch, checkPatch, decodePatch, jsonEqual, PatchError } from './patch.js';
import {
  askWebhook,
  type ChainRefusals,
  oversizeRejection,
  type WebhookChainInput,
  type WebhookRejection,
  webhookRejection,
} from './request.js';

export const MUTATING_DENIED = 'Request denied by webhook policy';

/** The first three rows of the table above. */
const MUTATING_REFUSALS: ChainRefusals = {
  alwaysDeny: [422, MUTATING_DENIED],
  failure: [500, 'Webhook error'],
  denied: [403, MUTATING_DENIED],
};
export const PATCH_TYPE_JSON_PATCH = 'json_patch';

const PATCH_MESSAGES: Record<PatchError['kind'], string> = {
  malformed: 'Malformed patch from webhook',
  invalid: 'Invalid patch from webhook',
  scope: 'Patch must be scoped to mcp_request',
  apply: 'Failed to apply patch from webhook',
};

export type MutationResult =
  | { readonly rejection: WebhookRejection }
  | { readonly rejection?: undefined; readonly body: unknown; readonly changed: boolean };

export async function runMutatingChain(
  clients: readonly WebhookCaller[],
  input: WebhookChainInput,
  logger: Logger,
  now: () => number = Date.now,
): Promise<MutationResult> {
  const tooLarge = oversizeRejection(input);
  if (tooLarge !== undefined) return { rejection: tooLarge };
  let body = input.body;
  let bodyText = input.bodyText;
  let patched = false;
  for (const client of clients) {
    const step = await askWebhook('mutating', client, input, bodyText, MUTATING_REFUSALS, logger, now);
    if (step === undefined) continue;
    if (step.rejection !== undefined) return step;
    const { name, failurePolicy } = client.config;
    const { response } = step;
    const patch = response.patch;
    if (
      response.patchType === undefined ||
      response.patchType === '' ||
      patch === undefined ||
      patch === null
    )
      continue;
    if (Array.isArray(patch) && patch.length === 0) continue;
    const refuse = (message: string, reason: string): WebhookRejection | undefined => {
      if (failurePolicy === 'ignore') {
        logger.warn(
          { webhook: name, reason },
          'mutating webhook answer unusable; body left unchanged (failure_policy ignore)',
        );
        return undefined;
      }
      logger.error(
        { webhook: name, reason },
        'mutating webhook answer unusable; request refused (failure_policy fail)',
      );
      return webhookRejection(500, message, input.id);
    };
    if (response.patchType !== PATCH_TYPE_JSON_PATCH) {
      const rejection = refuse('Unsupported patch type from webhook', `patch_type "${response.patchType}"`);
      if (rejection !== undefined) return { rejection };
      continue;
    }
    let next: unknown;
    try {
      const ops = decodePatch(patch);
      checkPatch(ops);
      next = applyPatch({ mcp_request: body }, ops).mcp_request;
    } catch (err) {
      if (!(err instanceof PatchError)) throw err;
      const rejection = refuse(PATCH_MESSAGES[err.kind], err.message);
      if (rejection !== undefined) return { rejection };
      continue;
    }
    // Every path starts with /mcp_request/, so the member itself is never removed.
    body = next;
    bodyText = JSON.stringify(next);
    patched = true;
    logger.debug({ webhook: name }, 'mutating webhook patch applied');
  }
  // A patch that puts back what was there (or only tests) changes nothing.
  return { body, changed: patched && !jsonEqual(body, input.body) };
}
