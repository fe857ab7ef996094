/**
 * Webhook configuration (ToolHive's shape): a `validating_webhooks` / `mutating_webhooks` entry,
 * and the parameters of a webhook stage (`{webhooks, server_name, transport}`). Unknown keys are
 * refused (a misspelt `failure_polcy` must not silently fall back to anything). `x-errors` words
 * the messages (see `validators/format.ts`). The rules JSON Schema cannot state (the timeout's
 * range, https unless TLS verification is off, client certificate and key together, names
 * unique, files and secrets that must exist) are in `src/dataplane/middleware/webhooks/config.ts`,
 * each named after its rule.
 */
import { type Static, Type } from 'typebox';
import { Opt } from './shorthand.js';

const TLS_FILE = 'must be a non-empty file path';

export const WebhookTlsSchema = Type.Object(
  {
    /** PEM CA bundle replacing the system roots. */
    ca_bundle_path: Opt(Type.String({ minLength: 1, 'x-errors': { type: TLS_FILE, minLength: TLS_FILE } })),
    /** PEM client certificate for mutual TLS (with `client_key_path`; empty: none). */
    client_cert_path: Opt(Type.String({ 'x-errors': { type: TLS_FILE } })),
    /** PEM private key of `client_cert_path` (empty: none). */
    client_key_path: Opt(Type.String({ 'x-errors': { type: TLS_FILE } })),
    /** Skip server certificate verification; also what allows a plain `http` URL. */
    insecure_skip_verify: Opt(Type.Boolean({ 'x-errors': { type: 'must be true or false' } })),
  },
  {
    additionalProperties: false,
    'x-errors': { type: 'must be an object', additionalProperties: '.{keys} is not a field (use {known})' },
  },
);

const FAILURE_POLICY_REQUIRED = 'is required: "fail" (deny when the webhook cannot answer) or "ignore"';
const HMAC_REF = 'must be a secret name or an absolute file path';

export const WebhookSchema = Type.Object(
  {
    name: Type.String({ pattern: '\\S', description: 'Unique within its list.' }),
    url: Type.String({
      minLength: 1,
      description: 'https (plain http only with `tls_config.insecure_skip_verify: true`).',
      'x-errors': { required: 'is required', type: 'is required', minLength: 'is required' },
    }),
    // Integer nanoseconds (what the reference writes) or a Go duration string ("5s"); missing,
    // null or 0: 10 s; 1 s to 30 s.
    timeout: Opt(
      Type.Unsafe<number | string>({
        type: ['integer', 'string'],
        description: 'Go duration ("5s") or integer nanoseconds; 1s to 30s, 0 or none: 10s.',
        'x-errors': {
          type: 'must be a duration string ("5s") or an integer number of nanoseconds',
        },
      }),
    ),
    failure_policy: Type.Unsafe<'fail' | 'ignore'>({
      type: 'string',
      enum: ['fail', 'ignore'],
      description: 'What a call that fails does: `fail` denies the request, `ignore` lets it through.',
      'x-errors': {
        required: FAILURE_POLICY_REQUIRED,
        type: 'must be "fail" or "ignore" (got {json})',
        enum: 'must be "fail" or "ignore" (got {json})',
      },
    }),
    tls_config: Opt(WebhookTlsSchema),
    hmac_secret_ref: Opt(
      Type.String({
        pattern: '\\S',
        description: 'Secret name (`name` or `name,target=X`) or absolute file path of the HMAC key.',
        'x-errors': { type: HMAC_REF, pattern: HMAC_REF },
      }),
    ),
  },
  {
    additionalProperties: false,
    'x-errors': {
      type: 'must be an object',
      additionalProperties: ': {keys} is not a webhook field (use {known})',
    },
  },
);

/** The parameters of a `validating-webhook` / `mutating-webhook` stage (ToolHive's parameters). */
export const WebhookStageParametersSchema = Type.Object(
  {
    webhooks: Type.Array(WebhookSchema, { minItems: 1 }),
    /** Empty or absent: the proxy's own server name. */
    server_name: Opt(Type.String({ 'x-errors': { type: 'must be a string' } })),
    /** Empty or absent: the proxy's backend transport. */
    transport: Opt(Type.String({ 'x-errors': { type: 'must be a string' } })),
  },
  {
    additionalProperties: false,
    'x-errors': {
      type: 'must be an object {webhooks, server_name, transport}',
      additionalProperties: ': {keys} is not a field (use {known})',
    },
  },
);

export type WebhookEntry = Static<typeof WebhookSchema>;
export type WebhookStageParameters = Static<typeof WebhookStageParametersSchema>;
