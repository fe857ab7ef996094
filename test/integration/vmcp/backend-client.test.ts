/**
 * The virtual MCP server's client to one backend (src/dataplane/vmcp/backend-client.ts) against a real
 * loopback HTTP server whose answers the test chooses:
 * - `raw` calls get the result's own JSON text when the answer is laid out as the JSON-RPC
 *   order or the MCP SDK's, and the parsed value for anything else (extra keys, other
 *   spacing, errors), so a relayed result is never re-serialised but never wrong either;
 * - a call without an answer fails with the timeout error after its deadline (the shared
 *   sweep), and the session goes on;
 * - an event-stream answer is read as it arrives (progress before the result).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import {
  BackendError,
  BackendSession,
  closePools,
  RawJson,
} from '../../../src/dataplane/vmcp/backend-client.js';

type Answer = (id: string, req: IncomingMessage, res: ServerResponse) => void;

/** A backend that answers each POSTed request with `answer` (notifications get 202). */
async function backend(t: TestContext, answer: { current: Answer }): Promise<string> {
  const http = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST') {
        res.writeHead(405).end();
        return;
      }
      const m = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: string; method: string };
      if (m.id === undefined) {
        res.writeHead(202).end();
        return;
      }
      answer.current(m.id, req, res);
    });
  });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  t.after(async () => {
    await closePools();
    http.closeAllConnections();
    http.close();
  });
  return `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
}

const json = (res: ServerResponse, body: string) =>
  res.writeHead(200, { 'content-type': 'application/json' }).end(body);

function session(url: string): BackendSession {
  return new BackendSession(url, async () => ({}), {
    onServerRequest: async () => ({}),
    onNotification: () => {},
  });
}

test('raw calls relay the result text in the usual layouts and parse anything else', async (t) => {
  const answer: { current: Answer } = { current: () => {} };
  const s = session(await backend(t, answer));
  const result = '{"content":[{"type":"text","text":"a \\"quoted\\" ünï}"}],"isError":false}';
  const cases: Array<[string, (id: string) => string, boolean]> = [
    ['JSON-RPC order', (id) => `{"jsonrpc":"2.0","id":"${id}","result":${result}}`, true],
    ['MCP SDK order', (id) => `{"result":${result},"jsonrpc":"2.0","id":"${id}"}`, true],
    ['an extra key', (id) => `{"result":${result},"extra":1,"jsonrpc":"2.0","id":"${id}"}`, false],
    ['other spacing', (id) => `{ "jsonrpc": "2.0", "id": "${id}", "result": ${result} }`, false],
  ];
  for (const [what, body, isRaw] of cases) {
    answer.current = (id, _req, res) => json(res, body(id));
    const got = await s.request('tools/call', { name: 'x' }, { timeoutMs: 5000, raw: true });
    if (isRaw) {
      assert.ok(got instanceof RawJson, `${what}: raw`);
      assert.equal(got.json, result, what);
    } else {
      assert.ok(!(got instanceof RawJson), `${what}: parsed`);
      assert.deepEqual(got, JSON.parse(result), what);
    }
  }
  // Without `raw`, the parsed value as always.
  answer.current = (id, _req, res) => json(res, `{"jsonrpc":"2.0","id":"${id}","result":${result}}`);
  assert.deepEqual(await s.request('tools/call', {}, { timeoutMs: 5000 }), JSON.parse(result));
  // An error is an error, raw or not.
  answer.current = (id, _req, res) =>
    json(res, `{"jsonrpc":"2.0","id":"${id}","error":{"code":-32602,"message":"bad"}}`);
  await assert.rejects(
    s.request('tools/call', {}, { timeoutMs: 5000, raw: true }),
    (e: unknown) => e instanceof BackendError && e.code === -32602,
  );
  s.close();
});

test('a call without an answer times out after its deadline; the session goes on', async (t) => {
  const answer: { current: Answer } = { current: () => {} };
  const held: ServerResponse[] = [];
  const s = session(await backend(t, answer));
  answer.current = (_id, _req, res) => held.push(res);
  const started = performance.now();
  await assert.rejects(
    s.request('tools/call', {}, { timeoutMs: 150 }),
    (e: unknown) => e instanceof BackendError && e.code === -32001 && /within 150 ms/.test(e.message),
  );
  assert.ok(performance.now() - started >= 150, 'not before the deadline');
  answer.current = (id, _req, res) => json(res, `{"jsonrpc":"2.0","id":"${id}","result":{"ok":true}}`);
  assert.deepEqual(await s.request('ping', {}, { timeoutMs: 5000 }), { ok: true });
  for (const r of held) r.end();
  s.close();
});

test('an event stream is read as it arrives: progress, then the result', async (t) => {
  const answer: { current: Answer } = { current: () => {} };
  const s = session(await backend(t, answer));
  answer.current = (id, _req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const progress = {
      jsonrpc: '2.0',
      method: 'notifications/progress',
      params: { progressToken: id, progress: 1 },
    };
    // One event split across writes, and a multi-byte character split across chunks.
    const first = Buffer.from(`data: ${JSON.stringify(progress)}\n\ndata: {"jsonrpc":"2.0","id":"${id}",`);
    const rest = Buffer.from('"result":{"text":"é"}}\n\n');
    res.write(first);
    res.write(rest.subarray(0, 19));
    setImmediate(() => res.end(rest.subarray(19)));
  };
  const seen: unknown[] = [];
  const got = await s.request(
    'tools/call',
    {},
    { timeoutMs: 5000, raw: true, onProgress: (p) => seen.push(p['progress']) },
  );
  assert.deepEqual(seen, [1]);
  assert.deepEqual(got, { text: 'é' });
  s.close();
});
