/**
 * `rate_limit_config` parsing (ToolHive's shape): the exact JSON shape, Go
 * duration strings for `refillPeriod`, the CRD rules Skep enforces itself, and `invalid_config`
 * errors that name the field.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  isEmptyRateLimitConfig,
  parseRateLimitConfig,
  parseRefillPeriod,
} from '../../../src/dataplane/middleware/ratelimit/index.js';
import { isSkepError } from '../../../src/shared/index.js';

/** Asserts `fn` throws `bad_request` whose message matches `pattern`. */
function refused(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(isSkepError(err), String(err));
    assert.equal(err.code, 'invalid_config');
    assert.match(err.message, pattern);
    return true;
  });
}

test('the reference example parses; periods in ms, frozen', () => {
  const config = parseRateLimitConfig({
    shared: { maxTokens: 100, refillPeriod: '1m0s' },
    perUser: { maxTokens: 10, refillPeriod: '30s' },
    tools: [
      {
        name: 'expensive_search',
        shared: { maxTokens: 5, refillPeriod: '1m0s' },
        perUser: { maxTokens: 1, refillPeriod: '10s' },
      },
    ],
  });
  assert.deepEqual(config, {
    shared: { maxTokens: 100, refillPeriodMs: 60_000 },
    perUser: { maxTokens: 10, refillPeriodMs: 30_000 },
    tools: [
      {
        name: 'expensive_search',
        shared: { maxTokens: 5, refillPeriodMs: 60_000 },
        perUser: { maxTokens: 1, refillPeriodMs: 10_000 },
      },
    ],
  });
  assert.ok(Object.isFrozen(config) && Object.isFrozen(config.tools) && Object.isFrozen(config.shared));
  // A tools-only configuration is enough.
  assert.deepEqual(
    parseRateLimitConfig({ tools: [{ name: 'x', perUser: { maxTokens: 2, refillPeriod: '1s' } }] }),
    {
      tools: [{ name: 'x', perUser: { maxTokens: 2, refillPeriodMs: 1000 } }],
    },
  );
});

test('refillPeriod is any time.ParseDuration form, > 0', () => {
  const cases: [string, number][] = [
    ['1m0s', 60_000],
    ['30s', 30_000],
    ['1h30m', 5_400_000],
    ['1.5s', 1500],
    ['250ms', 250],
    ['2h', 7_200_000],
    ['1m30.5s', 90_500],
    ['1500us', 1.5],
  ];
  for (const [text, ms] of cases) assert.equal(parseRefillPeriod(text, 'f'), ms, text);
  refused(() => parseRefillPeriod('0s', 'f.refillPeriod'), /^f\.refillPeriod must be greater than 0/);
  refused(() => parseRefillPeriod('0', 'f.refillPeriod'), /greater than 0/);
  refused(() => parseRefillPeriod('-1m', 'f.refillPeriod'), /greater than 0/);
  refused(
    () => parseRefillPeriod('1 minute', 'f.refillPeriod'),
    /^f\.refillPeriod "1 minute" is not a duration; write e\.g\. "1m0s"/,
  );
  refused(() => parseRefillPeriod('60', 'f.refillPeriod'), /is not a duration/);
  refused(
    () => parseRefillPeriod(60_000_000_000, 'f.refillPeriod'),
    /^f\.refillPeriod must be a duration string/,
  );
  refused(() => parseRefillPeriod({ duration: '1m' }, 'f.refillPeriod'), /must be a duration string/);
});

test('CRD rules: errors name the field', () => {
  const ok = { maxTokens: 1, refillPeriod: '1s' };
  const cases: [unknown, RegExp][] = [
    [{}, /^rate_limit_config needs at least one of shared, perUser or a non-empty tools list/],
    [{ tools: [] }, /needs at least one of shared, perUser/],
    ['100/m', /^rate_limit_config must be an object/],
    [{ shared: ok, burst: 3 }, /^rate_limit_config: unknown key burst \(known: shared, perUser, tools\)/],
    [{ shared: { ...ok, capacity: 2 } }, /^rate_limit_config\.shared: unknown key capacity/],
    [{ shared: { refillPeriod: '1s' } }, /^rate_limit_config\.shared\.maxTokens is required/],
    [
      { perUser: { maxTokens: 0, refillPeriod: '1s' } },
      /^rate_limit_config\.perUser\.maxTokens must be an integer from 1 to 2147483647 \(got 0\)/,
    ],
    [{ perUser: { maxTokens: 1.5, refillPeriod: '1s' } }, /perUser\.maxTokens must be an integer/],
    [{ perUser: { maxTokens: 2 ** 31, refillPeriod: '1s' } }, /perUser\.maxTokens must be an integer/],
    [{ perUser: { maxTokens: '5', refillPeriod: '1s' } }, /perUser\.maxTokens must be an integer/],
    [{ shared: { maxTokens: 5 } }, /^rate_limit_config\.shared\.refillPeriod is required/],
    [
      { shared: { maxTokens: 5, refillPeriod: '0s' } },
      /^rate_limit_config\.shared\.refillPeriod must be greater than 0/,
    ],
    [{ shared: [ok] }, /^rate_limit_config\.shared must be an object/],
    [{ tools: { name: 'x' } }, /^rate_limit_config\.tools must be a list/],
    [{ tools: [{ shared: ok }] }, /^rate_limit_config\.tools\[0\]\.name is required/],
    [{ tools: [{ name: 'x' }] }, /^rate_limit_config\.tools\[0\] \("x"\) needs shared or perUser/],
    [{ tools: [{ name: 'x', shared: ok, limit: 1 }] }, /^rate_limit_config\.tools\[0\]: unknown key limit/],
    [
      {
        tools: [
          { name: 'x', shared: ok },
          { name: 'x', perUser: ok },
        ],
      },
      /^rate_limit_config\.tools\[1\]\.name "x" is listed twice/,
    ],
    [
      { tools: [{ name: 'x', perUser: { maxTokens: 1, refillPeriod: 'soon' } }] },
      /^rate_limit_config\.tools\[0\]\.perUser\.refillPeriod "soon" is not a duration/,
    ],
  ];
  for (const [value, pattern] of cases) refused(() => parseRateLimitConfig(value), pattern);
});

test('an empty configuration asks for nothing (the run configuration’s default)', () => {
  for (const v of [undefined, null, {}, { tools: [] }, { shared: null }])
    assert.equal(isEmptyRateLimitConfig(v), true);
  for (const v of [{ shared: {} }, { tools: [{}] }, 'x']) assert.equal(isEmptyRateLimitConfig(v), false);
});
