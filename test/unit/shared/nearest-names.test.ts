import assert from 'node:assert/strict';
import { test } from 'node:test';
import { didYouMean, editDistance, nearestNames } from '../../../src/shared/index.js';

test('edit distance counts insertions, deletions, substitutions and neighbour swaps', () => {
  assert.equal(editDistance('everythin', 'everything', 3), 1);
  assert.equal(editDistance('fecth', 'fetch', 3), 1);
  assert.equal(editDistance('github', 'gitlab', 3), 2);
  assert.equal(editDistance('abc', 'abc', 0), 0);
  // Past the limit it stops early and says limit + 1.
  assert.equal(editDistance('a', 'abcdefgh', 2), 3);
  assert.equal(editDistance('kitten', 'sitting', 1), 2);
});

test('close names come first, a namespaced name matches on its short name, far ones never', () => {
  const catalog = [
    'io.github.modelcontextprotocol/everything',
    'fetch',
    'filesystem',
    'github',
    'gitlab',
    'time',
  ];
  assert.deepEqual(nearestNames('everythin', catalog), ['io.github.modelcontextprotocol/everything']);
  // Equally close: alphabetical. Otherwise the closest first.
  assert.deepEqual(nearestNames('gitlub', catalog), ['github', 'gitlab']);
  assert.deepEqual(nearestNames('githb', catalog), ['github', 'gitlab']);
  assert.deepEqual(nearestNames('FETC', catalog), ['fetch']);
  assert.deepEqual(nearestNames('zzzzzzzz', catalog), []);
  // The exact name is not a suggestion for itself.
  assert.deepEqual(nearestNames('time', ['time']), []);
  assert.equal(nearestNames('a', ['b', 'c', 'd', 'e']).length, 3);
});

test('the message lists one, two or more names', () => {
  assert.equal(didYouMean([]), '');
  assert.equal(didYouMean(['fetch']), '; did you mean fetch?');
  assert.equal(didYouMean(['github', 'gitlab']), '; did you mean github or gitlab?');
  assert.equal(didYouMean(['a', 'b', 'c']), '; did you mean a, b or c?');
});
