/**
 * `rate_limit_config` (ToolHive's JSON shape, its CRD rules included): `shared` and `perUser`
 * buckets for the whole server, and `tools[]` entries with their own buckets. A bucket holds
 * `maxTokens` (its capacity and burst, int32 ≥ 1) and refills from empty to full in
 * `refillPeriod`, a Go duration string. Unknown keys are refused. `x-errors` gives the message
 * for a failed keyword (`{value}`: the value as written, `{json}`: as JSON), read by
 * `validators/format.ts`. The rules JSON Schema cannot state (a bucket at all, one per tool,
 * unique tool names, a refill period > 0) are in `src/dataplane/middleware/ratelimit/config.ts`.
 * The run configuration's `rate_limit_config` is this schema.
 */
import { Type } from 'typebox';
import { Opt } from './shorthand.js';

const INT32_MAX = 2 ** 31 - 1;
const MAX_TOKENS_RANGE = `must be an integer from 1 to ${INT32_MAX} (got {json})`;
// Go's time.ParseDuration syntax (a sign, decimal numbers each with a unit, or a bare 0); the
// parser trims the value, so surrounding blanks are allowed here too.
const GO_DURATION = '^\\s*(?:[+-]?(?:(?:\\d+\\.?\\d*|\\.\\d+)(?:ns|us|µs|μs|ms|s|m|h))+|[+-]?0)\\s*$';

/**
 * One bucket. Embedded by value, not by `$id` reference, so that the run configuration, the
 * API's serializer and the OpenAPI document need no schema registry; scripts/gen-validators.mjs
 * still compiles it into one function, called for each of its four places.
 */
export const RateLimitBucketSchema = Type.Object(
  {
    maxTokens: Type.Integer({
      minimum: 1,
      maximum: INT32_MAX,
      'x-errors': {
        required: 'is required (an integer ≥ 1)',
        type: MAX_TOKENS_RANGE,
        minimum: MAX_TOKENS_RANGE,
        maximum: MAX_TOKENS_RANGE,
      },
    }),
    refillPeriod: Type.String({
      pattern: GO_DURATION,
      'x-errors': {
        required: 'is required (a duration such as "1m0s")',
        type: 'must be a duration string such as "1m0s", "30s" or "1h30m"',
        pattern: '"{value}" is not a duration; write e.g. "1m0s", "30s" or "1h30m"',
      },
    }),
  },
  { additionalProperties: false },
);
const ToolLimit = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      'x-errors': { required: "is required (the tool's name)", minLength: "is required (the tool's name)" },
    }),
    shared: Opt(RateLimitBucketSchema),
    perUser: Opt(RateLimitBucketSchema),
  },
  { additionalProperties: false },
);

export const RateLimitConfigSchema = Type.Object(
  {
    shared: Opt(RateLimitBucketSchema),
    perUser: Opt(RateLimitBucketSchema),
    tools: Opt(Type.Array(ToolLimit)),
  },
  { additionalProperties: false },
);
