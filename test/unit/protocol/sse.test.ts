import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jsonEvents, readSse, SseDecoder, type SseEvent } from '../../../src/protocol/index.js';

/** The events of `chunks` fed one by one, and the retry times seen. */
function decode(chunks: (string | Uint8Array)[]): { events: SseEvent[]; retries: number[] } {
  const events: SseEvent[] = [];
  const retries: number[] = [];
  const decoder = new SseDecoder({ onEvent: (e) => events.push(e), onRetry: (ms) => retries.push(ms) });
  for (const chunk of chunks) decoder.push(chunk);
  decoder.end();
  return { events, retries };
}

const datas = (chunks: (string | Uint8Array)[]): string[] => decode(chunks).events.map((e) => e.data);

test('HTML "Interpreting an event stream": CRLF line ends end lines and events', () => {
  assert.deepEqual(datas(['data: one\r\n\r\ndata: two\r\n\r\n']), ['one', 'two']);
});

test('HTML "Interpreting an event stream": a lone CR ends a line', () => {
  assert.deepEqual(datas(['data: one\r\rdata: two\r\r']), ['one', 'two']);
});

test('HTML "Interpreting an event stream": a CRLF split between chunks is one line end', () => {
  assert.deepEqual(datas(['data: one\r', '\n\r', '\ndata: two\n\n']), ['one', 'two']);
});

test('HTML "Interpreting an event stream": data lines of one event are joined with LF', () => {
  assert.deepEqual(datas(['data: {"a":\ndata: 1}\n\n']), ['{"a":\n1}']);
  // One leading space after the colon is dropped, no more.
  assert.deepEqual(datas(['data:x\ndata:  y\n\n']), ['x\n y']);
});

test('HTML "Interpreting an event stream": comment lines are ignored', () => {
  assert.deepEqual(datas([': keep-alive\n\n: hi\ndata: real\n\n']), ['real']);
});

test('event and id fields are reported with the data; retry is reported apart', () => {
  const { events, retries } = decode(['retry: 1500\n\nid: 7\nevent: message\ndata: x\n\n']);
  assert.deepEqual(events, [{ id: '7', event: 'message', data: 'x' }]);
  assert.deepEqual(retries, [1500]);
});

test('a line split mid-field across chunks is put back together', () => {
  assert.deepEqual(datas(['da', 'ta: hel', 'lo\n', '\n']), ['hello']);
});

test('a UTF-8 character split across byte chunks is decoded whole', () => {
  const bytes = new TextEncoder().encode('data: é€\n\n');
  // Cut inside the two-byte é and inside the three-byte €.
  assert.deepEqual(datas([bytes.slice(0, 7), bytes.slice(7, 10), bytes.slice(10)]), ['é€']);
});

test('HTML "Interpreting an event stream": an event the stream ends inside is dropped', () => {
  assert.deepEqual(datas(['data: done\n\ndata: cut']), ['done']);
  // The line ended (CR) but the event did not: no blank line follows.
  assert.deepEqual(datas(['data: done\r\rdata: cut\r']), ['done']);
  // A CR that ends the stream closes the event its blank line belongs to.
  assert.deepEqual(datas(['data: last\r', '\r']), ['last']);
});

test('a pending event larger than maxBufferSize stops the decoder and says so', () => {
  const events: SseEvent[] = [];
  let overflowed = 0;
  const decoder = new SseDecoder(
    { onEvent: (e) => events.push(e), onOverflow: () => overflowed++ },
    { maxBufferSize: 16 },
  );
  decoder.push('data: small\n\n');
  decoder.push(`data: ${'x'.repeat(64)}`);
  decoder.push('\n\ndata: after\n\n');
  assert.deepEqual(
    events.map((e) => e.data),
    ['small'],
  );
  assert.equal(overflowed, 1);
});

test('readSse yields the events of an async body as they complete', async () => {
  async function* body(): AsyncGenerator<Uint8Array> {
    const enc = new TextEncoder();
    yield enc.encode('data: a\r\n');
    yield enc.encode('\r\ndata: b\r');
    yield enc.encode('\r');
  }
  const seen: string[] = [];
  for await (const e of readSse(body())) seen.push(e.data);
  assert.deepEqual(seen, ['a', 'b']);
});

test('readSse fails when an event outgrows maxBufferSize', async () => {
  async function* body(): AsyncGenerator<string> {
    yield `data: ${'x'.repeat(64)}`;
  }
  await assert.rejects(async () => {
    for await (const _ of readSse(body(), { maxBufferSize: 8 })) assert.fail('no event expected');
  }, /buffer limit/);
});

test('jsonEvents parses each data as JSON and skips keep-alives and malformed data', () => {
  const seen: unknown[] = [];
  const decoder = new SseDecoder({ onEvent: jsonEvents((m) => seen.push(m)) });
  decoder.push('data: {"id":1}\n\ndata:\n\ndata: not json\n\ndata: [2]\n\n');
  assert.deepEqual(seen, [{ id: 1 }, [2]]);
});
