/**
 * Guardrails (a Skep extension): detectors for the workload's own secrets, credential
 * formats, personal data and prompt-injection phrases, applied to what a server answers and
 * to tool arguments, with an action per detector (`audit`, `redact`, `block`). The pipeline
 * stage (src/dataplane/pipeline/stages/guardrails.ts) builds it from `guardrails_config`.
 */
export {
  actsOn,
  DETECTOR_NAMES,
  describeGuardrails,
  type DirectionActions,
  type EffectiveGuardrails,
  parseGuardrailsConfig,
} from './config.js';
export {
  base64Cores,
  cardIssuerKnown,
  CredentialsDetector,
  DEFAULT_INJECTION_PHRASES,
  type Detector,
  type DetectorName,
  luhnValid,
  type Match,
  MIN_SECRET_LENGTH,
  OwnSecretsDetector,
  PersonalDataDetector,
  PromptInjectionDetector,
  secretNeedles,
} from './detectors.js';
export {
  type Direction,
  type Finding,
  type Inspection,
  inspect,
  mayMatch,
  type Plan,
  planFor,
} from './engine.js';
export { findingEvent, GUARDRAILS_EVENT_TYPE } from './events.js';
export {
  blockMessage,
  Guard,
  type FindingReport,
  type GuardOptions,
  GUARDRAILS_BLOCKED,
  INSPECTED_METHODS,
  type Oversized,
  oversizedMessage,
  sizeOver,
} from './guard.js';
export { CREDENTIAL_PATTERNS, type CredentialPattern } from './patterns.js';
