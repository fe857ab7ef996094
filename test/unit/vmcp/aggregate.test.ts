/**
 * Aggregation (ToolHive's vMCP rules), pure: deterministic ties by workload name whatever the
 * input order (⚠ the reference iterates a map), collisions after prefixing, prompt collisions
 * dropping every colliding prompt, resource URIs never rewritten (first backend by name wins),
 * template routing by the longest literal prefix.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { aggregate, type BackendLists, routeResource } from '../../../src/dataplane/vmcp/aggregate.js';
import { parseVmcpConfig } from '../../../src/dataplane/vmcp/index.js';

const backend = (name: string, tools: string[], extra: Partial<BackendLists> = {}): BackendLists =>
  Object.assign(
    {
      name,
      tools: tools.map((t) => ({ name: t, inputSchema: { type: 'object' } })),
      prompts: [],
      resources: [],
      templates: [],
    },
    extra,
  );

test('priority without the winner listed prefixes everyone; ties are the same in any input order', () => {
  const config = parseVmcpConfig({
    aggregation: { conflictResolution: 'priority', conflictResolutionConfig: { priorityOrder: ['zeta'] } },
  });
  const a = aggregate([backend('beta', ['x', 'y']), backend('alpha', ['x']), backend('zeta', ['y'])], config);
  const b = aggregate([backend('zeta', ['y']), backend('alpha', ['x']), backend('beta', ['x', 'y'])], config);
  assert.deepEqual(a.tools, b.tools);
  assert.deepEqual(
    a.tools.map((t) => t['name']),
    ['alpha_x', 'beta_x', 'beta_y', 'y'],
  );
  assert.deepEqual(a.toolRoutes.get('y'), { backend: 'zeta', original: 'y' });
});

test('a collision after prefixing keeps the first backend by name and reports it', () => {
  // "a" + "_b_x" and "a_b" + "_x" both become "a_b_x".
  const config = parseVmcpConfig({});
  const out = aggregate([backend('a_b', ['x']), backend('a', ['b_x'])], config);
  assert.deepEqual(out.toolRoutes.get('a_b_x'), { backend: 'a', original: 'b_x' });
  assert.equal(out.problems.length, 1);
});

test('prompts: every colliding prompt is dropped; resources keep their URIs, first backend wins', () => {
  const config = parseVmcpConfig({
    aggregation: { conflictResolution: 'priority', conflictResolutionConfig: { priorityOrder: ['a', 'b'] } },
  });
  const out = aggregate(
    [
      backend('b', [], {
        prompts: [{ name: 'p' }],
        resources: [{ uri: 'file:///same' }, { uri: 'file:///b' }],
        templates: [{ uriTemplate: 'db://b/{table}' }],
      }),
      backend('a', [], {
        prompts: [{ name: 'p' }],
        resources: [{ uri: 'file:///same' }],
        templates: [{ uriTemplate: 'db://{any}' }],
      }),
    ],
    config,
  );
  // Under priority both listed backends keep bare prompt names; a wins the conflict.
  assert.deepEqual(
    out.prompts.map((p) => p['name']),
    ['p'],
  );
  assert.deepEqual(out.promptRoutes.get('p'), { backend: 'a', original: 'p' });
  assert.deepEqual(
    out.resources.map((r) => r['uri']),
    ['file:///same', 'file:///b'],
  );
  assert.equal(out.resourceRoutes.get('file:///same')?.backend, 'a');
  assert.equal(routeResource(out, 'db://b/users')?.backend, 'b');
  assert.equal(routeResource(out, 'db://other')?.backend, 'a');
});

test('prefix with overrides: the override renames before resolution and routes to the original', () => {
  const config = parseVmcpConfig({
    aggregation: {
      conflictResolutionConfig: { prefixOnlyConflicts: true },
      tools: [{ workload: 'a', overrides: { x: { name: 'y', annotations: { readOnlyHint: true } } } }],
    },
  });
  const out = aggregate([backend('a', ['x']), backend('b', ['y'])], config);
  assert.deepEqual(
    out.tools.map((t) => t['name']),
    ['a_y', 'b_y'],
  );
  assert.deepEqual(out.toolRoutes.get('a_y'), { backend: 'a', original: 'x' });
  assert.deepEqual(out.tools[0]?.['annotations'], { readOnlyHint: true });
});
