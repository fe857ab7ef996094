/**
 * The `tools/call` argument summary on spans (`gen_ai.tool.call.arguments`, legacy
 * `mcp.tool.arguments`; as ToolHive's telemetry middleware writes it): `k=v, k=v`, a value over 100
 * characters cut with `...`, the whole string at most 200 characters, and any key that looks like a
 * credential replaced by `[REDACTED]`. Keys come in the order the client sent them (the reference's
 * map iteration makes its order random).
 */

/** Substrings of a key (compared in lower case) whose value is never recorded. */
export const SENSITIVE_KEY_PARTS = [
  'password',
  'token',
  'secret',
  'key',
  'auth',
  'credential',
  'api_key',
  'access_token',
  'refresh_token',
  'private',
] as const;

export const MAX_ARGUMENT_VALUE = 100;
export const MAX_ARGUMENTS_SUMMARY = 200;

export function isSensitiveKey(key: string): boolean {
  const lower = key.toLowerCase();
  for (const part of SENSITIVE_KEY_PARTS) if (lower.includes(part)) return true;
  return false;
}

function valueText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'object') {
    try {
      return JSON.stringify(value);
    } catch {
      return '[unserializable]';
    }
  }
  return String(value);
}

export function summarizeArguments(args: Readonly<Record<string, unknown>>): string {
  let out = '';
  for (const key in args) {
    if (!Object.hasOwn(args, key)) continue;
    let value = isSensitiveKey(key) ? '[REDACTED]' : valueText(args[key]);
    if (value.length > MAX_ARGUMENT_VALUE) value = `${value.slice(0, MAX_ARGUMENT_VALUE)}...`;
    out += out === '' ? `${key}=${value}` : `, ${key}=${value}`;
    if (out.length > MAX_ARGUMENTS_SUMMARY) break;
  }
  return out.length > MAX_ARGUMENTS_SUMMARY ? `${out.slice(0, MAX_ARGUMENTS_SUMMARY - 3)}...` : out;
}
