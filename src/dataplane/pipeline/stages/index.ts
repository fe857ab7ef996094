/**
 * Every pipeline stage, outermost first: Skep's middleware order (docs/policy.md shows it). A
 * request meets them in this order; answers pass their reply hooks in the reverse order.
 * Adding a stage is writing its file and adding its line here.
 *
 * Why this order (ToolHive's order when it builds the chain from the typed run-configuration
 * fields, where it has the stage):
 * - audit first, so every rejection below it (401, 403, webhook denials) is recorded;
 * - inbound auth, then the token swaps that need the caller's identity;
 * - webhooks before authorization, so Cedar judges the request a mutating webhook produced;
 * - the remote server's own credentials last, closest to the request that leaves.
 * Built into the proxy, before all of these: the body limit, the Host/Origin guard, the
 * parser (`ctx.mcp`); after them, the tools filter and override.
 */
import type { StageFactory } from '../types.js';
import { auditStage } from './audit.js';
import { authStage } from './auth.js';
import { authorizationStage } from './authorization.js';
import { guardrailsStage } from './guardrails.js';
import { awsStsStage } from './aws-sts.js';
import { headerForwardStage } from './header-forward.js';
import { rateLimitStage } from './rate-limit.js';
import { remoteAuthStage } from './remote-auth.js';
import { telemetryStage } from './telemetry.js';
import { tokenExchangeStage } from './token-exchange.js';
import { upstreamSwapStage } from './upstream-swap.js';
import { mutatingWebhookStage, validatingWebhookStage } from './webhooks.js';

export const STAGES: readonly StageFactory[] = [
  auditStage,
  authStage,
  upstreamSwapStage,
  tokenExchangeStage,
  // Telemetry sees the request after auth and token exchange, and the rate limit's 429s (row 9 of path A).
  telemetryStage,
  // Rate limits count the call as received, before webhooks and authorization (the reference's order).
  rateLimitStage,
  mutatingWebhookStage,
  validatingWebhookStage,
  authorizationStage,
  // Guardrails judge the arguments authorization let through, and see the server's answer
  // before audit and telemetry do (reply hooks run innermost first).
  guardrailsStage,
  awsStsStage,
  remoteAuthStage,
  headerForwardStage,
];
