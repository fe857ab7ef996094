/**
 * The half of webhooks that only a running proxy needs: the signed client, JSON Patch and the
 * two chains. The pipeline stages import this module on demand and the index exports only the
 * configuration and types, so a workload without webhooks never loads them.
 */
export {
  readWebhookResponse,
  SIGNATURE_HEADER,
  signPayload,
  TIMESTAMP_HEADER,
  WEBHOOK_API_VERSION,
  WebhookClient,
  webhookRequestBody,
} from './client.js';
export { MUTATING_DENIED, runMutatingChain } from './mutating.js';
export { applyPatch, checkPatch, decodePatch, PatchError, parsePointer } from './patch.js';
export { principalOf, sharedPrincipalOf } from './principal.js';
export { jsonRpcCodeForStatus, webhookRejection } from './request.js';
export { runValidatingChain, VALIDATING_DENIED } from './validating.js';
