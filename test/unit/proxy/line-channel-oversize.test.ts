/**
 * A stdio line longer than the proxy reads of one message is dropped, and reported once it
 * ends with its length and both ends (where a response writes its `id`, first or last), so
 * the request it answers can be told instead of waiting; the lines after it still arrive.
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { LineChannel, oversizedAnswer } from '../../../src/dataplane/proxy/line-channel.js';

function channel(max: number) {
  const stdout = new PassThrough();
  const lines: string[] = [];
  const dropped: { length: number; head: string; tail: string }[] = [];
  const got = new Promise<void>((resolve) => {
    new LineChannel(new PassThrough(), stdout, max, {
      onLine: (line) => {
        lines.push(line);
        if (line === 'after') resolve();
      },
      onOversize: (length, edges) => dropped.push({ length, ...edges }),
      onClosed: () => {},
    });
  });
  return { stdout, lines, dropped, got };
}

test('a line over the limit, written in pieces: dropped, reported with its length and both ends', async () => {
  const { stdout, lines, dropped, got } = channel(1000);
  const body = `{"result":{"text":"${'x'.repeat(3000)}"},"jsonrpc":"2.0","id":"p-7"}`;
  for (let i = 0; i < body.length; i += 700) stdout.write(body.slice(i, i + 700));
  stdout.write('\r\nafter\n');
  await got;
  assert.deepEqual(lines, ['after']);
  assert.equal(dropped.length, 1);
  assert.equal(dropped[0]?.length, body.length + 1, 'the CR counts');
  assert.equal(dropped[0]?.head, body.slice(0, 256));
  assert.ok(dropped[0]?.tail.endsWith('"jsonrpc":"2.0","id":"p-7"}'), 'the id at the end is kept, CR cut');
  assert.equal(dropped[0]?.tail, body.slice(-255), 'the last 256 characters, less the CR');
});

test('a line over the limit in one chunk is reported the same way', async () => {
  const { stdout, dropped, got } = channel(100);
  stdout.write(`{"jsonrpc":"2.0","id":"p-1","result":"${'y'.repeat(500)}"}\nafter\n`);
  await got;
  assert.equal(dropped.length, 1);
  assert.ok(dropped[0]?.head.startsWith('{"jsonrpc":"2.0","id":"p-1"'));
});

test('oversizedAnswer: a JSON-RPC internal error for the id, naming the limit', () => {
  assert.deepEqual(JSON.parse(oversizedAnswer(4, 2048)), {
    jsonrpc: '2.0',
    id: 4,
    error: {
      code: -32603,
      message:
        "The server's answer is larger than 2048 bytes, the most the proxy reads of one message (maxUpstreamMessageBytes); it was not relayed",
      data: { maxUpstreamMessageBytes: 2048 },
    },
  });
});
