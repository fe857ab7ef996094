/**
 * `rate_limit_config` (ToolHive's JSON shape), parsed once into a frozen object:
 * `shared` and `perUser` buckets for the whole server, and `tools[]` entries with their own
 * `shared` / `perUser` buckets. A bucket holds `maxTokens` (its capacity and burst) and
 * refills from empty to full in `refillPeriod`, a Go duration string (`"1m0s"`, `"30s"`,
 * `"1h30m"`). The shape is checked by the generated validator of `RateLimitConfigSchema`
 * (src/schemas/rate-limit.ts); the reference's CRD rules JSON Schema cannot state are checked
 * here, since Skep has no CRD: at least one bucket, each tool entry with one, tool names unique.
 */
import { validateRateLimitConfig, validationProblem } from '../../../schemas/validators/index.js';
import { goDurationNs, isRecord, SkepError } from '../../../shared/index.js';

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

/** What the schema lets through (a bucket's values are checked, its period not yet read). */
interface RawBucket {
  readonly maxTokens: number;
  readonly refillPeriod: string;
}
interface RawConfig {
  readonly shared?: RawBucket;
  readonly perUser?: RawBucket;
  readonly tools?: readonly {
    readonly name: string;
    readonly shared?: RawBucket;
    readonly perUser?: RawBucket;
  }[];
}

export interface RateLimitConfig {
  readonly shared?: BucketLimit;
  readonly perUser?: BucketLimit;
  readonly tools: readonly ToolLimit[];
}

function bad(message: string): never {
  throw new SkepError('invalid_config', message);
}

/** ToolHive's JSON writes an absent field as null: drop null members, at every depth. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (!isRecord(value)) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, v]) => v !== null)
      .map(([k, v]) => [k, withoutNulls(v)]),
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

function bucketLimit(bucket: RawBucket, field: string): BucketLimit {
  return Object.freeze({
    maxTokens: bucket.maxTokens,
    refillPeriodMs: parseRefillPeriod(bucket.refillPeriod, `${field}.refillPeriod`),
  });
}

/** True when a `rate_limit_config` asks for nothing (absent, `{}`, `{tools: []}`). */
export function isEmptyRateLimitConfig(value: unknown): boolean {
  if (value === undefined || value === null) return true;
  if (typeof value !== 'object' || Array.isArray(value)) return false;
  return Object.entries(value).every(
    ([, v]) => v === undefined || v === null || (Array.isArray(v) && v.length === 0),
  );
}

/**
 * Parses `rate_limit_config`; `invalid_config` naming the field on any mistake. The schema
 * (`RateLimitConfigSchema`) checks the shape; the CRD rules it cannot state follow, each named.
 */
export function parseRateLimitConfig(value: unknown, field = 'rate_limit_config'): RateLimitConfig {
  const raw = withoutNulls(value);
  const problem = validationProblem(validateRateLimitConfig, raw, field);
  if (problem !== undefined) bad(problem);
  const config = raw as RawConfig;
  const shared = config.shared === undefined ? undefined : bucketLimit(config.shared, `${field}.shared`);
  const perUser = config.perUser === undefined ? undefined : bucketLimit(config.perUser, `${field}.perUser`);
  const seen = new Set<string>();
  const tools = (config.tools ?? []).map((entry, i): ToolLimit => {
    const where = `${field}.tools[${i}]`;
    // Rule: tool names are unique (ToolHive's CRD: listType map keyed by name).
    if (seen.has(entry.name)) bad(`${where}.name "${entry.name}" is listed twice; give each tool one entry`);
    seen.add(entry.name);
    // Rule: a tool entry names at least one bucket.
    if (entry.shared === undefined && entry.perUser === undefined)
      bad(`${where} ("${entry.name}") needs shared or perUser`);
    return Object.freeze({
      name: entry.name,
      ...(entry.shared === undefined ? {} : { shared: bucketLimit(entry.shared, `${where}.shared`) }),
      ...(entry.perUser === undefined ? {} : { perUser: bucketLimit(entry.perUser, `${where}.perUser`) }),
    });
  });
  // Rule: the configuration limits something.
  if (shared === undefined && perUser === undefined && tools.length === 0)
    bad(`${field} needs at least one of shared, perUser or a non-empty tools list`);
  return Object.freeze({
    tools: Object.freeze(tools),
    ...(shared === undefined ? {} : { shared }),
    ...(perUser === undefined ? {} : { perUser }),
  });
}
