// The SSE outlets' event log: numbering and what a Last-Event-ID can replay (the outlets on
// real HTTP responses: test/integration/proxy/outlets.test.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EventLog } from '../../../src/dataplane/proxy/outlets.js';

test('EventLog numbers events, keeps the last N, and says when a gap cannot be filled', () => {
  const log = new EventLog(2, '7-');
  assert.equal(log.append('a'), 'id: 7-1\nevent: message\ndata: a\n\n');
  log.append('b');
  log.append('c');
  assert.deepEqual(log.after(1), {
    frames: ['id: 7-2\nevent: message\ndata: b\n\n', 'id: 7-3\nevent: message\ndata: c\n\n'],
    complete: true,
  });
  assert.equal(log.after(0).complete, false, 'event 1 was dropped');
  assert.deepEqual(log.after(3), { frames: [], complete: true });
  assert.equal(log.after(4).complete, false, 'an id from the future');
});
