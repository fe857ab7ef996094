/**
 * A client registered for a group that one of its own virtual workloads
 * serves gets one entry, the virtual endpoint, instead of one per server; the virtual
 * workload's `clientEntries: all` keeps every entry. Other groups are unaffected.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientDefinition, desiredEntries } from '../../../src/clients/index.js';
import { running } from '../clients/harness.js';

const cursor = clientDefinition('cursor');
const team = (name: string, port: number, extra = {}) =>
  running(name, port, Object.assign({ group: 'team' }, extra));

test('a group served by its virtual workload: the client gets only the virtual endpoint', () => {
  const entries = desiredEntries(
    cursor,
    [
      team('alpha', 7001),
      team('beta', 7002),
      team('hub', 7003, { virtual: { serves: 'team', clientEntries: 'virtual' } }),
      running('solo', 7004),
    ],
    new Set(['team', 'default']),
  );
  assert.deepEqual([...entries.keys()].sort(), ['hub', 'solo']);
  assert.deepEqual(entries.get('hub'), { url: 'http://localhost:7003/mcp', type: 'http' });
});

test('clientEntries all: the virtual endpoint besides every server; a stopped virtual workload changes nothing', () => {
  const all = desiredEntries(
    cursor,
    [team('alpha', 7001), team('hub', 7003, { virtual: { serves: 'team', clientEntries: 'all' } })],
    new Set(['team']),
  );
  assert.deepEqual([...all.keys()].sort(), ['alpha', 'hub']);
  const stopped = desiredEntries(
    cursor,
    [
      team('alpha', 7001),
      team('hub', 7003, { status: 'stopped', virtual: { serves: 'team', clientEntries: 'virtual' } }),
    ],
    new Set(['team']),
  );
  assert.deepEqual([...stopped.keys()], ['alpha']);
  // A virtual workload in `team` serving another group does not replace team's entries.
  const other = desiredEntries(
    cursor,
    [team('alpha', 7001), team('hub', 7003, { virtual: { serves: 'elsewhere', clientEntries: 'virtual' } })],
    new Set(['team']),
  );
  assert.deepEqual([...other.keys()].sort(), ['alpha', 'hub']);
});
