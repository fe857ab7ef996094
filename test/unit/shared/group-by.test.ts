import assert from 'node:assert/strict';
import { test } from 'node:test';
import { groupBy } from '../../../src/shared/index.js';

test('groupBy: keys in order of first appearance, values in the order the items came', () => {
  const rows = [
    { client: 'codex', group: 'default' },
    { client: 'codex', group: 'team' },
    { client: 'cursor', group: 'team' },
    { client: 'vscode', group: 'default' },
  ];
  const byGroup = groupBy(
    rows,
    (r) => r.group,
    (r) => r.client,
  );
  assert.deepEqual(
    [...byGroup],
    [
      ['default', ['codex', 'vscode']],
      ['team', ['codex', 'cursor']],
    ],
  );
  const byClient = groupBy(
    rows,
    (r) => r.client,
    (r) => r.group,
  );
  assert.deepEqual([...byClient.keys()], ['codex', 'cursor', 'vscode']);
  assert.deepEqual(byClient.get('codex'), ['default', 'team']);
});

test('groupBy: no items, no groups', () => {
  assert.equal(groupBy([], String, String).size, 0);
});
