/**
 * The validator of a webhook stage's parameters (`WebhookStageParametersSchema`), an entry of its
 * own: only workloads with webhooks check them, and the runner loads this with the webhook
 * stage's configuration.
 */
import type { GeneratedValidator } from '../format.js';
import { validate } from '../webhooks.generated.js';

export type { WebhookEntry, WebhookStageParameters } from '../../webhooks.js';
export type { ValidatorError } from '../format.js';
export { formatValidatorError } from '../format.js';

/** A webhook stage's parameters: every problem, in the order of the schema. */
export const validateWebhookStageParameters: GeneratedValidator = validate;
