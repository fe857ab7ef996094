/** The one workload URL shared by the workload engine and client registration. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ProxyEndpoint, workloadUrl } from '../../../src/shared/index.js';

const CASES: [what: string, endpoint: ProxyEndpoint, url: string][] = [
  // ToolHive's shapes: /mcp for streamable HTTP, /sse#<name> for SSE.
  [
    'streamable-http',
    { host: '127.0.0.1', port: 20001, name: 'a', transport: 'streamable-http' },
    'http://127.0.0.1:20001/mcp',
  ],
  ['sse', { host: '127.0.0.1', port: 20001, name: 'a', transport: 'sse' }, 'http://127.0.0.1:20001/sse#a'],
  [
    'no transport',
    { host: '127.0.0.1', port: 20001, name: 'a', transport: undefined },
    'http://127.0.0.1:20001/mcp',
  ],
  [
    'no host: localhost',
    { port: 4101, name: 'w1', transport: 'streamable-http' },
    'http://localhost:4101/mcp',
  ],
  ['empty host', { host: '', port: 1, name: 'a', transport: 'sse' }, 'http://127.0.0.1:1/sse#a'],
  ['IPv4 wildcard', { host: '0.0.0.0', port: 1, name: 'a', transport: 'sse' }, 'http://127.0.0.1:1/sse#a'],
  ['IPv6 wildcard', { host: '::', port: 1, name: 'a', transport: 'sse' }, 'http://127.0.0.1:1/sse#a'],
  [
    'bracketed IPv6 wildcard',
    { host: '[::]', port: 1, name: 'a', transport: 'sse' },
    'http://127.0.0.1:1/sse#a',
  ],
  [
    'IPv6 literal (RFC 3986 §3.2.2)',
    { host: '::1', port: 2, name: 'a', transport: 'x' },
    'http://[::1]:2/mcp',
  ],
  [
    'access token in the query, before the SSE fragment',
    { host: '127.0.0.1', port: 3, name: 'a', transport: 'sse', accessToken: 'ab12' },
    'http://127.0.0.1:3/sse?skep_token=ab12#a',
  ],
  [
    'access token on the streamable-HTTP endpoint',
    { host: '127.0.0.1', port: 3, name: 'a', transport: 'streamable-http', accessToken: 'ab12' },
    'http://127.0.0.1:3/mcp?skep_token=ab12',
  ],
  ['bracketed IPv6 literal', { host: '[::1]', port: 2, name: 'a', transport: 'x' }, 'http://[::1]:2/mcp'],
  [
    'escaped SSE fragment',
    { port: 6005, name: 'odd name', transport: 'sse' },
    'http://localhost:6005/sse#odd%20name',
  ],
];

test('workload URL: host, transport and name as clients and the engine report them', () => {
  for (const [what, endpoint, url] of CASES) assert.equal(workloadUrl(endpoint), url, what);
});
