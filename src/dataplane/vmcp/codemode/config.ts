/**
 * `codeMode` (the reference's `CodeModeConfig`): its settings with the reference's defaults.
 */
import { goDurationMs, SkepError } from '../../../shared/index.js';
import type { VmcpConfig } from '../../../schemas/index.js';

type CodeModeConfig = NonNullable<VmcpConfig['codeMode']>;

export const CODE_MODE_DEFAULTS = {
  stepLimit: 100_000,
  parallelMaxConcurrency: 10,
  toolCallTimeoutMs: 30_000,
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
  throw new SkepError(
    'unsupported_field',
    `${what}.codeMode is not supported by this build: code mode (execute_tool_script) is not implemented yet; remove it`,
  );
}

export function toolCallTimeoutOf(raw: CodeModeConfig): number {
  return raw.toolCallTimeout === undefined
    ? CODE_MODE_DEFAULTS.toolCallTimeoutMs
    : (goDurationMs(raw.toolCallTimeout) ?? CODE_MODE_DEFAULTS.toolCallTimeoutMs);
}
