/**
 * `skep mcp call`'s argument parsing and its text rendering of a tool result
 * (MCP 2025-11-25 "Server Features / Tools / Tool Result").
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeToolResult, parseToolArgs } from '../../../src/control/cli/actions/mcp.js';
import { UsageError } from '../../../src/control/cli/errors.js';

test('--arg k=v: JSON when the value parses, else the text as typed', () => {
  assert.deepEqual(
    parseToolArgs([
      'n=3',
      'flag=true',
      'o={"a":1}',
      'list=[1,2]',
      'nothing=null',
      'message=hi there',
      'q="3"',
      'eq=a=b',
      'empty=',
    ]),
    {
      n: 3,
      flag: true,
      o: { a: 1 },
      list: [1, 2],
      nothing: null,
      message: 'hi there',
      q: '3',
      eq: 'a=b',
      empty: '',
    },
  );
  assert.deepEqual(parseToolArgs(['k=1', 'k=2']), { k: 2 }, 'the last one wins');
  assert.throws(() => parseToolArgs(['message']), UsageError);
  assert.throws(() => parseToolArgs(['=v']), UsageError);
});

test('MCP 2025-11-25 tool result: text as is, other content named with its type and size', () => {
  assert.equal(
    describeToolResult({
      content: [
        { type: 'text', text: 'Echo: hi' },
        { type: 'image', mimeType: 'image/png', data: 'AAAA' },
        { type: 'audio', mimeType: 'audio/wav', data: 'AAAAAAAA' },
        { type: 'resource_link', uri: 'file:///a.txt', name: 'a' },
        { type: 'resource', resource: { uri: 'mem://x', mimeType: 'text/plain', text: 'inside' } },
        { type: 'resource', resource: { uri: 'mem://y', blob: 'AAAA' } },
        { type: 'future' },
      ],
    }),
    [
      'Echo: hi',
      '[image image/png, 3 bytes]',
      '[audio audio/wav, 6 bytes]',
      '[resource link file:///a.txt (a)]',
      '[resource mem://x text/plain]',
      'inside',
      '[resource mem://y, 3 bytes]',
      '[future content]',
    ].join('\n'),
  );
  assert.equal(describeToolResult({ content: [], structuredContent: { sum: 5 } }), '{\n  "sum": 5\n}');
  assert.equal(describeToolResult({}), '');
});
