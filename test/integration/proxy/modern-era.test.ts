/**
 * MCP 2026-07-28 (stateless: no initialize, no session id, `_meta` envelope per request,
 * `server/discover`) in front of a 2025-era stdio child. The proxy answers `server/discover`
 * from the cached initialize result, strips the envelope before the child sees the request,
 * and adds the 2026 result fields (`resultType`, caching hints) the child does not produce.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { proxyFor, spawnEverything } from './helpers.js';

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
