/**
 * `guardrails_config` parsed into the effective configuration: the shape is checked by the
 * generated validator of `GuardrailsConfigSchema` (src/schemas/guardrails.ts); a detector or
 * direction left out takes its default (`defaultGuardrailsConfig`: own secrets and credential
 * formats redacted in results, everything else off), so a configuration that names one
 * detector does not turn the defaults of the others off.
 */
import {
  CREDENTIAL_PATTERN_NAMES,
  type CredentialPatternName,
  DEFAULT_MAX_INSPECT_BYTES,
  defaultGuardrailsConfig,
  type GuardrailAction,
  type GuardrailsConfig,
  PERSONAL_DATA_KINDS,
  type PersonalDataKind,
  validateGuardrailsConfig,
  validationProblem,
} from '../../../schemas/validators/index.js';
import { SkepError } from '../../../shared/index.js';
import { DEFAULT_INJECTION_PHRASES, type DetectorName } from './detectors.js';

export interface DirectionActions {
  readonly results: GuardrailAction;
  readonly arguments: GuardrailAction;
}

export interface EffectiveGuardrails {
  readonly enabled: boolean;
  /** The largest answer inspected, bytes; a larger one is blocked (`Guard.judgeReply`). */
  readonly maxInspectBytes: number;
  readonly ownSecrets: DirectionActions;
  readonly credentials: DirectionActions & { readonly patterns: readonly CredentialPatternName[] };
  readonly personalData: DirectionActions & { readonly kinds: readonly PersonalDataKind[] };
  readonly promptInjection: DirectionActions & { readonly phrases: readonly string[] };
}

export const DETECTOR_NAMES: readonly DetectorName[] = [
  'ownSecrets',
  'credentials',
  'personalData',
  'promptInjection',
];

function actions(
  given: { results?: GuardrailAction; arguments?: GuardrailAction } | undefined,
  fallback: { results?: GuardrailAction; arguments?: GuardrailAction } | undefined,
): DirectionActions {
  return {
    results: given?.results ?? fallback?.results ?? 'off',
    arguments: given?.arguments ?? fallback?.arguments ?? 'off',
  };
}

/** Validates `guardrails_config` and fills the defaults; `invalid_config` naming the field otherwise. */
export function parseGuardrailsConfig(value: unknown, field = 'guardrails_config'): EffectiveGuardrails {
  const input = value === null || value === undefined ? {} : value;
  const problem = validationProblem(validateGuardrailsConfig, input, field);
  if (problem !== undefined) throw new SkepError('invalid_config', problem);
  const raw = input as GuardrailsConfig;
  const d = defaultGuardrailsConfig();
  const phrases = raw.promptInjection?.phrases ?? DEFAULT_INJECTION_PHRASES;
  return Object.freeze({
    enabled: raw.enabled ?? true,
    maxInspectBytes: raw.maxInspectBytes ?? DEFAULT_MAX_INSPECT_BYTES,
    ownSecrets: actions(raw.ownSecrets, d.ownSecrets),
    credentials: {
      ...actions(raw.credentials, d.credentials),
      patterns: Object.freeze([...(raw.credentials?.patterns ?? CREDENTIAL_PATTERN_NAMES)]),
    },
    personalData: {
      ...actions(raw.personalData, d.personalData),
      kinds: Object.freeze([...(raw.personalData?.kinds ?? PERSONAL_DATA_KINDS)]),
    },
    promptInjection: {
      ...actions(raw.promptInjection, d.promptInjection),
      phrases: Object.freeze([...phrases]),
    },
  });
}

/** Whether any detector acts on `direction`. */
export function actsOn(config: EffectiveGuardrails, direction: keyof DirectionActions): boolean {
  return DETECTOR_NAMES.some((name) => config[name][direction] !== 'off');
}

/** One line for the runner's log and status: which detector does what (no values). */
export function describeGuardrails(config: EffectiveGuardrails): string {
  if (!config.enabled) return 'guardrails off';
  const parts = DETECTOR_NAMES.map((name) => {
    const a = config[name];
    return `${name}: results ${a.results}, arguments ${a.arguments}`;
  });
  const limit = `answers inspected up to ${config.maxInspectBytes} bytes`;
  return `guardrails: ${parts.join('; ')}; ${limit}`;
}
