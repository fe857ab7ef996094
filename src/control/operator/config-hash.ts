/**
 * `status.configHash`: a stable hash of the canonicalized spec (keys sorted at every level,
 * arrays kept in order), so equal specs hash equally whatever the key order the API server
 * returns, and any change of a field — defaulted ones included — changes the hash.
 */
import { createHash } from 'node:crypto';

export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** First 16 hex characters of SHA-256 over the canonical spec. */
export function configHash(spec: unknown): string {
  return createHash('sha256')
    .update(canonicalJson(spec ?? {}))
    .digest('hex')
    .slice(0, 16);
}
