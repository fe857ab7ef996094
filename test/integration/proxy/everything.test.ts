/**
 * The official MCP SDK client through the proxy to @modelcontextprotocol/server-everything
 * (one stdio child): streamable HTTP and legacy SSE, many concurrent sessions, and recovery
 * after the child is killed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { exited, proxyFor, spawnEverything } from './helpers.js';

function client(name = 'skep-test'): Client {
  return new Client({ name, version: '1.0.0' });
}

function textOf(result: unknown): string {
  const content = (result as { content: Array<{ type: string; text?: string }> }).content;
  return content.map((c) => c.text ?? '').join('');
}

test('streamable HTTP: SDK client lists tools and calls echo through the proxy', async (t) => {
  const proxy = await proxyFor(t, spawnEverything(t));
  const c = client();
  await c.connect(new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`)));
  t.after(() => c.close());
  assert.equal(c.getServerVersion()?.name, 'mcp-servers/everything');
  const { tools } = await c.listTools();
  assert.ok(
    tools.some((tool) => tool.name === 'echo'),
    'echo is listed',
  );
  const result = await c.callTool({ name: 'echo', arguments: { message: 'hello proxy' } });
  assert.match(textOf(result), /hello proxy/);
});

test('legacy SSE: SDK client lists tools and calls echo through the proxy', async (t) => {
  const proxy = await proxyFor(t, spawnEverything(t));
  const c = client();
  await c.connect(new SSEClientTransport(new URL(`${proxy.url}/sse`)));
  t.after(() => c.close());
  const { tools } = await c.listTools();
  assert.ok(tools.some((tool) => tool.name === 'echo'));
  const result = await c.callTool({ name: 'echo', arguments: { message: 'over sse' } });
  assert.match(textOf(result), /over sse/);
});

test('roots: the child, which asked before any client was connected, asks the first client that has roots', async (t) => {
  // server-everything asks for roots 350 ms after its initialize; with no client connected the
  // proxy refuses, and the child says so on stderr.
  const child = spawnEverything(t);
  let stderr = '';
  const refused = new Promise<void>((resolve) =>
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (stderr.includes('no connected client can answer roots/list')) resolve();
    }),
  );
  const proxy = await proxyFor(t, child);
  await refused;
  const c = new Client(
    { name: 'with-roots', version: '1.0.0' },
    { capabilities: { roots: { listChanged: true } } },
  );
  const root = { uri: 'file:///work/project', name: 'project' };
  let asked!: () => void;
  const askedOnce = new Promise<void>((resolve) => {
    asked = resolve;
  });
  c.setRequestHandler(ListRootsRequestSchema, () => {
    asked();
    return { roots: [root] };
  });
  await c.connect(new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`)));
  t.after(() => c.close());
  // No request of ours is in flight: the question comes on the session's GET stream.
  await Promise.race([
    askedOnce,
    new Promise((_, reject) =>
      setTimeout(() => reject(new Error('roots/list never reached the client')), 10_000),
    ),
  ]);
  const result = await c.callTool({ name: 'get-roots-list', arguments: {} });
  assert.match(textOf(result), /file:\/\/\/work\/project/);
});

test('20 concurrent sessions on one stdio child each get their own replies', async (t) => {
  const proxy = await proxyFor(t, spawnEverything(t));
  const clients = await Promise.all(
    Array.from({ length: 20 }, async (_, i) => {
      const c = client(`client-${i}`);
      const transport =
        i % 4 === 3
          ? new SSEClientTransport(new URL(`${proxy.url}/sse`))
          : new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`));
      await c.connect(transport);
      t.after(() => c.close());
      return c;
    }),
  );
  // Every client uses the same JSON-RPC ids (the SDK counts from 0), so replies only land
  // right if the proxy remaps ids per session.
  const rounds = await Promise.all(
    clients.map(async (c, i) => {
      const replies: string[] = [];
      for (let k = 0; k < 5; k++) {
        replies.push(
          textOf(await c.callTool({ name: 'echo', arguments: { message: `session ${i} call ${k}` } })),
        );
      }
      return replies;
    }),
  );
  for (const [i, replies] of rounds.entries()) {
    for (const [k, reply] of replies.entries()) assert.match(reply, new RegExp(`session ${i} call ${k}$`));
  }
});

test('kill -9 the child: in-flight calls fail with JSON-RPC errors, sessions keep working after setUpstream', async (t) => {
  let child = spawnEverything(t);
  const proxy = await proxyFor(t, child);
  const c = client();
  await c.connect(new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`)));
  t.after(() => c.close());
  const sse = client('sse');
  await sse.connect(new SSEClientTransport(new URL(`${proxy.url}/sse`)));
  t.after(() => sse.close());
  assert.match(textOf(await c.callTool({ name: 'echo', arguments: { message: 'before' } })), /before/);

  // A long-running call is in flight when the child dies: its first progress notification
  // shows the child is working on it.
  let working!: () => void;
  const started = new Promise<void>((resolve) => (working = resolve));
  const inflight = c
    .callTool({ name: 'trigger-long-running-operation', arguments: { duration: 30, steps: 30 } }, undefined, {
      onprogress: () => working(),
    })
    .then(
      () => undefined,
      (err: Error) => err,
    );
  await started;
  child.kill('SIGKILL');
  await exited(child);
  proxy.upstreamDown('server was killed');
  const failure = await inflight;
  assert.ok(failure instanceof Error, 'the in-flight call failed');
  assert.match(failure.message, /-32000.*MCP server unavailable/);

  // Requests made while the server is down wait for the restart.
  const waiting = c.callTool({ name: 'echo', arguments: { message: 'during restart' } });
  waiting.catch(() => {});
  child = spawnEverything(t);
  await proxy.setUpstream({ kind: 'stdio', stdin: child.stdin, stdout: child.stdout });
  assert.match(textOf(await waiting), /during restart/);
  // The same sessions (same Mcp-Session-Id / same SSE stream) keep working: no re-initialize.
  assert.match(textOf(await c.callTool({ name: 'echo', arguments: { message: 'after' } })), /after/);
  assert.match(
    textOf(await sse.callTool({ name: 'echo', arguments: { message: 'sse after' } })),
    /sse after/,
  );
});
