/** The shared body reader: the limit holds for a declared length and for a body that grows. */
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { BodyTooLargeError, readBody } from '../../../src/shared/index.js';

function request(headers: Record<string, string>, chunks: string[]): IncomingMessage {
  const stream = new PassThrough();
  for (const chunk of chunks) stream.write(chunk);
  stream.end();
  return Object.assign(stream, { headers }) as unknown as IncomingMessage;
}

test('readBody: joins the chunks of a body within the limit', async () => {
  assert.equal(await readBody(request({}, ['{"a":', '"é"}']), 64), '{"a":"é"}');
  assert.equal(await readBody(request({}, []), 64), '');
});

test('readBody: a declared Content-Length over the limit is refused before reading', async () => {
  await assert.rejects(readBody(request({ 'content-length': '65' }, ['x']), 64), BodyTooLargeError);
});

test('readBody: a body that grows past the limit is refused', async () => {
  await assert.rejects(readBody(request({}, ['x'.repeat(40), 'y'.repeat(40)]), 64), (err: unknown) => {
    assert.ok(err instanceof BodyTooLargeError);
    assert.equal(err.message, 'request body too large');
    return true;
  });
});
