/**
 * The proxy's opt-in one-child-per-session mode (`ProxyOptions.perSession`) with real child
 * processes: a stdio server that keeps a per-process counter (test/fixtures/mcp/counter-server.ts),
 * spawned by the test's own `spawn` function, which records every child so the test can check
 * which processes are gone.
 */
import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createContext } from '../../../src/control/app/index.js';
import type { PerSessionOptions, RunningProxy, SessionChild } from '../../../src/dataplane/proxy/index.js';
import { runWorkload } from '../../../src/dataplane/runner/index.js';
import { silentLogger } from '../../../src/shared/index.js';
import { WorkloadManager } from '../../../src/workloads/index.js';
import { tempHome } from '../../helpers/home.js';
import { waitFor, workloadEndpoint } from '../workloads/helpers.js';
import { proxyFor } from './helpers.js';

const COUNTER = join(dirname(fileURLToPath(import.meta.url)), '../../fixtures/mcp/counter-server.ts');
const ACCEPT = 'application/json, text/event-stream';

interface Spawned {
  readonly child: ChildProcessWithoutNullStreams;
  readonly exit: Promise<void>;
}

/** A `spawn` for `perSession` that starts counter servers and remembers them by pid. */
function counterSpawner(t: TestContext): { spawn: PerSessionOptions['spawn']; byPid: Map<number, Spawned> } {
  const byPid = new Map<number, Spawned>();
  t.after(() => {
    for (const { child } of byPid.values())
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const spawnCounter = async (): Promise<SessionChild> => {
    const child = spawn(process.execPath, ['--import', 'tsx', COUNTER], { stdio: ['pipe', 'pipe', 'pipe'] });
    child.stderr.resume();
    const exit = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    byPid.set(child.pid as number, { child, exit });
    return {
      stdin: child.stdin,
      stdout: child.stdout,
      exited: exit,
      stop: async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exit;
        clearTimeout(killer);
      },
    };
  };
  return { spawn: spawnCounter, byPid };
}

async function perSessionProxy(
  t: TestContext,
  options: Partial<PerSessionOptions> = {},
): Promise<{ proxy: RunningProxy; byPid: Map<number, Spawned> }> {
  const { spawn: spawnCounter, byPid } = counterSpawner(t);
  const proxy = await proxyFor(t, undefined, {
    perSession: { spawn: spawnCounter, maxChildren: 4, idleMs: 30 * 60_000, ...options },
  });
  return { proxy, byPid };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

async function count(client: Client): Promise<{ count: number; pid: number }> {
  const result = await client.callTool({ name: 'count', arguments: {} });
  const content = result.content as Array<{ type: string; text: string }>;
  return JSON.parse(content[0]?.text ?? '') as { count: number; pid: number };
}

async function streamableClient(t: TestContext, proxy: RunningProxy): Promise<Client> {
  const client = new Client({ name: 'per-session-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`)));
  t.after(() => client.close());
  return client;
}

async function post(proxy: RunningProxy, body: unknown, sessionId?: string): Promise<Response> {
  return fetch(`${proxy.url}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: ACCEPT,
      ...(sessionId === undefined ? {} : { 'mcp-session-id': sessionId }),
    },
    body: JSON.stringify(body),
  });
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

/** A raw streamable-HTTP session with no GET stream (so nothing keeps it from going idle). */
async function rawSession(proxy: RunningProxy): Promise<string> {
  const res = await post(proxy, INITIALIZE);
  assert.equal(res.status, 200);
  const sessionId = res.headers.get('mcp-session-id');
  assert.ok(sessionId);
  await res.text();
  const ack = await post(proxy, { jsonrpc: '2.0', method: 'notifications/initialized' }, sessionId);
  assert.equal(ack.status, 202);
  return sessionId;
}

async function rawCount(proxy: RunningProxy, sessionId: string): Promise<{ count: number; pid: number }> {
  const res = await post(
    proxy,
    { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'count', arguments: {} } },
    sessionId,
  );
  assert.equal(res.status, 200);
  const text = await res.text();
  // JSON or a one-event SSE stream, depending on how the proxy chose to answer.
  const json = text.startsWith('{') ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? '');
  const msg = JSON.parse(json) as { result: { content: Array<{ text: string }> } };
  return JSON.parse(msg.result.content[0]?.text ?? '') as { count: number; pid: number };
}

test('per-session: each client gets its own child and its own state', async (t) => {
  const { proxy, byPid } = await perSessionProxy(t);
  const a = await streamableClient(t, proxy);
  const b = await streamableClient(t, proxy);
  const a1 = await count(a);
  const a2 = await count(a);
  const b1 = await count(b);
  const a3 = await count(a);
  assert.deepEqual(
    [a1.count, a2.count, a3.count, b1.count],
    [1, 2, 3, 1],
    'each session sees its own counter',
  );
  assert.equal(a1.pid, a3.pid);
  assert.notEqual(a1.pid, b1.pid, 'the two sessions run on different processes');
  assert.deepEqual(new Set(byPid.keys()), new Set([a1.pid, b1.pid]), 'one child per session, no more');

  const health = (await (await fetch(`${proxy.url}/health`)).json()) as Record<string, unknown>;
  assert.equal(health['mode'], 'stdio-per-session');
  assert.equal(health['children'], 2);
});

test('per-session: DELETE of a session stops its child; the other session keeps working', async (t) => {
  const { proxy, byPid } = await perSessionProxy(t);
  const a = await streamableClient(t, proxy);
  const b = await streamableClient(t, proxy);
  const pidA = (await count(a)).pid;
  const pidB = (await count(b)).pid;
  const transport = a.transport as StreamableHTTPClientTransport;
  const sessionA = transport.sessionId;
  assert.ok(sessionA);
  await transport.terminateSession(); // DELETE /mcp
  await byPid.get(pidA)?.exit;
  assert.equal(isAlive(pidA), false, 'the deleted session’s child is gone');
  const after = await post(
    proxy,
    { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'count', arguments: {} } },
    sessionA,
  );
  assert.equal(after.status, 404, 'the ended session is unknown');
  await after.text();
  assert.deepEqual(await count(b), { count: 2, pid: pidB });
  assert.equal(isAlive(pidB), true);
});

test('per-session: an idle session is ended and its child reaped', async (t) => {
  const { proxy, byPid } = await perSessionProxy(t, { idleMs: 300 });
  const sessionId = await rawSession(proxy);
  const { count: n, pid } = await rawCount(proxy, sessionId);
  assert.equal(n, 1);
  // No deadline here: the test fails by its own timeout if the reaper never comes.
  await byPid.get(pid)?.exit;
  assert.equal(isAlive(pid), false);
  const res = await post(proxy, { jsonrpc: '2.0', id: 3, method: 'ping' }, sessionId);
  assert.equal(res.status, 404, 'the reaped session is gone; the client must re-initialize');
  await res.text();
});

test('per-session: beyond maxChildren a new session gets 503 with a JSON-RPC error', async (t) => {
  const { proxy, byPid } = await perSessionProxy(t, { maxChildren: 1 });
  const first = await rawSession(proxy);
  const refused = await post(proxy, INITIALIZE);
  assert.equal(refused.status, 503);
  const body = (await refused.json()) as { jsonrpc: string; error: { code: number; message: string } };
  assert.equal(body.jsonrpc, '2.0');
  assert.equal(body.error.code, -32000);
  assert.match(body.error.message, /Too many sessions: all 1 per-session MCP server processes are in use/);
  const sse = await fetch(`${proxy.url}/sse`, { headers: { accept: 'text/event-stream' } });
  assert.equal(sse.status, 503, 'the cap applies to SSE sessions too');
  await sse.text();
  assert.equal(byPid.size, 1, 'no child was spawned for the refused sessions');

  // Ending the first session frees the slot.
  const [pid] = byPid.keys();
  const del = await fetch(`${proxy.url}/mcp`, { method: 'DELETE', headers: { 'mcp-session-id': first } });
  assert.equal(del.status, 200);
  await byPid.get(pid as number)?.exit;
  const again = await rawSession(proxy);
  assert.equal((await rawCount(proxy, again)).count, 1, 'a fresh child for the new session');
});

test('per-session: an SSE session gets its own child, stopped when the stream closes', async (t) => {
  const { proxy, byPid } = await perSessionProxy(t);
  const sse = new Client({ name: 'sse', version: '1.0.0' });
  await sse.connect(new SSEClientTransport(new URL(`${proxy.url}/sse`)));
  const http = await streamableClient(t, proxy);
  const s1 = await count(sse);
  const h1 = await count(http);
  assert.equal(s1.count, 1);
  assert.equal(h1.count, 1);
  assert.notEqual(s1.pid, h1.pid);
  await sse.close();
  await byPid.get(s1.pid)?.exit;
  assert.equal(isAlive(s1.pid), false, 'closing the SSE stream reaps its child');
  assert.equal(isAlive(h1.pid), true);
});

test('per-session: a child that exits ends its session (404, so the client re-initializes)', async (t) => {
  const { proxy, byPid } = await perSessionProxy(t);
  const sessionId = await rawSession(proxy);
  const { pid } = await rawCount(proxy, sessionId);
  byPid.get(pid)?.child.kill('SIGKILL');
  await byPid.get(pid)?.exit;
  const res = await post(proxy, { jsonrpc: '2.0', id: 4, method: 'ping' }, sessionId);
  assert.equal(res.status, 404);
  await res.text();
  const health = (await (await fetch(`${proxy.url}/health`)).json()) as Record<string, unknown>;
  assert.equal(health['children'], 0);
});

test('per-session: close() stops every child before it resolves', async (t) => {
  const { proxy, byPid } = await perSessionProxy(t);
  const a = await streamableClient(t, proxy);
  const sse = new Client({ name: 'sse', version: '1.0.0' });
  await sse.connect(new SSEClientTransport(new URL(`${proxy.url}/sse`)));
  t.after(() => sse.close());
  await rawSession(proxy);
  await count(a);
  await count(sse);
  assert.equal(byPid.size, 3);
  await proxy.close();
  for (const pid of byPid.keys()) assert.equal(isAlive(pid), false, `child ${pid} is gone after close()`);
  await assert.rejects(
    proxy.setUpstream({ kind: 'http', url: 'http://127.0.0.1:1/mcp', transport: 'streamable-http' }),
  );
});

test('per-session: setUpstream is refused and stateless 2026 requests get a clear 400', async (t) => {
  const { proxy, byPid } = await perSessionProxy(t);
  await assert.rejects(
    proxy.setUpstream({ kind: 'http', url: 'http://127.0.0.1:1/mcp', transport: 'streamable-http' }),
    /one server per session/,
  );
  const res = await post(proxy, {
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/list',
    params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } },
  });
  assert.equal(res.status, 400);
  const body = (await res.json()) as { error: { message: string } };
  assert.match(body.error.message, /one process per session/);
  assert.equal(byPid.size, 0);
});

test(
  'runner: session_mode per-session serves each client from its own server process',
  { timeout: 120_000 },
  async (t) => {
    const home = tempHome(t);
    const ctx = createContext(home.config);
    const manager = new WorkloadManager({
      store: ctx.store,
      config: home.config,
      groups: ctx.groups,
      secretLookup: async () => undefined,
      // The runner runs in this process below; this pid (above pid_max) names no process.
      spawnRunner: () => 99_999_999,
    });
    ctx.groups.attachMembers(manager);
    t.after(async () => {
      await manager.close();
      await ctx.close();
    });
    await manager.create({
      name: 'counter',
      image: `cmd://${process.execPath}`,
      cmd_arguments: ['--import', import.meta.resolve('tsx'), COUNTER],
    });
    const row = manager.rows.get('counter');
    assert.ok(row);
    // The pids compared below are host pids: outside the sandbox (which has a pid namespace of its own).
    manager.rows.saveConfig({ ...row.config, session_mode: 'per-session', sandbox: 'off' });
    const controller = new AbortController();
    t.after(() => controller.abort());
    const done = runWorkload({
      name: 'counter',
      store: ctx.store,
      config: ctx.config,
      secretLookup: async () => undefined,
      logger: silentLogger,
      pid: 99_999_999,
      signal: controller.signal,
    });
    await waitFor('running', () => (manager.rows.get('counter')?.status === 'running' ? true : undefined));
    const url = new URL(workloadEndpoint(manager, 'counter'));
    const a = new Client({ name: 'a', version: '1.0.0' });
    await a.connect(new StreamableHTTPClientTransport(url));
    const b = new Client({ name: 'b', version: '1.0.0' });
    await b.connect(new StreamableHTTPClientTransport(url));
    t.after(async () => {
      await a.close();
      await b.close();
    });
    const a1 = await count(a);
    const a2 = await count(a);
    const b1 = await count(b);
    assert.deepEqual([a1.count, a2.count, b1.count], [1, 2, 1]);
    assert.notEqual(a1.pid, b1.pid);
    assert.equal(isAlive(a1.pid) && isAlive(b1.pid), true);
    controller.abort();
    assert.equal(await done, 0);
    assert.equal(manager.rows.get('counter')?.status, 'stopped');
    assert.equal(isAlive(a1.pid), false, 'stopping the workload stops every session’s server');
    assert.equal(isAlive(b1.pid), false);
  },
);
