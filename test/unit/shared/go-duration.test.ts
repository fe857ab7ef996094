import assert from 'node:assert/strict';
import { test } from 'node:test';
import { goDurationMs, goDurationNs } from '../../../src/shared/index.js';

test('Go durations: every unit, fractions and several parts add up in ms', () => {
  assert.equal(goDurationMs('1h30m'), 5_400_000);
  assert.equal(goDurationMs('1.5s'), 1500);
  assert.equal(goDurationMs('250ms'), 250);
  assert.equal(goDurationMs('2m3s'), 123_000);
  assert.equal(goDurationMs('1500us'), 1.5);
  assert.equal(goDurationMs('1000µs'), 1);
  assert.equal(goDurationMs('2000000ns'), 2);
});

test('Go durations in ns: the same text, 10⁶ times the ms', () => {
  assert.equal(goDurationNs('1h2m3.5s'), 3_723_500_000_000);
  assert.equal(goDurationNs('250us'), 250_000);
  assert.equal(goDurationNs('250μs'), 250_000);
  assert.equal(goDurationNs('1.5s'), goDurationMs('1.5s')! * 1e6);
});

test('Go time.ParseDuration: a sign, a bare 0 and a fraction without leading digit', () => {
  assert.equal(goDurationMs('-1s'), -1000);
  assert.equal(goDurationMs('+2s'), 2000);
  assert.equal(goDurationMs('0'), 0);
  assert.equal(goDurationMs('.5s'), 500);
});

test('not a Go duration: undefined', () => {
  for (const text of ['', '10', '10 minutes', '1h ', ' 1h', '1d', '--1s', 'h', '1h30', '1.s.5']) {
    assert.equal(goDurationMs(text), undefined, text);
    assert.equal(goDurationNs(text), undefined, text);
  }
});
