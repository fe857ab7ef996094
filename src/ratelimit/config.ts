/**
 * `rate_limit_config` (ToolHive's JSON shape), parsed once into a frozen object:
 * `shared` and `perUser` buckets for the whole server, and `tools[]` entries with their own
 * `shared` / `perUser` buckets. A bucket holds `maxTokens` (its capacity and burst) and
 * refills from empty to full in `refillPeriod`, a Go duration string (`"1m0s"`, `"30s"`,
 * `"1h30m"`). The reference's CRD rules are enforced here, since Skep has no CRD: at least
 * one bucket, each tool entry with one, tool names unique; unknown keys are refused.
 */
import { goDurationNs, SkepError } from '../shared/index.js';

export interface BucketLimit {
  /** Capacity, and so the largest burst: int32 ≥ 1. */
  readonly maxTokens: number;
  /** Time to refill from 0 to `maxTokens`, ms (> 0). */
  readonly refillPeriodMs: number;
}

export interface ToolLimit {
  readonly name: string;
  readonly shared?: BucketLimit;
  readonly perUser?: BucketLimit;
}

export interface RateLimitConfig {
  readonly shared?: BucketLimit;
  readonly perUser?: BucketLimit;
  readonly tools: readonly ToolLimit[];
}

const INT32_MAX = 2 ** 31 - 1;
const TOP_KEYS = ['shared', 'perUser', 'tools'];
const BUCKET_KEYS = ['maxTokens', 'refillPeriod'];
const TOOL_KEYS = ['name', 'shared', 'perUser'];

function bad(message: string): never {
  throw new SkepError('bad_request', message);
}

function objectAt(value: unknown, field: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) bad(`${field} must be an object`);
  return value as Record<string, unknown>;
}

function refuseUnknown(obj: Record<string, unknown>, known: readonly string[], field: string): void {
  const unknown = Object.keys(obj).filter((k) => !known.includes(k));
  if (unknown.length > 0)
    bad(
      `${field}: unknown key${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} (known: ${known.join(', ')})`,
    );
}

/** A Go duration string (`time.ParseDuration`) > 0, in ms. */
export function parseRefillPeriod(value: unknown, field: string): number {
  if (typeof value !== 'string') bad(`${field} must be a duration string such as "1m0s", "30s" or "1h30m"`);
  const nanos = goDurationNs(value.trim());
  if (nanos === undefined) bad(`${field} "${value}" is not a duration; write e.g. "1m0s", "30s" or "1h30m"`);
  if (!(nanos > 0)) bad(`${field} must be greater than 0 (got "${value}")`);
  return nanos / 1e6;
}

function parseBucket(value: unknown, field: string): BucketLimit {
  const obj = objectAt(value, field);
  refuseUnknown(obj, BUCKET_KEYS, field);
  const max = obj['maxTokens'];
  if (max === undefined || max === null) bad(`${field}.maxTokens is required (an integer ≥ 1)`);
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 1 || max > INT32_MAX)
    bad(`${field}.maxTokens must be an integer from 1 to ${INT32_MAX} (got ${JSON.stringify(max)})`);
  if (obj['refillPeriod'] === undefined || obj['refillPeriod'] === null)
    bad(`${field}.refillPeriod is required (a duration such as "1m0s")`);
  return Object.freeze({
    maxTokens: max,
    refillPeriodMs: parseRefillPeriod(obj['refillPeriod'], `${field}.refillPeriod`),
  });
}

function optionalBucket(obj: Record<string, unknown>, key: string, field: string): BucketLimit | undefined {
  const v = obj[key];
  return v === undefined || v === null ? undefined : parseBucket(v, `${field}.${key}`);
}

/** True when a `rate_limit_config` asks for nothing (absent, `{}`, `{tools: []}`). */
export function isEmptyRateLimitConfig(value: unknown): boolean {
  if (value === undefined || value === null) return true;
  if (typeof value !== 'object' || Array.isArray(value)) return false;
  return Object.entries(value).every(
    ([, v]) => v === undefined || v === null || (Array.isArray(v) && v.length === 0),
  );
}

/** Parses `rate_limit_config`; `bad_request` naming the field on any mistake. */
export function parseRateLimitConfig(value: unknown, field = 'rate_limit_config'): RateLimitConfig {
  const obj = objectAt(value, field);
  refuseUnknown(obj, TOP_KEYS, field);
  const shared = optionalBucket(obj, 'shared', field);
  const perUser = optionalBucket(obj, 'perUser', field);
  const rawTools = obj['tools'] ?? [];
  if (!Array.isArray(rawTools)) bad(`${field}.tools must be a list`);
  const seen = new Set<string>();
  const tools = rawTools.map((raw, i): ToolLimit => {
    const where = `${field}.tools[${i}]`;
    const entry = objectAt(raw, where);
    refuseUnknown(entry, TOOL_KEYS, where);
    const name = entry['name'];
    if (typeof name !== 'string' || name === '') bad(`${where}.name is required (the tool's name)`);
    if (seen.has(name)) bad(`${where}.name "${name}" is listed twice; give each tool one entry`);
    seen.add(name);
    const toolShared = optionalBucket(entry, 'shared', where);
    const toolPerUser = optionalBucket(entry, 'perUser', where);
    if (toolShared === undefined && toolPerUser === undefined)
      bad(`${where} ("${name}") needs shared or perUser`);
    return Object.freeze({
      name,
      ...(toolShared === undefined ? {} : { shared: toolShared }),
      ...(toolPerUser === undefined ? {} : { perUser: toolPerUser }),
    });
  });
  if (shared === undefined && perUser === undefined && tools.length === 0)
    bad(`${field} needs at least one of shared, perUser or a non-empty tools list`);
  return Object.freeze({
    tools: Object.freeze(tools),
    ...(shared === undefined ? {} : { shared }),
    ...(perUser === undefined ? {} : { perUser }),
  });
}
