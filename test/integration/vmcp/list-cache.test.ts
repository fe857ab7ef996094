/**
 * The backend lists shared by the sessions of one virtual MCP server (src/dataplane/vmcp/list-cache.ts),
 * through a real `VirtualMcpServer` in this process over real MCP backends (the official SDK's
 * server on streamable HTTP, loopback), each counting the `tools/list` requests it answers.
 * The client side is what the proxy's per-session bridge speaks to a virtual session (message
 * objects in, JSON text out: the same interface the proxy uses; the proxy itself is covered by
 * the other vmcp tests):
 * - a new session's `tools/list` is served from the cache, without listing (or even opening a
 *   session at) any backend;
 * - a backend's `notifications/tools/list_changed`, sent to one session only, reaches every
 *   session: those that have seen lists get a list_changed, and the next `tools/list` of any
 *   session (old or new) shows the change, after one shared reload;
 * - a backend that leaves the set is dropped, and when it comes back at another URL with other
 *   tools, those are listed (its old lists are not served);
 * - with a bounded age, a backend that changes its tools without announcing it is seen anyway.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { SessionChild } from '../../../src/dataplane/proxy/index.js';
import { silentLogger } from '../../../src/shared/index.js';
import type { BackendInfo } from '../../../src/dataplane/vmcp/backends.js';
import { parseVmcpConfig, VirtualMcpServer } from '../../../src/dataplane/vmcp/index.js';
import { waitFor } from '../../helpers/wait.js';

interface Backend {
  readonly name: string;
  readonly url: string;
  /** The tools it lists (change it to change its list). */
  readonly tools: string[];
  /** `tools/list` requests answered so far. */
  listCalls(): number;
  /** `initialize` requests answered so far (backend sessions opened). */
  inits(): number;
}

/**
 * A real MCP backend: the SDK's low-level server per session over streamable HTTP, plus the
 * `/health` a Skep proxy answers. Its tool `grow` adds a tool and announces the change on that
 * call's stream (to that one backend session only).
 */
async function backend(t: TestContext, name: string, tools: string[]): Promise<Backend> {
  let listCalls = 0;
  let inits = 0;
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer((req, res) => {
    void (async () => {
      if (req.url === '/health') {
        res.writeHead(200).end('ok');
        return;
      }
      let body: unknown;
      if (req.method === 'POST') {
        const chunks: Buffer[] = [];
        for await (const c of req) chunks.push(c as Buffer);
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        const method = (body as { method?: string }).method;
        if (method === 'tools/list') listCalls++;
        if (method === 'initialize') inits++;
      }
      const sid = req.headers['mcp-session-id'];
      let transport = typeof sid === 'string' ? transports.get(sid) : undefined;
      if (transport === undefined) {
        if (req.method !== 'POST') {
          res.writeHead(400).end();
          return;
        }
        const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: randomUUID,
          onsessioninitialized: (id): void => {
            transports.set(id, created);
          },
        });
        const server = new Server(
          { name, version: '1.0.0' },
          { capabilities: { tools: { listChanged: true } } },
        );
        server.setRequestHandler(ListToolsRequestSchema, async () => ({
          tools: tools.map((n) => ({
            name: n,
            description: `${n} of ${name}`,
            inputSchema: { type: 'object' },
          })),
        }));
        server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
          if (req.params.name === 'grow') {
            tools.push('grown');
            await extra.sendNotification({ method: 'notifications/tools/list_changed' });
          }
          return { content: [{ type: 'text', text: `${name} ran ${req.params.name}` }] };
        });
        await server.connect(created);
        transport = created;
      }
      await transport.handleRequest(req, res, body);
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  t.after(async () => {
    for (const tr of transports.values()) await tr.close().catch(() => undefined);
    http.closeAllConnections();
    http.close();
  });
  const port = (http.address() as AddressInfo).port;
  return {
    name,
    url: `http://127.0.0.1:${port}/mcp`,
    tools,
    listCalls: () => listCalls,
    inits: () => inits,
  };
}

interface Client {
  request(method: string, params?: Record<string, unknown>): Promise<Record<string, unknown>>;
  tools(): Promise<string[]>;
  /** Resolves on the next notification `method` (call before causing it). */
  next(method: string): Promise<void>;
}

/** A client session of the virtual server, spoken to as the proxy's bridge does. */
async function connect(t: TestContext, server: VirtualMcpServer): Promise<Client> {
  const child: SessionChild = await server.spawn();
  t.after(() => child.stop());
  const answers = new Map<
    number,
    (m: { result?: Record<string, unknown>; error?: { message: string } }) => void
  >();
  const notes = new EventEmitter();
  assert.ok('inProcess' in child, 'a virtual session is an in-process server');
  const send = child.inProcess.connect({
    message(text) {
      const m = JSON.parse(text) as {
        id?: number;
        method?: string;
        result?: Record<string, unknown>;
        error?: { message: string };
      };
      if (m.method !== undefined) notes.emit(m.method);
      else if (typeof m.id === 'number') answers.get(m.id)?.(m);
    },
    closed() {},
  });
  let seq = 0;
  const request = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const id = ++seq;
      answers.set(id, (m) => {
        answers.delete(id);
        if (m.error !== undefined) reject(new Error(m.error.message));
        else resolve(m.result ?? {});
      });
      send({ jsonrpc: '2.0', id, method, params });
    });
  await request('initialize', {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'list-cache-test', version: '1' },
  });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return {
    request,
    tools: async () => ((await request('tools/list')).tools as { name: string }[]).map((x) => x.name).sort(),
    next: async (method) => {
      await once(notes, method);
    },
  };
}

async function virtualServer(
  t: TestContext,
  discover: () => BackendInfo[],
  listCacheMaxAgeMs?: number,
): Promise<VirtualMcpServer> {
  const options = {
    name: 'hub',
    config: parseVmcpConfig({}),
    discover,
    logger: silentLogger,
    pollMs: 50,
    auth: {
      logger: silentLogger,
      secretLookup: async () => undefined,
      env: {},
      authServer: undefined,
      upstreamNames: [],
    },
  };
  // The age bound is a constant (30 s, the reference's); a test shortens it on its own server.
  const server =
    listCacheMaxAgeMs === undefined
      ? new VirtualMcpServer(options)
      : new (class extends VirtualMcpServer {
          readonly listCacheMaxAgeMs = listCacheMaxAgeMs;
        })(options);
  t.after(() => server.close());
  await server.start();
  return server;
}

const info = (b: Backend): BackendInfo => ({ name: b.name, url: b.url, runConfig: undefined });

test('virtual MCP: backend lists are shared by sessions and invalidated', { timeout: 60_000 }, async (t) => {
  const one = await backend(t, 'one', ['grow', 'search', 'status']);
  let two = await backend(t, 'two', ['search', 'deploy']);
  let served = [info(one), info(two)];
  const server = await virtualServer(t, () => served);
  const all = ['one_grow', 'one_search', 'one_status', 'two_deploy', 'two_search'];

  const a = await connect(t, server);
  const b = await connect(t, server);

  await t.test('a new session lists from the cache, without asking any backend', async (t) => {
    assert.deepEqual(await a.tools(), all);
    assert.equal(one.listCalls(), 1);
    assert.equal(two.listCalls(), 1);
    const opened = one.inits() + two.inits();
    assert.deepEqual(await b.tools(), all);
    const c = await connect(t, server);
    assert.deepEqual(await c.tools(), all);
    assert.equal(one.listCalls() + two.listCalls(), 2, 'no backend was listed again');
    assert.equal(one.inits() + two.inits(), opened, 'no backend session was opened to list');
    // A call still opens the session it needs, lazily.
    assert.equal((await b.request('tools/call', { name: 'two_deploy' }))['content'] !== undefined, true);
    assert.equal(two.inits(), 2);
  });

  await t.test(
    'a list_changed sent to one session reaches every session, with one shared reload',
    async (t) => {
      const before = one.listCalls();
      const changedA = a.next('notifications/tools/list_changed');
      const changedB = b.next('notifications/tools/list_changed');
      // `grow` announces on a's backend session only.
      const grew = (await a.request('tools/call', { name: 'one_grow' })) as {
        content: { text: string }[];
      };
      assert.equal(grew.content[0]?.text, 'one ran grow');
      await Promise.all([changedA, changedB]);
      const now = [...all, 'one_grown'].sort();
      assert.deepEqual(await a.tools(), now);
      assert.deepEqual(await b.tools(), now);
      const c = await connect(t, server);
      assert.deepEqual(await c.tools(), now);
      assert.equal(one.listCalls(), before + 1, 'one reload, shared by the sessions');
      const ran = (await c.request('tools/call', { name: 'one_grown' })) as { content: { text: string }[] };
      assert.equal(ran.content[0]?.text, 'one ran grown');
    },
  );

  await t.test(
    'a backend that leaves is dropped; back at another URL, its new lists are listed',
    async (t) => {
      const left = a.next('notifications/tools/list_changed');
      served = [info(one)];
      await left;
      assert.deepEqual(await a.tools(), ['one_grow', 'one_grown', 'one_search', 'one_status']);
      two = await backend(t, 'two', ['fresh']);
      const back = a.next('notifications/tools/list_changed');
      served = [info(one), info(two)];
      await back;
      const now = ['one_grow', 'one_grown', 'one_search', 'one_status', 'two_fresh'];
      assert.deepEqual(await a.tools(), now);
      const c = await connect(t, server);
      assert.deepEqual(await c.tools(), now);
    },
  );
});

test('virtual MCP: cached backend lists have a bounded age', { timeout: 60_000 }, async (t) => {
  const quiet = await backend(t, 'quiet', ['search']);
  const server = await virtualServer(t, () => [info(quiet)], 300);
  const a = await connect(t, server);
  assert.deepEqual(await a.tools(), ['quiet_search']);
  const listed = quiet.listCalls();
  // A change the backend does not announce.
  quiet.tools.push('added');
  await waitFor(
    'the unannounced tool to be listed',
    async () => ((await a.tools()).includes('quiet_added') ? true : undefined),
    10_000,
  );
  assert.ok(quiet.listCalls() > listed, 'the backend was listed again once its entry was too old');
  const c = await connect(t, server);
  assert.deepEqual(await c.tools(), ['quiet_added', 'quiet_search']);
});
