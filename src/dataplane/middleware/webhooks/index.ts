/**
 * Webhooks (`validating_webhooks`, `mutating_webhooks`; ToolHive's webhook middlewares): external
 * services asked about each MCP request before the server sees it. Configuration, the signed call,
 * JSON Patch and the two chains; the proxy stages that run them are in
 * `pipeline/stages/webhooks.ts`.
 */
export {
  type FailurePolicy,
  parseWebhookList,
  parseWebhookStageConfig,
  parseWebhookTimeout,
  WEBHOOK_LIMITS,
  type WebhookConfig,
  type WebhookKind,
  type WebhookStageConfig,
} from './config.js';
export type { WebhookCaller, WebhookCallResult, WebhookRequestContext } from './client.js';
export type { MutationResult } from './mutating.js';
export type { PatchOperation } from './patch.js';
export type { WebhookPrincipal } from './principal.js';
export type { WebhookChainInput, WebhookRejection } from './request.js';
// Its shape, for the stage that loads it: `typeof WebhookRuntime.sharedPrincipalOf`.
export type * as WebhookRuntime from './runtime.js';
// The signed client, JSON Patch and the two chains: `./runtime.js`, imported on demand by the
// webhook stages.
