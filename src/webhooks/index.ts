/**
 * Webhooks (`validating_webhooks`, `mutating_webhooks`; reference middleware.md §3): external
 * services asked about each MCP request before the server sees it. Configuration, the signed
 * call, JSON Patch and the two chains; the proxy stages that run them are in
 * `pipeline/stages/webhooks.ts`.
 */
export {
  type FailurePolicy,
  parseGoDuration,
  parseWebhookList,
  parseWebhookStageConfig,
  parseWebhookTimeout,
  WEBHOOK_LIMITS,
  type WebhookConfig,
  type WebhookKind,
  type WebhookStageConfig,
} from './config.js';
export {
  readWebhookResponse,
  SIGNATURE_HEADER,
  signPayload,
  TIMESTAMP_HEADER,
  WEBHOOK_API_VERSION,
  WebhookClient,
  type WebhookCaller,
  type WebhookCallResult,
  type WebhookRequestContext,
  webhookRequestBody,
} from './client.js';
export { MUTATING_DENIED, type MutationResult, runMutatingChain } from './mutating.js';
export {
  applyPatch,
  checkPatch,
  decodePatch,
  PatchError,
  type PatchOperation,
  parsePointer,
} from './patch.js';
export { principalOf, type WebhookPrincipal } from './principal.js';
export {
  jsonRpcCodeForStatus,
  type WebhookChainInput,
  type WebhookRejection,
  webhookRejection,
} from './request.js';
export { runValidatingChain, VALIDATING_DENIED } from './validating.js';
