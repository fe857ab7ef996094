/**
 * The proxy reads only JSON (a page can send `text/plain` without a CORS preflight): a POST to an
 * MCP endpoint whose Content-Type is not `application/json` is a 415 with a JSON-RPC error body and
 * reaches no server — a stdio server (the recording fixture's file stays empty) and an HTTP server
 * in transparent mode (it receives nothing) alike. Those are the types a page of any origin can
 * POST without a CORS preflight. MCP clients (SDK 1.x and 2.x) send `application/json` and keep
 * working.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as StreamableV2,
} from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RunningProxy } from '../../../src/dataplane/proxy/index.js';
import { proxyFor, spawnRecorder, startHttpUpstream, statelessWriteFile } from './helpers.js';

const ACCEPT = 'application/json, text/event-stream';

/** Content types a browser sends cross-origin without a preflight, and near misses. */
const REFUSED: Array<string | undefined> = [
  'text/plain',
  'text/plain;charset=UTF-8',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  undefined,
  '',
  'text/json',
  'application/jsonx',
  'application/json-seq',
  'application/vnd.api+json',
  'application/json2; x=application/json',
];

function post(url: string, body: string, type: string | undefined): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    // fetch adds text/plain to a string body unless a type is given; a Blob without a type
    // sends no Content-Type at all.
    headers: { accept: ACCEPT, ...(type === undefined ? {} : { 'content-type': type }) },
    body: type === undefined ? new Blob([body]) : body,
  });
}

async function assert415(res: Response, what: string): Promise<void> {
  assert.equal(res.status, 415, what);
  assert.equal(res.headers.get('content-type'), 'application/json', what);
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff', what);
  const body = (await res.json()) as { jsonrpc: string; id: null; error: { code: number; message: string } };
  assert.equal(body.jsonrpc, '2.0', what);
  assert.equal(body.id, null, what);
  assert.equal(body.error.code, -32600, what);
  assert.match(body.error.message, /Content-Type: application\/json/, what);
}

async function recorderProxy(t: TestContext): Promise<{ proxy: RunningProxy; calls: () => string[] }> {
  const { child, calls } = spawnRecorder(t);
  return { proxy: await proxyFor(t, child), calls };
}

test('F3: a stdio server never sees a POST to /mcp that is not application/json (415, JSON-RPC error)', async (t) => {
  const { proxy, calls } = await recorderProxy(t);
  for (const type of REFUSED)
    await assert415(await post(`${proxy.url}/mcp`, statelessWriteFile('pwned'), type), `type ${type}`);
  assert.deepEqual(calls(), [], 'no refused call reached the server');

  // The same body as application/json is a working call: the refusals were about the type.
  for (const type of [
    'application/json',
    'application/json; charset=utf-8',
    'Application/JSON ;charset=UTF-8',
  ]) {
    const ok = await post(`${proxy.url}/mcp`, statelessWriteFile(type), type);
    assert.equal(ok.status, 200, type);
    await ok.text();
  }
  assert.deepEqual(calls(), [
    'application/json',
    'application/json; charset=utf-8',
    'Application/JSON ;charset=UTF-8',
  ]);
});

test('F3: the legacy /messages endpoint refuses a non-JSON POST for a live SSE session', async (t) => {
  const { proxy, calls } = await recorderProxy(t);
  const stream = await fetch(`${proxy.url}/sse`, { headers: { accept: 'text/event-stream' } });
  assert.equal(stream.status, 200);
  assert.equal(stream.headers.get('x-content-type-options'), 'nosniff');
  const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
  t.after(() => reader.cancel());
  let text = '';
  while (!/data: (\S+)\n/.test(text)) {
    const { value, done } = await reader.read();
    if (done) throw new Error('the SSE stream ended before the endpoint event');
    text += new TextDecoder().decode(value);
  }
  const endpoint = /data: (\S+)\n/.exec(text)?.[1] as string;
  const call = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'write_file', arguments: { text: 'pwned' } },
  });
  const init = JSON.stringify({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 't', version: '1' } },
  });
  assert.equal((await post(`${proxy.url}${endpoint}`, init, 'application/json')).status, 202);
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', undefined])
    await assert415(await post(`${proxy.url}${endpoint}`, call, type), `type ${type}`);
  assert.equal(
    (await post(`${proxy.url}${endpoint}`, call.replace('pwned', 'sent as JSON'), 'application/json')).status,
    202,
  );
  const deadline = Date.now() + 10_000;
  while (calls().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(calls(), ['sent as JSON'], 'only the application/json call reached the server');
});

test('F3: an HTTP server in transparent mode receives no POST that is not application/json', async (t) => {
  const upstream = await startHttpUpstream(t, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [] } }));
  });
  const proxy = await proxyFor(t, undefined, {
    upstream: { kind: 'http', url: `${upstream.url}/mcp`, transport: 'streamable-http' },
  });
  for (const type of REFUSED)
    await assert415(await post(`${proxy.url}/mcp`, statelessWriteFile('pwned'), type), `type ${type}`);
  assert.equal(upstream.received.length, 0, 'the server received nothing');

  const ok = await post(
    `${proxy.url}/mcp`,
    statelessWriteFile('sent as JSON'),
    'application/json; charset=utf-8',
  );
  assert.equal(ok.status, 200);
  await ok.text();
  assert.equal(upstream.received.length, 1);
  assert.equal(upstream.received[0]?.headers['content-type'], 'application/json; charset=utf-8');
});

test('F3: an SSE-transport HTTP server receives no /messages POST that is not application/json', async (t) => {
  const upstream = await startHttpUpstream(t, (req, res) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: endpoint\ndata: /upstream-messages?s=1\n\n');
      return;
    }
    res.writeHead(202);
    res.end();
  });
  const proxy = await proxyFor(t, undefined, {
    upstream: { kind: 'http', url: `${upstream.url}/sse`, transport: 'sse' },
  });
  const stream = await fetch(`${proxy.url}/sse`, { headers: { accept: 'text/event-stream' } });
  const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
  t.after(() => reader.cancel());
  let text = '';
  while (!/data: (\S+)\n/.test(text)) {
    const { value, done } = await reader.read();
    if (done) throw new Error('the SSE stream ended before the endpoint event');
    text += new TextDecoder().decode(value);
  }
  const endpoint = /data: (\S+)\n/.exec(text)?.[1] as string;
  for (const type of ['text/plain', 'multipart/form-data; boundary=x', undefined])
    await assert415(await post(`${proxy.url}${endpoint}`, statelessWriteFile('pwned'), type), `type ${type}`);
  assert.deepEqual(
    upstream.received.filter((r) => r.method === 'POST'),
    [],
    'the server received no POST',
  );
  assert.equal(
    (await post(`${proxy.url}${endpoint}`, statelessWriteFile('ok'), 'application/json')).status,
    202,
  );
  assert.equal(upstream.received.filter((r) => r.method === 'POST').length, 1);
});

test('MCP clients keep working: SDK 1.x (streamable HTTP, SSE) and 2.x (2025 session, 2026 stateless) call a tool', async (t) => {
  const { proxy, calls } = await recorderProxy(t);
  const v1 = [
    ['sdk1 streamable', new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`))],
    ['sdk1 sse', new SSEClientTransport(new URL(`${proxy.url}/sse`))],
  ] as const;
  for (const [label, transport] of v1) {
    const client = new Client({ name: label, version: '1.0.0' });
    await client.connect(transport);
    t.after(() => client.close());
    await client.callTool({ name: 'write_file', arguments: { text: label } });
  }
  for (const [label, mode] of [
    ['sdk2 legacy', undefined],
    ['sdk2 modern', 'auto'],
  ] as const) {
    const client = new ClientV2(
      { name: label, version: '1.0.0' },
      mode === undefined ? {} : { versionNegotiation: { mode } },
    );
    await client.connect(new StreamableV2(new URL(`${proxy.url}/mcp`)));
    t.after(() => client.close());
    await client.callTool({ name: 'write_file', arguments: { text: label } });
  }
  assert.deepEqual(calls(), ['sdk1 streamable', 'sdk1 sse', 'sdk2 legacy', 'sdk2 modern']);
});
