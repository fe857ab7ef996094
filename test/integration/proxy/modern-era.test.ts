/**
 * MCP 2026-07-28 (stateless: no initialize, no session id, `_meta` envelope per request,
 * `server/discover`) in front of a 2025-era stdio child. The proxy answers `server/discover`
 * from the cached initialize result, strips the envelope before the child sees the request,
 * and adds the 2026 result fields (`resultType`, caching hints) the child does not produce.
 * A 2026 client takes no requests from the server: the child's sampling and elicitation
 * requests reach it as `input_required` results, and its retry answers the child.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { loggedLine, proxyFor, spawnEverything, spawnFixture } from './helpers.js';

test('2026-07-28: the 2.x SDK client negotiates the modern era through the proxy and calls a 2025-era child', async (t) => {
  const proxy = await proxyFor(t, spawnEverything(t));
  const c = new Client({ name: 'modern', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await c.connect(new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`)));
  t.after(() => c.close());
  assert.equal(c.getServerVersion()?.name, 'mcp-servers/everything');
  const { tools } = await c.listTools();
  assert.ok(tools.some((tool) => tool.name === 'echo'));
  const result = (await c.callTool({ name: 'echo', arguments: { message: 'modern era' } })) as {
    content: Array<{ text: string }>;
  };
  assert.match(result.content[0]?.text ?? '', /modern era/);
});

test('2026-07-28: the same 2.x client in its default (legacy) mode uses a 2025 session', async (t) => {
  const proxy = await proxyFor(t, spawnEverything(t));
  const c = new Client({ name: 'legacy-mode', version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`)));
  t.after(() => c.close());
  const result = (await c.callTool({ name: 'echo', arguments: { message: 'legacy' } })) as {
    content: Array<{ text: string }>;
  };
  assert.match(result.content[0]?.text ?? '', /legacy/);
});

test('2026-07-28 wire: server/discover is answered from the cache, no session id is issued, results get resultType', async (t) => {
  const proxy = await proxyFor(t, spawnEverything(t));
  const envelope = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  const post = (body: unknown) =>
    fetch(`${proxy.url}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
      },
      body: JSON.stringify(body),
    });
  const discover = await post({
    jsonrpc: '2.0',
    id: 1,
    method: 'server/discover',
    params: { _meta: envelope },
  });
  assert.equal(discover.status, 200);
  assert.equal(discover.headers.get('mcp-session-id'), null);
  const d = (await discover.json()) as {
    result: { supportedVersions: string[]; capabilities: object; _meta: Record<string, { name: string }> };
  };
  assert.deepEqual(d.result.supportedVersions, ['2026-07-28']);
  assert.equal(d.result._meta['io.modelcontextprotocol/serverInfo']?.name, 'mcp-servers/everything');
  const list = await post({ jsonrpc: '2.0', id: 'L', method: 'tools/list', params: { _meta: envelope } });
  const l = (await list.json()) as {
    id: string;
    result: { resultType: string; ttlMs: number; tools: unknown[] };
  };
  assert.equal(l.id, 'L');
  assert.equal(l.result.resultType, 'complete');
  assert.equal(l.result.ttlMs, 0);
  assert.ok(l.result.tools.length > 0);
});

test('2026-07-28 multi round-trip: the child’s sampling and elicitation requests reach a 2.x client as input_required, its retries answer them', async (t) => {
  const proxy = await proxyFor(t, spawnFixture(t));
  const c = new Client(
    { name: 'modern-input', version: '1.0.0' },
    { versionNegotiation: { mode: 'auto' }, capabilities: { sampling: {}, elicitation: { form: {} } } },
  );
  const sampled: string[] = [];
  c.setRequestHandler('sampling/createMessage', async (request) => {
    const message = request.params.messages[0]?.content as { type: string; text: string };
    sampled.push(message.text);
    return { role: 'assistant', content: { type: 'text', text: `echo of ${message.text}` }, model: 'test' };
  });
  c.setRequestHandler('elicitation/create', async () => ({
    action: 'accept',
    content: { username: 'alice', email: 'alice@example.com' },
  }));
  await c.connect(new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`)));
  t.after(() => c.close());

  const sampling = (await c.callTool({ name: 'test_sampling', arguments: { prompt: 'round trip' } })) as {
    content: Array<{ text: string }>;
  };
  assert.deepEqual(sampled, ['round trip'], 'the client’s sampling handler ran once');
  assert.match(sampling.content[0]?.text ?? '', /echo of round trip/);

  const elicitation = (await c.callTool({ name: 'test_elicitation', arguments: { message: 'who?' } })) as {
    content: Array<{ text: string }>;
  };
  assert.match(elicitation.content[0]?.text ?? '', /alice/);
  const health = (await (await fetch(`${proxy.url}/health`)).json()) as { sessions: number };
  assert.equal(health.sessions, 0, 'stateless all along: no 2025 session was opened');
});

test('2026-07-28 wire: input_required carries the child’s request; a stale requestState is refused; an unclaimed call times out', async (t) => {
  // The proxy logs when it gives up on a parked call: the test waits for that, not a clock.
  const { logger, logged: gaveUp } = loggedLine('did not come back with input');
  const proxy = await proxyFor(t, spawnFixture(t), {
    logger,
    limits: { upstreamInitTimeoutMs: 60_000, serverRequestTimeoutMs: 300 },
  });
  const envelope = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': { sampling: {} },
  };
  const post = async (body: unknown) => {
    const res = await fetch(`${proxy.url}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        'mcp-protocol-version': '2026-07-28',
      },
      body: JSON.stringify(body),
    });
    return (await res.json()) as {
      id: unknown;
      result?: Record<string, unknown>;
      error?: { message: string };
    };
  };
  const call = (id: number, extra: Record<string, unknown> = {}) =>
    post({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'test_sampling', arguments: { prompt: 'raw' }, _meta: envelope, ...extra },
    });

  const first = await call(1);
  assert.equal(first.id, 1);
  assert.equal(first.result?.['resultType'], 'input_required');
  const requests = first.result?.['inputRequests'] as Record<string, { method: string; params: unknown }>;
  const [key] = Object.keys(requests);
  assert.equal(requests[key as string]?.method, 'sampling/createMessage');
  const requestState = first.result?.['requestState'] as string;
  assert.equal(typeof requestState, 'string');

  const second = await call(2, {
    requestState,
    inputResponses: {
      [key as string]: { role: 'assistant', content: { type: 'text', text: 'raw answer' }, model: 'm' },
    },
  });
  assert.equal(second.id, 2, 'the retry’s own id');
  assert.equal(second.result?.['resultType'], 'complete');
  assert.match(JSON.stringify(second.result?.['content']), /raw answer/);

  const stale = await call(3, { requestState, inputResponses: {} });
  assert.match(stale.error?.message ?? '', /requestState is unknown or expired/);

  // Nobody comes back: after serverRequestTimeoutMs the parked call is cancelled at the child.
  const abandoned = await call(4);
  const abandonedState = abandoned.result?.['requestState'] as string;
  await gaveUp;
  const late = await call(5, { requestState: abandonedState, inputResponses: {} });
  assert.match(late.error?.message ?? '', /requestState is unknown or expired/);
  const after = await post({ jsonrpc: '2.0', id: 6, method: 'tools/list', params: { _meta: envelope } });
  assert.equal(after.result?.['resultType'], 'complete', 'the child is still serving');
});
