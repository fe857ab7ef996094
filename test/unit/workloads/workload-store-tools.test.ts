/**
 * The tool names a runner reports on its workload's row: unset until reported, written only by
 * the registered runner of a workload that serves, and forgotten when it stops or fails.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openStore } from '../../../src/store/index.js';
import { parseRunConfig, WorkloadStore } from '../../../src/workloads/index.js';

function storeWithWorkload(): { rows: WorkloadStore; close: () => void } {
  const store = openStore(':memory:');
  const rows = new WorkloadStore(store);
  assert.equal(
    rows.insert(parseRunConfig({ name: 'w', image: 'npx://x', port: 20001 }), 'starting', 'running'),
    'ok',
  );
  rows.setStatus('w', { status: 'starting', runnerPid: 42 });
  return { rows, close: () => store.close() };
}

test('tools: unset until the registered runner reports them', (t) => {
  const { rows, close } = storeWithWorkload();
  t.after(close);
  assert.equal(rows.get('w')?.tools, undefined);
  assert.equal(rows.setToolsFromRunner('w', 7, ['a']), false, 'another runner');
  assert.equal(rows.get('w')?.tools, undefined);
  assert.equal(rows.setToolsFromRunner('w', 42, ['echo', 'add']), true);
  assert.deepEqual(rows.get('w')?.tools, ['echo', 'add']);
  assert.deepEqual(rows.list()[0]?.tools, ['echo', 'add']);
  // A restart in progress keeps them; the next report replaces them.
  rows.setStatusFromRunner('w', 42, { status: 'starting', context: 'restarting' });
  assert.deepEqual(rows.get('w')?.tools, ['echo', 'add']);
  assert.equal(rows.setToolsFromRunner('w', 42, []), true);
  assert.deepEqual(rows.get('w')?.tools, []);
});

test('tools: a stop or a failure forgets them, and a late report does not bring them back', (t) => {
  const { rows, close } = storeWithWorkload();
  t.after(close);
  rows.setToolsFromRunner('w', 42, ['echo']);
  rows.setStatusFromRunner('w', 42, { status: 'stopped' });
  assert.equal(rows.get('w')?.tools, undefined);
  assert.equal(rows.setToolsFromRunner('w', 42, ['echo']), false);
  assert.equal(rows.get('w')?.tools, undefined);

  rows.setStatus('w', { status: 'running', runnerPid: 43 });
  rows.setToolsFromRunner('w', 43, ['echo']);
  rows.setStatus('w', { status: 'error', context: 'gave up' });
  assert.equal(rows.get('w')?.tools, undefined);
});
