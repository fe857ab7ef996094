/**
 * The proxy's Content-Type test: a plain string check of the media type,
 * RFC 9110 §8.3.1 (case-insensitive type/subtype, parameters after `;`).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hasMediaType } from '../../../src/dataplane/proxy/http-util.js';

test('RFC 9110 §8.3.1: application/json with any case and parameters is JSON', () => {
  for (const value of [
    'application/json',
    'application/json; charset=utf-8',
    'application/json;charset=UTF-8',
    'Application/JSON',
    ' application/json ; charset=utf-8',
  ])
    assert.equal(hasMediaType(value, 'application/json'), true, value);
});

test('anything else is not JSON: simple-request types, near misses, suffixes, nothing', () => {
  for (const value of [
    undefined,
    '',
    'text/plain',
    'text/plain; charset=application/json',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'text/json',
    'application/jsonp',
    'application/json-seq',
    'application/vnd.api+json',
    'application/json2;application/json',
    'application /json',
  ])
    assert.equal(hasMediaType(value, 'application/json'), false, String(value));
});

test('text/event-stream is recognised the same way (relayed bodies)', () => {
  assert.equal(hasMediaType('text/event-stream', 'text/event-stream'), true);
  assert.equal(hasMediaType('Text/Event-Stream; charset=utf-8', 'text/event-stream'), true);
  assert.equal(hasMediaType('text/html', 'text/event-stream'), false);
});

test('ProxyResponse: every head carries nosniff once, however it is written, shared header objects stay as they were, and a declared length is read back', async () => {
  const { createServer } = await import('node:http');
  const { declaredLength, ProxyResponse } = await import('../../../src/dataplane/proxy/http-util.js');
  const shared = Object.freeze({ 'content-type': 'text/event-stream' });
  const writers: Record<string, (res: import('node:http').ServerResponse) => void> = {
    '/object': (res) =>
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '2' }).end('{}'),
    '/message-and-object': (res) => res.writeHead(404, 'Gone', { 'content-type': 'application/json' }).end(),
    '/shared-constant': (res) => res.writeHead(200, shared).end(),
    '/implicit': (res) => res.end('x'),
    '/set-then-head': (res) => {
      res.setHeader('content-type', 'text/plain');
      res.writeHead(201);
      res.end();
    },
    '/raw-array': (res) => res.writeHead(200, ['content-type', 'text/plain']).end(),
    '/already-set': (res) => res.writeHead(200, { 'x-content-type-options': 'nosniff' }).end(),
    '/set-length': (res) => {
      res.setHeader('content-length', '3');
      res.writeHead(200).end('abc');
    },
  };
  // What the middlewares record as the answer's size: given to writeHead, or set before it.
  const lengths: Record<string, number | undefined> = {};
  const server = createServer({ ServerResponse: ProxyResponse }, (req, res) => {
    writers[req.url!]!(res);
    if (['/object', '/implicit', '/set-length', '/shared-constant'].includes(req.url!))
      lengths[req.url!] = declaredLength(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as import('node:net').AddressInfo;
    for (const path of Object.keys(writers)) {
      const res = await fetch(`http://127.0.0.1:${port}${path}`);
      await res.arrayBuffer();
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', path);
    }
    const raw = await new Promise<string>((resolve, reject) => {
      import('node:net').then(({ connect }) => {
        const socket = connect(port, '127.0.0.1', () =>
          socket.end('GET /already-set HTTP/1.1\r\nHost: x\r\n\r\n'),
        );
        let text = '';
        socket.on('data', (d: Buffer) => (text += d.toString()));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      }, reject);
    });
    assert.equal(raw.match(/x-content-type-options/gi)?.length, 1, 'a head that has it gets no second one');
    assert.deepEqual(lengths, {
      '/object': 2,
      '/implicit': undefined,
      '/set-length': 3,
      '/shared-constant': undefined,
    });
    assert.deepEqual(Object.keys(shared), ['content-type']);
  } finally {
    server.close();
  }
});
