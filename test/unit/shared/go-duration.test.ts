import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseGoDuration } from '../../../src/shared/index.js';

test('Go durations: every unit, fractions and several parts add up in ms', () => {
  assert.equal(parseGoDuration('1h30m'), 5_400_000);
  assert.equal(parseGoDuration('1.5s'), 1500);
  assert.equal(parseGoDuration('250ms'), 250);
  assert.equal(parseGoDuration('2m3s'), 123_000);
  assert.equal(parseGoDuration('1500us'), 1.5);
  assert.equal(parseGoDuration('1000µs'), 1);
  assert.equal(parseGoDuration('2000000ns'), 2);
});

test('not a Go duration: undefined', () => {
  for (const text of ['', '10', '10 minutes', '1h ', ' 1h', '1d', '-1s', 'h', '1h30']) {
    assert.equal(parseGoDuration(text), undefined, text);
  }
});
