/** The sandbox relays' listener: close() stops listening, cuts tracked streams, and is idempotent. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { test } from 'node:test';
import { listenRelay, TrackedStreams } from '../../../src/dataplane/runtime/sandbox/listener.js';

test('close() cuts a stream still open, stops listening, and returns the same promise when called again', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skep-listener-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'relay.sock');
  const streams = new TrackedStreams();
  const accepted: Socket[] = [];
  const server = createServer((socket) => {
    streams.add(socket);
    accepted.push(socket);
    socket.write('hello');
  });
  const relay = await listenRelay(server, { path }, streams);

  const client = connect(path);
  client.on('error', () => undefined);
  const [greeting] = (await once(client, 'data')) as [Buffer];
  assert.equal(greeting.toString(), 'hello');
  assert.equal(accepted.length, 1);

  const closedByRelay = once(client, 'close');
  const first = relay.close();
  assert.equal(relay.close(), first, 'idempotent: one close');
  await first;
  await closedByRelay;
  assert.equal(accepted[0]?.destroyed, true);
  assert.equal(server.listening, false);

  const late = connect(path);
  const [err] = (await once(late, 'error')) as [NodeJS.ErrnoException];
  assert.match(err.code ?? '', /ENOENT|ECONNREFUSED/);
});

test('listenRelay rejects when the address cannot be listened on', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skep-listener-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'missing', 'relay.sock');
  await assert.rejects(listenRelay(createServer(), { path }, new TrackedStreams()), /ENOENT|EACCES/);
});
