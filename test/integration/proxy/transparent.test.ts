/**
 * Transparent mode: the server speaks HTTP itself and the proxy passes traffic through —
 * an SDK streamable-HTTP server (stateful, and stateless without session ids) and an SDK SSE
 * server (@modelcontextprotocol/server-everything in `sse` mode) — with the tools policy
 * still applied.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { type TestContext, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { freePort } from '../../helpers/net.js';
import { startPathRelay } from '../../helpers/path-relay.js';
import { EVERYTHING_ENTRY, FIXTURE_SERVER, printed, proxyFor, spawnServer } from './helpers.js';

function textOf(result: unknown): string {
  return (result as { content: Array<{ text?: string }> }).content.map((c) => c.text ?? '').join('');
}

async function fixtureOverHttp(t: TestContext, mode: 'http' | 'http-stateless'): Promise<string> {
  const port = await freePort();
  const child = spawnServer(t, ['--import', 'tsx', FIXTURE_SERVER, mode, String(port)]);
  await printed(child, /listening/);
  return `http://127.0.0.1:${port}/mcp`;
}

async function connect(
  t: TestContext,
  transport: StreamableHTTPClientTransport | SSEClientTransport,
): Promise<Client> {
  const c = new Client({ name: 'transparent-test', version: '1.0.0' });
  await c.connect(transport);
  t.after(() => c.close());
  return c;
}

for (const mode of ['http', 'http-stateless'] as const) {
  test(`transparent streamable HTTP (${mode === 'http' ? 'stateful' : 'stateless, no session id'}): list and call through the proxy, override applied`, async (t) => {
    const url = await fixtureOverHttp(t, mode);
    const proxy = await proxyFor(t, undefined, {
      upstream: { kind: 'http', url, transport: 'streamable-http' },
      toolsOverride: { test_simple_text: { name: 'simple', description: 'renamed by Skep' } },
    });
    const c = await connect(t, new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`)));
    if (mode === 'http') assert.ok(c.getServerVersion()?.name === 'skep-conformance-fixture');
    const { tools } = await c.listTools();
    const simple = tools.find((tool) => tool.name === 'simple');
    assert.equal(simple?.description, 'renamed by Skep');
    assert.ok(!tools.some((tool) => tool.name === 'test_simple_text'), 'the original name is hidden');
    assert.match(textOf(await c.callTool({ name: 'simple', arguments: {} })), /simple text response/);
    if (mode === 'http-stateless') return; // a JSON-only server sends no progress
    // Progress notifications stream through (SSE response to a POST).
    const progress: number[] = [];
    const result = await c.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined, {
      onprogress: (p) => progress.push(p.progress),
    });
    assert.ok(textOf(result).length > 0);
    assert.deepEqual(progress, [0, 50, 100]);
  });
}

test('transparent streamable HTTP: the client Authorization header is not forwarded; middleware outbound headers are', async (t) => {
  // A tiny upstream that records the headers it receives and answers like a stateless server.
  const { createServer } = await import('node:http');
  const seen: Array<Record<string, unknown>> = [];
  const upstream = createServer((req, res) => {
    seen.push({ ...req.headers });
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"jsonrpc":"2.0","id":1,"result":{}}');
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  t.after(() => upstream.close());
  const port = (upstream.address() as { port: number }).port;
  const proxy = await proxyFor(t, undefined, {
    upstream: {
      kind: 'http',
      url: `http://127.0.0.1:${port}/mcp`,
      transport: 'streamable-http',
      headers: { 'x-static': 's' },
    },
    middlewares: [
      {
        name: 'test-token-exchange',
        async handle(ctx) {
          ctx.outboundHeaders['authorization'] = 'Bearer exchanged';
          return undefined;
        },
      },
    ],
  });
  const res = await fetch(`${proxy.url}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json',
      authorization: 'Bearer client-secret',
      cookie: 'a=b',
    },
    body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
  });
  assert.equal(res.status, 200);
  assert.equal(seen.length, 1);
  assert.equal(seen[0]?.['authorization'], 'Bearer exchanged');
  assert.equal(seen[0]?.['cookie'], undefined);
  assert.equal(seen[0]?.['x-static'], 's');
});

test('a middleware can reject a request before it reaches the server', async (t) => {
  const url = await fixtureOverHttp(t, 'http-stateless');
  const proxy = await proxyFor(t, undefined, {
    upstream: { kind: 'http', url, transport: 'streamable-http' },
    middlewares: [
      {
        name: 'deny-all',
        async handle(ctx) {
          return ctx.headers.authorization === undefined
            ? { status: 401, headers: { 'www-authenticate': 'Bearer' }, body: { error: 'unauthorized' } }
            : undefined;
        },
      },
    ],
  });
  const res = await fetch(`${proxy.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  assert.equal(res.status, 401);
  assert.equal(res.headers.get('www-authenticate'), 'Bearer');
});

test('transparent SSE: the SDK SSE client lists and calls tools on an SSE server through the proxy', async (t) => {
  const port = await freePort();
  const child = spawn(process.execPath, [EVERYTHING_ENTRY, 'sse'], {
    env: { ...process.env, PORT: String(port) },
  });
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  await printed(child, /running on port/);
  const proxy = await proxyFor(t, undefined, {
    upstream: { kind: 'http', url: `http://127.0.0.1:${port}/sse`, transport: 'sse' },
    toolsFilter: ['echo'],
  });
  const c = await connect(t, new SSEClientTransport(new URL(`${proxy.url}/sse`)));
  const { tools } = await c.listTools();
  assert.deepEqual(
    tools.map((tool) => tool.name),
    ['echo'],
  );
  assert.match(
    textOf(await c.callTool({ name: 'echo', arguments: { message: 'through sse' } })),
    /through sse/,
  );
});

test('transparent SSE, endpoint_prefix: the endpoint event names the prefixed URL, so the SDK SSE client works behind a path-stripping ingress', async (t) => {
  const port = await freePort();
  const child = spawn(process.execPath, [EVERYTHING_ENTRY, 'sse'], {
    env: { ...process.env, PORT: String(port) },
  });
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  await printed(child, /running on port/);
  const proxy = await proxyFor(t, undefined, {
    upstream: { kind: 'http', url: `http://127.0.0.1:${port}/sse`, transport: 'sse' },
    endpointPrefix: '/team-a/',
  });

  // The raw event: the prefix (its trailing '/' dropped) before the proxy's own /messages.
  const abort = new AbortController();
  const res = await fetch(`${proxy.url}/sse`, { signal: abort.signal });
  const reader = res.body!.getReader();
  let text = '';
  while (!text.includes('\n\n')) text += new TextDecoder().decode((await reader.read()).value);
  abort.abort();
  assert.match(text, /^event: endpoint\ndata: \/team-a\/messages\?session_id=[\w-]+\n\n/);

  const relay = await startPathRelay(t, '/team-a', proxy.url);
  const c = await connect(t, new SSEClientTransport(new URL(`${relay.url}/sse`)));
  assert.match(
    textOf(await c.callTool({ name: 'echo', arguments: { message: 'behind an ingress' } })),
    /behind an ingress/,
  );
  assert.ok(
    relay.paths.some((p) => p.startsWith('/team-a/messages?session_id=')),
    `the client posted under the prefix: ${relay.paths.join(', ')}`,
  );
});
