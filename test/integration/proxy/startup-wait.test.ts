/**
 * A request that reaches the proxy before any upstream is attached waits for
 * the first one, whatever its kind, and is then served with the body it was sent. An HTTP
 * upstream (a remote workload, a container's HTTP server) attaching 200 ms in must answer that
 * request at once, not after `upstreamWaitMs` with 503 "no server attached yet".
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ProxyMiddleware } from '../../../src/dataplane/proxy/index.js';
import { proxyFor, spawnRecorder, startHttpUpstream, statelessWriteFile } from './helpers.js';

const WAIT_MS = 20_000;

/**
 * A middleware that tells the test when a request is inside the proxy: middlewares run before
 * the wait for an upstream, so the test knows the request is waiting without sleeping.
 */
function arrival(): { seen: ProxyMiddleware; inProxy: Promise<void> } {
  let arrived!: () => void;
  const inProxy = new Promise<void>((resolve) => (arrived = resolve));
  const seen: ProxyMiddleware = {
    name: 'seen',
    handle: () => {
      arrived();
      return Promise.resolve(undefined);
    },
  };
  return { seen, inProxy };
}

test('a request waiting for the first upstream is served once an HTTP upstream attaches', async (t) => {
  const upstream = await startHttpUpstream(t, (req, res) => {
    const id = (JSON.parse(req.body) as { id: number }).id;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id, result: { tools: [] } }));
  });
  const { seen, inProxy } = arrival();
  const proxy = await proxyFor(t, undefined, { middlewares: [seen], limits: { upstreamWaitMs: WAIT_MS } });
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 7,
    method: 'tools/list',
    params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } },
  });
  const started = Date.now();
  const reply = fetch(`${proxy.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body,
  });
  await inProxy;
  await sleep(200); // the scenario: the upstream comes up 200 ms after the request arrived
  await proxy.setUpstream({ kind: 'http', url: `${upstream.url}/mcp`, transport: 'streamable-http' });
  const res = await reply;
  const elapsed = Date.now() - started;
  assert.equal(res.status, 200, await res.clone().text());
  assert.deepEqual(await res.json(), { jsonrpc: '2.0', id: 7, result: { tools: [] } });
  assert.ok(elapsed < WAIT_MS / 2, `answered promptly after the attach (took ${elapsed} ms)`);
  assert.equal(upstream.received.length, 1);
  assert.equal(upstream.received[0]?.body, body, 'the upstream got the body the client sent');
});

test('a request waiting for the first upstream is served once a stdio upstream attaches', async (t) => {
  const { child, calls } = spawnRecorder(t);
  const { seen, inProxy } = arrival();
  const proxy = await proxyFor(t, undefined, { middlewares: [seen], limits: { upstreamWaitMs: WAIT_MS } });
  const reply = fetch(`${proxy.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: statelessWriteFile('late'),
  });
  await inProxy;
  await proxy.setUpstream({ kind: 'stdio', stdin: child.stdin, stdout: child.stdout });
  const res = await reply;
  assert.equal(res.status, 200, await res.clone().text());
  assert.match(await res.text(), /"resultType":"complete"/);
  assert.deepEqual(calls(), ['late']);
});

test('with no upstream attached in upstreamWaitMs, the waiting request gets 503 and a JSON-RPC error', async (t) => {
  const proxy = await proxyFor(t, undefined, { limits: { upstreamWaitMs: 300 } });
  const res = await fetch(`${proxy.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: statelessWriteFile('never'),
  });
  assert.equal(res.status, 503);
  assert.deepEqual(await res.json(), {
    jsonrpc: '2.0',
    id: null,
    error: { code: -32000, message: 'MCP server unavailable: no server attached yet' },
  });
});
