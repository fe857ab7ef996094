/**
 * The run configuration's `allowed_origins` rule, which JSON Schema cannot state: every entry
 * is an exact browser origin (`scheme://host[:port]`); a path, a wildcard or `null` is refused
 * by name. Checked on create, update and import, and by the `origin` middleware's parameters.
 */
import { normalizeOrigin } from '../shared/index.js';

/**
 * Why an `allowed_origins` entry is not an exact origin, or undefined for a good list. An
 * origin is what browsers send in the `Origin` header (RFC 6454 §6.1): scheme, host and an
 * optional port; nothing else.
 */
export function allowedOriginsProblem(values: readonly string[]): string | undefined {
  for (const value of values) {
    const problem = originProblem(value);
    if (problem !== undefined) return `allowed_origins: '${value}' ${problem}`;
  }
  return undefined;
}

function originProblem(value: string): string | undefined {
  if (value.includes('*')) return 'is a pattern; list each origin exactly (e.g. https://app.example.com)';
  if (value.trim().toLowerCase() === 'null')
    return 'is the opaque origin of sandboxed and file: pages, which any page can claim; it is never accepted';
  const origin = normalizeOrigin(value);
  if (origin === undefined)
    return 'is not an http(s) origin; write scheme://host[:port] (e.g. https://app.example.com)';
  const url = new URL(value);
  // URL accepts a path, query or fragment; an Origin header never carries one.
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '' || value.trimEnd().endsWith('/'))
    return `has more than an origin; write '${origin}'`;
  return undefined;
}
