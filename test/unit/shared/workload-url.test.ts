/** The one workload URL shared by the workload engine and client registration. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { workloadUrl } from '../../../src/shared/index.js';

test('workload URL: /mcp for streamable-http, /sse#name for sse (reference shape)', () => {
  assert.equal(
    workloadUrl({ host: '127.0.0.1', port: 20001, name: 'a', transport: 'streamable-http' }),
    'http://127.0.0.1:20001/mcp',
  );
  assert.equal(
    workloadUrl({ host: '127.0.0.1', port: 20001, name: 'a', transport: 'sse' }),
    'http://127.0.0.1:20001/sse#a',
  );
  assert.equal(
    workloadUrl({ host: '127.0.0.1', port: 20001, name: 'a', transport: undefined }),
    'http://127.0.0.1:20001/mcp',
  );
});

test('workload URL: no host is localhost; a wildcard bind is reached on 127.0.0.1; IPv6 takes brackets', () => {
  assert.equal(
    workloadUrl({ port: 4101, name: 'w1', transport: 'streamable-http' }),
    'http://localhost:4101/mcp',
  );
  for (const host of ['', '0.0.0.0', '::', '[::]'])
    assert.equal(
      workloadUrl({ host, port: 1, name: 'a', transport: 'sse' }),
      'http://127.0.0.1:1/sse#a',
      host,
    );
  assert.equal(workloadUrl({ host: '::1', port: 2, name: 'a', transport: 'x' }), 'http://[::1]:2/mcp');
  assert.equal(workloadUrl({ host: '[::1]', port: 2, name: 'a', transport: 'x' }), 'http://[::1]:2/mcp');
});

test('workload URL: the SSE fragment escapes the name', () => {
  assert.equal(
    workloadUrl({ port: 6005, name: 'odd name', transport: 'sse' }),
    'http://localhost:6005/sse#odd%20name',
  );
});
