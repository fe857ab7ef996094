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

test('tools_override annotations: set over the tool’s own field by field; an annotations-only override counts', () => {
  const policy = createToolPolicy(undefined, {
    read: { annotations: { readOnlyHint: true, title: 'Read a file' } },
    write: { name: 'save', annotations: { destructiveHint: false } },
    delete: { annotations: {} },
  });
  assert.equal(policy.passthrough, false);
  const result = {
    tools: [
      { name: 'read', description: 'r', annotations: { readOnlyHint: false, openWorldHint: true } },
      { name: 'write', description: 'w', annotations: 'not an object' },
      { name: 'delete', description: 'd', annotations: { destructiveHint: true } },
    ],
  };
  policy.applyToList(result);
  assert.deepEqual(result.tools, [
    {
      name: 'read',
      description: 'r',
      annotations: { readOnlyHint: true, openWorldHint: true, title: 'Read a file' },
    },
    // A server's malformed annotations are replaced: the list stays valid for the client.
    { name: 'save', description: 'w', annotations: { destructiveHint: false } },
    // An empty override changes nothing.
    { name: 'delete', description: 'd', annotations: { destructiveHint: true } },
  ]);
  assert.equal(policy.resolveCall('read'), 'read');
  assert.equal(policy.resolveCall('save'), 'write');
  assert.equal(createToolPolicy(undefined, { read: { annotations: {} } }).passthrough, true);
});

test('two tools renamed to the same name is a configuration error', () => {
  assert.throws(() => createToolPolicy(undefined, { a: { name: 'x' }, b: { name: 'x' } }), /two tools/);
});

test('JSON depth guard counts nesting outside strings only', () => {
  assert.equal(jsonDepthExceeds(`{"a":${'['.repeat(10)}${']'.repeat(10)}}`, 8), true);
  assert.equal(jsonDepthExceeds(`{"a":"${'['.repeat(100)}"}`, 8), false);
  assert.equal(jsonDepthExceeds('{"a":[1,[2]]}', 8), false);
});
