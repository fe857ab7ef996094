/**
 * A workload's middleware pipeline: the ordered stages its proxy runs for every client
 * request (audit, inbound auth, token swaps, webhooks, authorization, outgoing credentials),
 * built from the run configuration. `build.ts` assembles it; `stages/` holds one file per
 * stage and the order; `types.ts` is the contract.
 */
export { buildPipeline, FACTORIES, type Pipeline, type ProxyTuning, planPipeline } from './build.js';
// `checkPipeline` (./check.ts) is imported directly by the API side: it loads the schemas,
// which a workload runner must not.
export { callerClaims, localUserClaims, localUserIdentity } from './identity.js';
export { STAGES } from './stages/index.js';
export type { EmbeddedAuthServerHandle, MiddlewareConfig, Stage, StageDeps, StageFactory } from './types.js';
