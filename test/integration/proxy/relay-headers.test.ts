/**
 * Responses on the proxy's origin are inert (a remote server's page must not run there). Every
 * response relayed from an HTTP server carries `X-Content-Type-Options: nosniff`; one whose body is
 * neither JSON nor an event stream also carries `Content-Security-Policy: sandbox` (served, status
 * unchanged, not refused: error pages keep their meaning); a server's `Set-Cookie` never reaches
 * the client (cookies ignore ports, so it would land on every local service). The proxy's own
 * responses carry `nosniff` too.
 */
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { proxyFor, spawnServer, startHttpUpstream } from './helpers.js';

const ECHO = join(dirname(fileURLToPath(import.meta.url)), '../../../bench/fixtures/echo-server.mjs');
const HTML = '<!doctype html><title>remote</title><script>document.title = "ran"</script>';
const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** What a browser would act on, from one response. */
function safety(res: Response): { nosniff: boolean; csp: string | null; cookie: string | null } {
  return {
    nosniff: res.headers.get('x-content-type-options') === 'nosniff',
    csp: res.headers.get('content-security-policy'),
    cookie: res.headers.get('set-cookie'),
  };
}

test('transparent streamable HTTP: nosniff on every relay, CSP sandbox on non-JSON/SSE bodies, no Set-Cookie', async (t) => {
  const upstream = await startHttpUpstream(t, (req, res) => {
    const cookie = { 'set-cookie': 'sid=remote; Path=/' };
    if (req.method === 'POST') {
      const id = (JSON.parse(req.body) as { id?: number }).id;
      if (id === 2) {
        res.writeHead(200, { ...cookie, 'content-type': 'text/event-stream' });
        res.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, result: {} })}\n\n`);
      } else if (id === 3) {
        res.writeHead(202, cookie);
        res.end();
      } else {
        res.writeHead(200, { ...cookie, 'content-type': 'application/json; charset=utf-8' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id, result: {} }));
      }
    } else if (req.method === 'DELETE') {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('no such session');
    } else {
      res.writeHead(200, { ...cookie, 'content-type': 'text/html; charset=utf-8' });
      res.end(HTML);
    }
  });
  const proxy = await proxyFor(t, undefined, {
    upstream: { kind: 'http', url: `${upstream.url}/mcp`, transport: 'streamable-http' },
  });
  const call = (id: number) =>
    fetch(`${proxy.url}/mcp`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' }),
    });

  const json = await call(1);
  assert.equal(json.status, 200);
  assert.deepEqual(safety(json), { nosniff: true, csp: null, cookie: null });
  assert.deepEqual(await json.json(), { jsonrpc: '2.0', id: 1, result: {} });

  const sse = await call(2);
  assert.equal(sse.headers.get('content-type'), 'text/event-stream');
  assert.deepEqual(safety(sse), { nosniff: true, csp: null, cookie: null });
  assert.match(await sse.text(), /"id":2/);

  const accepted = await call(3);
  assert.equal(accepted.status, 202);
  assert.deepEqual(safety(accepted), { nosniff: true, csp: 'sandbox', cookie: null });

  const html = await fetch(`${proxy.url}/mcp`, { headers: { accept: 'text/html' } });
  assert.equal(html.status, 200);
  assert.equal(html.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.deepEqual(safety(html), { nosniff: true, csp: 'sandbox', cookie: null });
  assert.equal(await html.text(), HTML, 'the body is relayed unchanged, only made inert');

  const notFound = await fetch(`${proxy.url}/mcp`, { method: 'DELETE', headers: { 'mcp-session-id': 'x' } });
  assert.equal(notFound.status, 404, 'the server’s status is kept');
  assert.deepEqual(safety(notFound), { nosniff: true, csp: 'sandbox', cookie: null });
  assert.equal(await notFound.text(), 'no such session');
});

test('transparent streamable HTTP with a tools policy: the rewritten JSON answer is relayed with nosniff, no cookie', async (t) => {
  const upstream = await startHttpUpstream(t, (req, res) => {
    const id = (JSON.parse(req.body) as { id?: number }).id;
    res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': 'sid=remote' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id, result: { tools: [{ name: 'a' }, { name: 'b' }] } }));
  });
  const proxy = await proxyFor(t, undefined, {
    upstream: { kind: 'http', url: `${upstream.url}/mcp`, transport: 'streamable-http' },
    toolsFilter: ['a'],
  });
  const res = await fetch(`${proxy.url}/mcp`, {
    method: 'POST',
    headers: JSON_HEADERS,
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  assert.deepEqual(safety(res), { nosniff: true, csp: null, cookie: null });
  assert.deepEqual(((await res.json()) as { result: { tools: unknown[] } }).result.tools, [{ name: 'a' }]);
});

test('transparent SSE transport: a refused stream and a /messages answer are relayed inert', async (t) => {
  let refuse = true;
  const upstream = await startHttpUpstream(t, (req, res) => {
    if (req.method === 'GET' && refuse) {
      res.writeHead(401, { 'content-type': 'text/html', 'www-authenticate': 'Bearer', 'set-cookie': 'a=b' });
      res.end(HTML);
    } else if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: endpoint\ndata: /upstream-messages\n\n');
    } else {
      res.writeHead(200, { 'content-type': 'text/html', 'set-cookie': 'a=b' });
      res.end(HTML);
    }
  });
  const proxy = await proxyFor(t, undefined, {
    upstream: { kind: 'http', url: `${upstream.url}/sse`, transport: 'sse' },
  });
  const refused = await fetch(`${proxy.url}/sse`);
  assert.equal(refused.status, 401);
  assert.deepEqual(safety(refused), { nosniff: true, csp: 'sandbox', cookie: null });
  assert.equal(await refused.text(), HTML);

  refuse = false;
  const stream = await fetch(`${proxy.url}/sse`, { headers: { accept: 'text/event-stream' } });
  assert.deepEqual(safety(stream), { nosniff: true, csp: null, cookie: null });
  const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
  t.after(() => reader.cancel());
  let text = '';
  while (!/data: (\S+)\n/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
  const endpoint = /data: (\S+)\n/.exec(text)?.[1] as string;
  const answer = await fetch(`${proxy.url}${endpoint}`, {
    method: 'POST',
    headers: JSON_HEADERS,
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  });
  assert.equal(answer.status, 200);
  assert.deepEqual(safety(answer), { nosniff: true, csp: 'sandbox', cookie: null });
});

test('the proxy’s own responses carry nosniff: JSON, SSE, errors, health', async (t) => {
  const proxy = await proxyFor(t, spawnServer(t, [ECHO]));
  const init = await fetch(`${proxy.url}/mcp`, {
    method: 'POST',
    headers: JSON_HEADERS,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    }),
  });
  assert.equal(init.status, 200);
  assert.ok(safety(init).nosniff, 'JSON reply');
  const session = init.headers.get('mcp-session-id') as string;
  await init.text();
  const stream = await fetch(`${proxy.url}/mcp`, {
    headers: { accept: 'text/event-stream', 'mcp-session-id': session },
  });
  assert.equal(stream.headers.get('content-type'), 'text/event-stream');
  assert.ok(safety(stream).nosniff, 'SSE stream');
  await stream.body?.cancel();
  const others = [
    await fetch(`${proxy.url}/health`),
    await fetch(`${proxy.url}/nowhere`),
    await fetch(`${proxy.url}/mcp`, { method: 'PUT', headers: { 'mcp-session-id': session } }),
    await fetch(`${proxy.url}/mcp`, { method: 'POST', body: 'x' }),
    await fetch(`${proxy.url}/mcp`, {
      method: 'POST',
      headers: { ...JSON_HEADERS, origin: 'http://127.0.0.1:1' },
      body: '{}',
    }),
  ];
  assert.deepEqual(
    others.map((r) => r.status),
    [200, 404, 405, 415, 403],
  );
  for (const r of others) {
    assert.ok(safety(r).nosniff, `${r.status}`);
    assert.equal(r.headers.get('set-cookie'), null);
  }
});
