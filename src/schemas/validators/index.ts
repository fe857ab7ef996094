/**
 * Validators generated from the schemas (scripts/gen-validators.mjs), the formatter of their
 * errors and the rules JSON Schema cannot state. What a workload runner imports to check its
 * configuration: nothing here loads Ajv or TypeBox.
 */
import { validate as auditConfig } from './audit.generated.js';
import { validate as cedarAuthzConfig } from './authz-cedar.generated.js';
import { validate as guardrailsConfig } from './guardrails.generated.js';
import { validate as httpAuthzConfig } from './authz-http.generated.js';
import { validate as rateLimitConfig } from './rate-limit.generated.js';
import { validate as telemetryConfig } from './telemetry.generated.js';
import type { GeneratedValidator } from './format.js';

export { allowedOriginsProblem } from '../allowed-origins.js';
export { AUDIT_EVENT_TYPE_NAMES } from '../audit-event-types.js';
export * from '../guardrails-defaults.js';
export type { GeneratedValidator, ValidatorError } from './format.js';
export { formatAjvError, formatValidatorError, validationProblem } from './format.js';

/** `rate_limit_config` (`RateLimitConfigSchema`). */
export const validateRateLimitConfig: GeneratedValidator = rateLimitConfig;

/** `audit_config` and the file of `audit_config_path` (`AuditConfigSchema`). */
export const validateAuditConfig: GeneratedValidator = auditConfig;

/** `telemetry_config` (`TelemetryConfigSchema`). */
export const validateTelemetryConfig: GeneratedValidator = telemetryConfig;

/** `authz_config` of type `cedarv1` (`CedarAuthzConfigSchema`). */
export const validateCedarAuthzConfig: GeneratedValidator = cedarAuthzConfig;

/** `authz_config` of type `httpv1` (`HttpAuthzConfigSchema`). */
export const validateHttpAuthzConfig: GeneratedValidator = httpAuthzConfig;

/** `guardrails_config` (`GuardrailsConfigSchema`). */
export const validateGuardrailsConfig: GeneratedValidator = guardrailsConfig;
