/**
 * The stdio bridge's channel to an in-process server (a virtual MCP session): the proxy's
 * messages reach the server whole, in order, in a microtask (never inside the `send` that
 * sent them), as the very objects sent (nothing is serialised) or, for a text the bridge
 * composed, parsed once; the server's messages reach the bridge as sent; one larger than the
 * proxy reads of a message is refused with its ends; the end is reported once, and nothing is
 * delivered after it; a server that throws ends the channel instead of crashing the proxy.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InProcessChannel } from '../../../src/dataplane/proxy/in-process-channel.js';
import type { InProcessPeer, InProcessServer } from '../../../src/dataplane/proxy/index.js';
import type { JsonRpcMessage } from '../../../src/protocol/index.js';

/** A server that records what it gets and lets the test speak for it. */
function fakeServer(onMessage: (message: JsonRpcMessage) => void = () => {}) {
  const got: JsonRpcMessage[] = [];
  let peer: InProcessPeer | undefined;
  const server: InProcessServer = {
    connect(p) {
      peer = p;
      return (message) => {
        got.push(message);
        onMessage(message);
      };
    },
  };
  return { server, got, peer: () => peer! };
}

function open(server: InProcessServer, max = 1000) {
  const lines: string[] = [];
  const dropped: { length: number; head: string; tail: string }[] = [];
  const closed: string[] = [];
  const channel = new InProcessChannel(server, max, {
    onLine: (line) => lines.push(line),
    onOversize: (length, edges) => dropped.push({ length, ...edges }),
    onClosed: (reason) => closed.push(reason),
  });
  return { channel, lines, dropped, closed };
}

const call = (id: number): JsonRpcMessage => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'x' },
});

test('the proxy’s messages reach the server whole and in order, after the sending call returns', async () => {
  const s = fakeServer();
  const { channel } = open(s.server);
  const first = call(1);
  assert.equal(channel.sendMessage(first), true);
  assert.equal(channel.send('{"jsonrpc":"2.0","method":"notifications/initialized"}'), true);
  assert.equal(channel.sendMessage(call(3)), true);
  assert.deepEqual(s.got, [], 'nothing is delivered inside send');
  assert.equal(channel.buffered, 0, 'nothing waits for a reader: there is no backlog to limit');
  await Promise.resolve();
  assert.deepEqual(s.got, [call(1), { jsonrpc: '2.0', method: 'notifications/initialized' }, call(3)]);
  assert.equal(s.got[0], first, 'a message object is handed over as it is, not copied');
});

test('the server’s messages reach the bridge as sent; an oversized one is refused with its ends', () => {
  const s = fakeServer();
  const { lines, dropped } = open(s.server, 100);
  s.peer().message('{"jsonrpc":"2.0","id":"p-1","result":{}}');
  assert.deepEqual(lines, ['{"jsonrpc":"2.0","id":"p-1","result":{}}']);
  const big = `{"jsonrpc":"2.0","id":"p-2","result":"${'x'.repeat(600)}"}`;
  s.peer().message(big);
  assert.equal(lines.length, 1, 'the oversized message is not relayed');
  assert.deepEqual(dropped, [{ length: big.length, head: big.slice(0, 256), tail: big.slice(-256) }]);
});

test('the end is reported once; after it nothing is delivered either way, and send says so', async () => {
  const s = fakeServer();
  const { channel, lines, closed } = open(s.server);
  channel.sendMessage(call(1));
  s.peer().closed('the virtual MCP session ended');
  s.peer().closed('again');
  assert.deepEqual(closed, ['the virtual MCP session ended']);
  assert.deepEqual(s.got, [call(1)], 'what was sent before the end still reached the server');
  assert.equal(channel.sendMessage(call(2)), false);
  assert.equal(channel.send('{"jsonrpc":"2.0","method":"ping","id":9}'), false);
  s.peer().message('{"id":"late"}');
  await Promise.resolve();
  assert.deepEqual(s.got, [call(1)]);
  assert.deepEqual(lines, []);
});

test('detach: what was sent before goes to the server, then the channel is silent', async () => {
  const s = fakeServer();
  const { channel, lines, closed } = open(s.server);
  channel.sendMessage(call(1));
  channel.detach();
  assert.deepEqual(s.got, [call(1)]);
  s.peer().message('{"id":"after"}');
  await Promise.resolve();
  assert.deepEqual(lines, []);
  assert.deepEqual(closed, [], 'a detach is the bridge’s own doing: no end is reported to it');
});

test('a server that throws on a message ends the channel with the reason; later messages are not delivered', async () => {
  const s = fakeServer((m) => {
    if (m.method === 'boom') throw new Error('kaput');
  });
  const { channel, closed } = open(s.server);
  channel.sendMessage({ jsonrpc: '2.0', id: 1, method: 'boom' });
  channel.sendMessage(call(3));
  await Promise.resolve();
  assert.deepEqual(closed, ['the in-process server failed: kaput']);
  assert.deepEqual(s.got, [{ jsonrpc: '2.0', id: 1, method: 'boom' }]);
});

test('a server that ends while it is connected: the end is reported once the channel exists', async () => {
  const server: InProcessServer = {
    connect(peer) {
      peer.closed('gone at once');
      return () => assert.fail('nothing is delivered to a server that ended');
    },
  };
  const { channel, closed } = open(server);
  assert.deepEqual(closed, [], 'not inside the constructor');
  await Promise.resolve();
  assert.deepEqual(closed, ['gone at once']);
  assert.equal(channel.sendMessage(call(1)), false);
});
