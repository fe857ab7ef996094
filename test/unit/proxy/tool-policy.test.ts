import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jsonDepthExceeds } from '../../../src/protocol/index.js';
import { createToolPolicy } from '../../../src/dataplane/proxy/tool-policy.js';

const list = () => ({
  tools: [
    { name: 'read', description: 'r' },
    { name: 'write', description: 'w' },
    { name: 'delete', description: 'd' },
  ],
});

test('tools_filter: only listed tools are listed and callable', () => {
  const policy = createToolPolicy(['read', 'write'], undefined);
  const result = list();
  policy.applyToList(result);
  assert.deepEqual(
    result.tools.map((t) => t.name),
    ['read', 'write'],
  );
  assert.equal(policy.resolveCall('read'), 'read');
  assert.equal(policy.resolveCall('delete'), undefined);
});

test('tools_override: renamed tools are listed and called by the new name only', () => {
  const policy = createToolPolicy(undefined, {
    delete: { name: 'remove', description: 'Removes a file' },
    read: { description: 'Reads' },
  });
  const result = list();
  policy.applyToList(result);
  assert.deepEqual(result.tools, [
    { name: 'read', description: 'Reads' },
    { name: 'write', description: 'w' },
    { name: 'remove', description: 'Removes a file' },
  ]);
  assert.equal(policy.resolveCall('remove'), 'delete');
  assert.equal(policy.resolveCall('delete'), undefined);
  assert.equal(policy.resolveCall('read'), 'read');
});

test('filter names may be the original or the overridden name; empty config passes through', () => {
  const policy = createToolPolicy(['remove'], { delete: { name: 'remove' } });
  assert.equal(policy.resolveCall('remove'), 'delete');
  assert.equal(createToolPolicy(['delete'], { delete: { name: 'remove' } }).resolveCall('remove'), 'delete');
  assert.equal(createToolPolicy([], {}).passthrough, true);
});

test('two tools renamed to the same name is a configuration error', () => {
  assert.throws(() => createToolPolicy(undefined, { a: { name: 'x' }, b: { name: 'x' } }), /two tools/);
});

test('JSON depth guard counts nesting outside strings only', () => {
  assert.equal(jsonDepthExceeds(`{"a":${'['.repeat(10)}${']'.repeat(10)}}`, 8), true);
  assert.equal(jsonDepthExceeds(`{"a":"${'['.repeat(100)}"}`, 8), false);
  assert.equal(jsonDepthExceeds('{"a":[1,[2]]}', 8), false);
});
