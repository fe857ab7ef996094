import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JitMap } from '../../../bench/lib/jit-map.js';

describe('JitMap (V8 perf map, for the cpu bench)', () => {
  it('names an address by the code that holds it, and nothing outside every range', () => {
    const map = JitMap.parse('1000 100 JS:*a file:///x.mjs:1:1\n2000 10 Builtin:B\n');
    assert.equal(map.lookup(0x1000), 'JS:*a file:///x.mjs:1:1');
    assert.equal(map.lookup(0x10ff), 'JS:*a file:///x.mjs:1:1');
    assert.equal(map.lookup(0x1100), undefined);
    assert.equal(map.lookup(0xfff), undefined);
    assert.equal(map.lookup(0x2005), 'Builtin:B');
    assert.equal(map.lookup(0x2010), undefined);
  });

  it('lets a later line replace every earlier one whose range it overlaps', () => {
    const map = JitMap.parse(
      [
        '1000 100 JS:~old1', // freed, then overlapped by `new` below
        '1100 100 JS:~old2', // likewise
        '1200 100 JS:~kept', // after `new`'s end: not overlapped
        '0f00 100 JS:~before', // ends where old1 starts
        '1080 100 JS:*new',
      ].join('\n'),
    );
    assert.equal(map.lookup(0x1000), undefined, 'the part of old1 that new does not cover is gone too');
    assert.equal(map.lookup(0x1080), 'JS:*new');
    assert.equal(map.lookup(0x117f), 'JS:*new');
    assert.equal(map.lookup(0x1180), undefined);
    assert.equal(map.lookup(0x1200), 'JS:~kept');
    assert.equal(map.lookup(0xf80), 'JS:~before');
    assert.equal(map.size, 3);
  });

  it('keeps the later of two lines at one address, and skips lines that do not parse', () => {
    const map = JitMap.parse('1000 40 JS:~first\nnot a line\n1000 0 JS:~empty\n1000 40 JS:*second\n');
    assert.equal(map.lookup(0x1010), 'JS:*second');
    assert.equal(map.size, 1);
  });
});
