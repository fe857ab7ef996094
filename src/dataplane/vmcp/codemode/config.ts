/**
 * `codeMode` (the reference's `CodeModeConfig`): its settings with the reference's defaults. The
 * script sandbox is `sandbox.ts`.
 */
import { goDurationMs, SkepError } from '../../../shared/index.js';
import type { VmcpConfig } from '../../../schemas/index.js';

type CodeModeConfig = NonNullable<VmcpConfig['codeMode']>;

export const CODE_MODE_DEFAULTS = {
  stepLimit: 100_000,
  parallelMaxConcurrency: 10,
  toolCallTimeoutMs: 30_000,
  /** A script's wall-clock bound (the reference's fixed one minute). */
  scriptTimeoutMs: 60_000,
  /** The sandbox's heap. */
  memoryLimitBytes: 64 * 1024 * 1024,
} as const;

export interface CodeModeSettings {
  readonly stepLimit: number;
  readonly parallelMaxConcurrency: number;
  readonly toolCallTimeoutMs: number;
}

/** Undefined unless `enabled` is true; a field set while disabled is refused (it would do nothing). */
export function resolveCodeMode(raw: CodeModeConfig | undefined, what: string): CodeModeSettings | undefined {
  if (raw === undefined) return undefined;
  if (raw.enabled !== true) {
    const set = Object.keys(raw).filter((k) => k !== 'enabled');
    if (set.length > 0)
      throw new SkepError(
        'invalid_config',
        `${what}.codeMode: ${set.join(', ')} ha${set.length === 1 ? 's' : 've'} no effect while enabled is not true; set enabled: true or remove ${set.length === 1 ? 'it' : 'them'}`,
      );
    return undefined;
  }
  let toolCallTimeoutMs: number = CODE_MODE_DEFAULTS.toolCallTimeoutMs;
  if (raw.toolCallTimeout !== undefined) {
    const ms = goDurationMs(raw.toolCallTimeout) ?? 0;
    if (!(ms > 0))
      throw new SkepError(
        'invalid_config',
        `${what}.codeMode.toolCallTimeout must be a positive duration such as "30s"`,
      );
    toolCallTimeoutMs = ms;
  }
  return {
    stepLimit: raw.stepLimit ?? CODE_MODE_DEFAULTS.stepLimit,
    parallelMaxConcurrency: raw.parallelMaxConcurrency ?? CODE_MODE_DEFAULTS.parallelMaxConcurrency,
    toolCallTimeoutMs,
  };
}
