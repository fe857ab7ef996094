/**
 * The names and defaults of `guardrails_config` (its schema is in `guardrails.ts`): the
 * actions, the credential pattern names, the personal data kinds and the configuration a new
 * workload gets. Imports nothing, so a workload runner loads it without TypeBox.
 */

export const GUARDRAIL_ACTIONS = ['off', 'audit', 'redact', 'block'] as const;
export type GuardrailAction = (typeof GUARDRAIL_ACTIONS)[number];

/**
 * The credential patterns, by name (the detector's `patterns` names a subset). The regular
 * expressions live with the detector (src/dataplane/middleware/guardrails/patterns.ts); a
 * unit test checks both lists agree.
 */
export const CREDENTIAL_PATTERN_NAMES = [
  'aws_access_key_id',
  'github_token',
  'gitlab_token',
  'slack_token',
  'slack_webhook_url',
  'google_api_key',
  'stripe_secret_key',
  'openai_api_key',
  'anthropic_api_key',
  'npm_token',
  'private_key_pem',
  'jwt',
] as const;
export type CredentialPatternName = (typeof CREDENTIAL_PATTERN_NAMES)[number];

export const PERSONAL_DATA_KINDS = ['email', 'payment_card', 'phone'] as const;
export type PersonalDataKind = (typeof PERSONAL_DATA_KINDS)[number];

/**
 * The largest answer guardrails inspect, bytes (UTF-8 of the one JSON-RPC message: a stdio
 * line, a JSON body, one SSE event's data). A larger answer to an inspected method is not
 * passed uninspected: it is replaced by a guardrails error naming this limit.
 */
export const DEFAULT_MAX_INSPECT_BYTES = 16 * 1024 * 1024;
/**
 * The ceiling of `maxInspectBytes`: the most the proxy reads of one message from a server
 * (its `maxUpstreamMessageBytes`; a unit test checks both agree). Above it the proxy itself
 * refuses the answer, so a larger setting could never take effect.
 */
export const MAX_INSPECT_BYTES_CEILING = 32 * 1024 * 1024;
/** The floor of `maxInspectBytes`: below it even a small tool result would be refused. */
export const MIN_INSPECT_BYTES = 1024;

export interface GuardrailsDirections {
  results?: GuardrailAction;
  arguments?: GuardrailAction;
}

/** What `GuardrailsConfigSchema` lets through. */
export interface GuardrailsConfig {
  enabled?: boolean;
  maxInspectBytes?: number;
  ownSecrets?: GuardrailsDirections;
  credentials?: GuardrailsDirections & { patterns?: CredentialPatternName[] };
  personalData?: GuardrailsDirections & { kinds?: PersonalDataKind[] };
  promptInjection?: GuardrailsDirections & { phrases?: string[] };
}

/**
 * The configuration a new workload gets: the workload's own secrets and known credential
 * formats are redacted in results; everything else is off. Written out in full, so an export
 * (and `skep list`, the UI) shows each detector's actions.
 */
export function defaultGuardrailsConfig(): GuardrailsConfig {
  return {
    enabled: true,
    ownSecrets: { results: 'redact', arguments: 'off' },
    credentials: { results: 'redact', arguments: 'off' },
    personalData: { results: 'off', arguments: 'off' },
    promptInjection: { results: 'off', arguments: 'off' },
  };
}

const DETECTOR_KEYS = ['ownSecrets', 'credentials', 'personalData', 'promptInjection'] as const;

/**
 * What is on, in one short line for `skep list`, the API's summaries and the UI:
 * `off` (no `guardrails_config`, or `enabled: false`), else each detector that acts, with its
 * actions (`ownSecrets:redact credentials:redact`, `personalData:audit/block` for results /
 * arguments), and `maxInspectBytes:<n>` when it is not the default. Detectors left out of the
 * configuration count with their defaults, as the guardrails stage applies them.
 */
export function guardrailsSummary(config: GuardrailsConfig | undefined): string {
  if (config === undefined || config.enabled === false) return 'off';
  const defaults = defaultGuardrailsConfig();
  const parts: string[] = [];
  for (const key of DETECTOR_KEYS) {
    const results = config[key]?.results ?? defaults[key]?.results ?? 'off';
    const args = config[key]?.arguments ?? defaults[key]?.arguments ?? 'off';
    if (results === 'off' && args === 'off') continue;
    parts.push(args === 'off' ? `${key}:${results}` : `${key}:${results}/${args}`);
  }
  if (parts.length === 0) return 'off';
  const max = config.maxInspectBytes;
  if (max !== undefined && max !== DEFAULT_MAX_INSPECT_BYTES) parts.push(`maxInspectBytes:${max}`);
  return parts.join(' ');
}
