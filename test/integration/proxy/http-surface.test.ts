/**
 * The proxy's HTTP surface in front of a stdio server (the bench echo server: tiny and
 * deterministic): session rules, error bodies, the DNS-rebinding guard, body limits, version
 * negotiation and the tools filter/override.
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { dirname, join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { RunningProxy } from '../../../src/dataplane/proxy/index.js';
import { proxyFor, spawnServer } from './helpers.js';

const ECHO = join(dirname(fileURLToPath(import.meta.url)), '../../../bench/fixtures/echo-server.mjs');
const ACCEPT = 'application/json, text/event-stream';

async function echoProxy(t: TestContext, options = {}): Promise<RunningProxy> {
  return proxyFor(t, spawnServer(t, [ECHO]), options);
}

async function post(
  proxy: RunningProxy,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${proxy.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function initialize(
  proxy: RunningProxy,
  protocolVersion = '2025-06-18',
): Promise<{ sessionId: string; result: Record<string, unknown> }> {
  const res = await post(proxy, {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion, capabilities: {}, clientInfo: { name: 't', version: '1' } },
  });
  assert.equal(res.status, 200);
  const sessionId = res.headers.get('mcp-session-id');
  assert.ok(sessionId, 'initialize answers with Mcp-Session-Id');
  const body = (await res.json()) as { result: Record<string, unknown> };
  return { sessionId, result: body.result };
}

/** Raw request with a chosen Host header (fetch does not allow setting it). */
function rawPost(
  proxy: RunningProxy,
  headers: Record<string, string>,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${proxy.url}/mcp`,
      { method: 'POST', headers: { 'content-type': 'application/json', accept: ACCEPT, ...headers } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end('{"jsonrpc":"2.0","id":1,"method":"ping"}');
  });
}

test('MCP 2025-11-25 session management: unknown session id → 404 with a JSON-RPC error body', async (t) => {
  const proxy = await echoProxy(t);
  const res = await post(
    proxy,
    { jsonrpc: '2.0', id: 7, method: 'tools/list' },
    { 'mcp-session-id': 'no-such-session' },
  );
  assert.equal(res.status, 404);
  const body = (await res.json()) as { jsonrpc: string; error: { code: number; message: string } };
  assert.equal(body.jsonrpc, '2.0');
  assert.equal(typeof body.error.code, 'number');
  assert.match(body.error.message, /session not found/i);
  // GET and DELETE on an unknown session are 404 too.
  const get = await fetch(`${proxy.url}/mcp`, {
    headers: { accept: 'text/event-stream', 'mcp-session-id': 'nope' },
  });
  assert.equal(get.status, 404);
  const del = await fetch(`${proxy.url}/mcp`, { method: 'DELETE', headers: { 'mcp-session-id': 'nope' } });
  assert.equal(del.status, 404);
});

test('a request without a session id (other than initialize) is a 400', async (t) => {
  const proxy = await echoProxy(t);
  const res = await post(proxy, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
  assert.equal(res.status, 400);
  const body = (await res.json()) as { error: { code: number } };
  assert.equal(body.error.code, -32600);
});

test('JSON-RPC 2.0 §5.1: malformed JSON → parse error -32700; a non-JSON-RPC object → -32600', async (t) => {
  const proxy = await echoProxy(t);
  const { sessionId } = await initialize(proxy);
  const bad = await post(proxy, '{"jsonrpc":"2.0", "id": 1, "method": ', { 'mcp-session-id': sessionId });
  assert.equal(bad.status, 400);
  assert.deepEqual(((await bad.json()) as { id: unknown; error: { code: number } }).error.code, -32700);
  const invalid = await post(proxy, { hello: 'world' }, { 'mcp-session-id': sessionId });
  assert.equal(invalid.status, 400);
  assert.equal(((await invalid.json()) as { error: { code: number } }).error.code, -32600);
  // The proxy is still fine afterwards.
  const ok = await post(
    proxy,
    { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    { 'mcp-session-id': sessionId },
  );
  assert.equal(ok.status, 200);
});

test('bounded bodies: an oversized body → 413, an over-deep body → parse error', async (t) => {
  const proxy = await echoProxy(t, { limits: { maxBodyBytes: 1024, maxJsonDepth: 16 } });
  const { sessionId } = await initialize(proxy);
  const big = await post(
    proxy,
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'echo', arguments: { message: 'x'.repeat(5000) } },
    },
    { 'mcp-session-id': sessionId },
  );
  assert.equal(big.status, 413);
  const deep = await post(
    proxy,
    `{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":${'['.repeat(40)}${']'.repeat(40)}}}`,
    {
      'mcp-session-id': sessionId,
    },
  );
  assert.equal(deep.status, 400);
  assert.equal(((await deep.json()) as { error: { code: number } }).error.code, -32700);
});

test('DNS rebinding guard: foreign Host or Origin → 403; loopback names and allowed hosts pass', async (t) => {
  const proxy = await echoProxy(t, { allowedHosts: ['mcp.internal'] });
  assert.equal((await rawPost(proxy, { host: 'evil.example' })).status, 403);
  assert.equal(
    (await rawPost(proxy, { host: `127.0.0.1:${proxy.port}`, origin: 'http://evil.example' })).status,
    403,
  );
  const rejected = await rawPost(proxy, { host: 'evil.example:80' });
  assert.equal((JSON.parse(rejected.body) as { jsonrpc: string }).jsonrpc, '2.0');
  // Not 403: these get past the guard (400 because there is no session).
  assert.equal(
    (await rawPost(proxy, { host: `localhost:${proxy.port}`, origin: `http://localhost:${proxy.port}` }))
      .status,
    400,
  );
  assert.equal((await rawPost(proxy, { host: 'mcp.internal' })).status, 400);
});

test('MCP lifecycle: initialize is answered from the cached child result with a version both sides speak', async (t) => {
  const proxy = await echoProxy(t);
  const older = await initialize(proxy, '2025-03-26');
  assert.equal(older.result['protocolVersion'], '2025-03-26');
  assert.deepEqual(older.result['serverInfo'], { name: 'bench-echo', version: '1.0.0' });
  // A version the proxy does not know: the answer is the child's version (the client decides).
  const unknown = await initialize(proxy, '1999-01-01');
  assert.equal(unknown.result['protocolVersion'], '2025-11-25');
  const health = await fetch(`${proxy.url}/health`);
  assert.equal(health.status, 200);
  assert.equal(((await health.json()) as { status: string }).status, 'ok');
});

test('tools_override renames and re-describes; tools_filter hides; calls reach the original tool', async (t) => {
  const proxy = await echoProxy(t, {
    toolsOverride: { echo: { name: 'say', description: 'Says it back' } },
    toolsFilter: ['say'],
  });
  const { sessionId } = await initialize(proxy);
  const headers = { 'mcp-session-id': sessionId };
  const list = (await (
    await post(proxy, { jsonrpc: '2.0', id: 'a', method: 'tools/list' }, headers)
  ).json()) as {
    id: string;
    result: { tools: Array<{ name: string; description: string }> };
  };
  assert.equal(list.id, 'a');
  assert.deepEqual(
    list.result.tools.map((tool) => [tool.name, tool.description]),
    [['say', 'Says it back']],
  );
  const call = (await (
    await post(
      proxy,
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'say', arguments: { message: 'hi' } } },
      headers,
    )
  ).json()) as { id: number; result: { content: Array<{ text: string }> } };
  assert.equal(call.id, 2);
  assert.equal(call.result.content[0]?.text, 'hi');
  // The old name of a renamed tool is not callable.
  const old = (await (
    await post(
      proxy,
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', arguments: { message: 'hi' } } },
      headers,
    )
  ).json()) as { error: { code: number } };
  assert.equal(old.error.code, -32602);
});

test('tools_filter with no match lists nothing and refuses calls', async (t) => {
  const proxy = await echoProxy(t, { toolsFilter: ['something-else'] });
  const { sessionId } = await initialize(proxy);
  const headers = { 'mcp-session-id': sessionId };
  const list = (await (
    await post(proxy, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers)
  ).json()) as {
    result: { tools: unknown[] };
  };
  assert.deepEqual(list.result.tools, []);
  const call = (await (
    await post(
      proxy,
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { message: 'x' } } },
      headers,
    )
  ).json()) as { error: { code: number; message: string } };
  assert.equal(call.error.code, -32602);
});

test('DELETE ends the session; the id is then unknown (404)', async (t) => {
  const proxy = await echoProxy(t);
  const { sessionId } = await initialize(proxy);
  const del = await fetch(`${proxy.url}/mcp`, { method: 'DELETE', headers: { 'mcp-session-id': sessionId } });
  assert.equal(del.status, 200);
  const after = await post(
    proxy,
    { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    { 'mcp-session-id': sessionId },
  );
  assert.equal(after.status, 404);
});

test('JSON-RPC batches (2025-03-26) get one array of responses with the clients ids', async (t) => {
  const proxy = await echoProxy(t);
  const { sessionId } = await initialize(proxy, '2025-03-26');
  const res = await post(
    proxy,
    [
      {
        jsonrpc: '2.0',
        id: 'x',
        method: 'tools/call',
        params: { name: 'echo', arguments: { message: 'one' } },
      },
      {
        jsonrpc: '2.0',
        id: 'y',
        method: 'tools/call',
        params: { name: 'echo', arguments: { message: 'two' } },
      },
    ],
    { 'mcp-session-id': sessionId },
  );
  const replies = (await res.json()) as Array<{ id: string; result: { content: Array<{ text: string }> } }>;
  const byId = Object.fromEntries(replies.map((r) => [r.id, r.result.content[0]?.text]));
  assert.deepEqual(byId, { x: 'one', y: 'two' });
});
