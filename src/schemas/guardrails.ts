/**
 * `guardrails_config` (a Skep extension; the reference has no guardrails): what the guardrails
 * stage looks for in what a workload's server sends back (tool results, resource reads, prompt
 * results) and in the tool arguments a client sends, and what it does about each finding.
 *
 * Four detectors, each with an action for results and one for tool arguments:
 * - `ownSecrets`: the secret values Skep itself gave this workload (its `secrets`, the
 *   `header_forward` secret headers, the remote bearer token and client secrets), exactly and
 *   in their base64 and URL-encoded forms;
 * - `credentials`: well-known credential formats, a named pattern set (`patterns` picks some);
 * - `personalData`: e-mail addresses, payment card numbers (Luhn-checked), phone numbers
 *   (`kinds` picks some);
 * - `promptInjection`: phrases that try to steer the model (`phrases` replaces the default list).
 *
 * `maxInspectBytes` bounds the answer guardrails inspect (default 16 MiB): a larger answer to
 * an inspected method is replaced by a guardrails error naming the limit, never passed on
 * uninspected.
 *
 * Actions: `off`, `audit` (pass, write an audit event), `redact` (replace the match, the JSON
 * stays valid), `block` (the call fails with a JSON-RPC error naming the detector, never the
 * matched text). Keys are camelCase, like the reference's `audit_config` and `rate_limit_config`.
 * Unknown keys are refused. The defaults (`GUARDRAILS_DEFAULTS`) are written into the run
 * configuration of every new workload, so an export shows what is on.
 */
import { Type } from 'typebox';
import {
  CREDENTIAL_PATTERN_NAMES,
  GUARDRAIL_ACTIONS,
  MAX_INSPECT_BYTES_CEILING,
  MIN_INSPECT_BYTES,
  PERSONAL_DATA_KINDS,
} from './guardrails-defaults.js';
import { Opt } from './shorthand.js';

export * from './guardrails-defaults.js';

const ACTION_ERROR = `must be one of ${GUARDRAIL_ACTIONS.join(', ')} (got {json})`;
const action = () =>
  Type.String({ enum: [...GUARDRAIL_ACTIONS], 'x-errors': { type: ACTION_ERROR, enum: ACTION_ERROR } });

const objectErrors = (what: string) => ({
  type: `must be a JSON object (${what})`,
  additionalProperties: ': unknown key{s} {keysJson}; known keys (camelCase): {known}',
});

/** Where a detector acts: on answers (`results`) and on tool arguments (`arguments`). */
const directions = {
  results: Opt(action()),
  arguments: Opt(action()),
};

const UNKNOWN_PATTERN = `: unknown credential pattern {json}; known: ${CREDENTIAL_PATTERN_NAMES.join(', ')}`;
const UNKNOWN_KIND = `: unknown personal data kind {json}; known: ${PERSONAL_DATA_KINDS.join(', ')}`;

export const GuardrailsConfigSchema = Type.Object(
  {
    enabled: Opt(Type.Boolean({ 'x-errors': { type: 'must be true or false' } })),
    maxInspectBytes: Opt(
      Type.Integer({
        minimum: MIN_INSPECT_BYTES,
        maximum: MAX_INSPECT_BYTES_CEILING,
        'x-errors': {
          type: 'must be an integer (bytes)',
          minimum: `must be at least ${MIN_INSPECT_BYTES} (bytes)`,
          maximum: `must be at most ${MAX_INSPECT_BYTES_CEILING} (bytes: the most the proxy reads of one message)`,
        },
      }),
    ),
    ownSecrets: Opt(
      Type.Object(directions, {
        additionalProperties: false,
        'x-errors': objectErrors('results, arguments'),
      }),
    ),
    credentials: Opt(
      Type.Object(
        {
          ...directions,
          patterns: Opt(
            Type.Array(
              Type.String({
                enum: [...CREDENTIAL_PATTERN_NAMES],
                'x-error-at': 'list',
                'x-errors': { type: UNKNOWN_PATTERN, enum: UNKNOWN_PATTERN },
              }),
              { 'x-errors': { type: 'must be a list of credential pattern names' } },
            ),
          ),
        },
        { additionalProperties: false, 'x-errors': objectErrors('results, arguments, patterns') },
      ),
    ),
    personalData: Opt(
      Type.Object(
        {
          ...directions,
          kinds: Opt(
            Type.Array(
              Type.String({
                enum: [...PERSONAL_DATA_KINDS],
                'x-error-at': 'list',
                'x-errors': { type: UNKNOWN_KIND, enum: UNKNOWN_KIND },
              }),
              { 'x-errors': { type: 'must be a list of personal data kinds' } },
            ),
          ),
        },
        { additionalProperties: false, 'x-errors': objectErrors('results, arguments, kinds') },
      ),
    ),
    promptInjection: Opt(
      Type.Object(
        {
          ...directions,
          phrases: Opt(
            Type.Array(
              Type.String({
                minLength: 3,
                maxLength: 200,
                'x-error-at': 'list',
                'x-errors': {
                  type: 'must be a list of phrases',
                  minLength: 'must be phrases of 3 to 200 characters (got {json})',
                  maxLength: 'must be phrases of 3 to 200 characters (got {json})',
                },
              }),
              {
                maxItems: 500,
                'x-errors': { type: 'must be a list of phrases', maxItems: 'holds at most 500 phrases' },
              },
            ),
          ),
        },
        { additionalProperties: false, 'x-errors': objectErrors('results, arguments, phrases') },
      ),
    ),
  },
  {
    additionalProperties: false,
    'x-errors': objectErrors(
      'enabled, maxInspectBytes, ownSecrets, credentials, personalData, promptInjection',
    ),
  },
);
