/**
 * The multiplexer's routing rules (one stdio child, many client sessions),
 * driven through in-memory streams: the test plays the child, reading what the proxy writes
 * to its stdin and writing replies to its stdout.
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { type TestContext, test } from 'node:test';
import type { JsonRpcMessage } from '../../../src/protocol/index.js';
import type { ReplyTarget } from '../../../src/dataplane/proxy/outlets.js';
import { PROXY_DEFAULTS } from '../../../src/dataplane/proxy/proxy-server.js';
import { Session } from '../../../src/dataplane/proxy/session.js';
import { StdioBridge } from '../../../src/dataplane/proxy/stdio-bridge.js';
import { createToolPolicy } from '../../../src/dataplane/proxy/tool-policy.js';
import { silentLogger } from '../../../src/shared/index.js';

class FakeChild {
  readonly stdin = new PassThrough();
  readonly stdout = new PassThrough();
  private buffer = '';
  private readonly seen: JsonRpcMessage[] = [];
  private waiters: Array<() => void> = [];
  constructor() {
    this.stdin.setEncoding('utf8');
    this.stdin.on('data', (chunk: string) => {
      this.buffer += chunk;
      let nl = this.buffer.indexOf('\n');
      while (nl !== -1) {
        this.seen.push(JSON.parse(this.buffer.slice(0, nl)) as JsonRpcMessage);
        this.buffer = this.buffer.slice(nl + 1);
        nl = this.buffer.indexOf('\n');
      }
      for (const w of this.waiters.splice(0)) w();
    });
  }
  /** The next message the proxy sent, optionally the next with this method. */
  async next(method?: string): Promise<JsonRpcMessage> {
    for (;;) {
      const i = this.seen.findIndex((m) => method === undefined || m.method === method);
      if (i !== -1) return this.seen.splice(i, 1)[0]!;
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }
  has(method: string): boolean {
    return this.seen.some((m) => m.method === method);
  }
  count(method: string): number {
    return this.seen.filter((m) => m.method === method).length;
  }
  send(msg: unknown): void {
    this.stdout.write(`${JSON.stringify(msg)}\n`);
  }
}

/** Messages a fake client receives; a test awaits a count instead of sleeping. */
class Inbox {
  readonly messages: JsonRpcMessage[] = [];
  private waiters: Array<() => void> = [];
  push(text: string): void {
    this.messages.push(JSON.parse(text) as JsonRpcMessage);
    for (const w of this.waiters.splice(0)) w();
  }
  /** Resolves once `n` messages arrived. */
  async holds(n: number): Promise<void> {
    while (this.messages.length < n) await new Promise<void>((r) => this.waiters.push(r));
  }
}

class Collector implements ReplyTarget {
  readonly inbox = new Inbox();
  get interims(): JsonRpcMessage[] {
    return this.inbox.messages;
  }
  final_: JsonRpcMessage | undefined;
  private resolve: (() => void) | undefined;
  readonly done = new Promise<void>((r) => {
    this.resolve = r;
  });
  get open(): boolean {
    return this.final_ === undefined;
  }
  interim(text: string): boolean {
    this.inbox.push(text);
    return true;
  }
  final(text: string): void {
    this.final_ = JSON.parse(text) as JsonRpcMessage;
    this.resolve?.();
  }
}

class StreamOutlet {
  readonly inbox = new Inbox();
  get messages(): JsonRpcMessage[] {
    return this.inbox.messages;
  }
  open = true;
  send(text: string): boolean {
    this.inbox.push(text);
    return true;
  }
  close(): void {
    this.open = false;
  }
}

async function setup(t: TestContext, filter?: string[]) {
  const sessions = new Set<Session>();
  const bridge = new StdioBridge({
    logger: silentLogger,
    limits: { ...PROXY_DEFAULTS, serverRequestTimeoutMs: 60_000 },
    policy: createToolPolicy(filter, undefined),
    serverName: 'fake',
    sessions: () => sessions,
  });
  t.after(() => bridge.close());
  const child = new FakeChild();
  const attached = bridge.attach({ stdin: child.stdin, stdout: child.stdout });
  const init = await child.next('initialize');
  assert.deepEqual(Object.keys((init.params as { capabilities: object }).capabilities).sort(), [
    'elicitation',
    'roots',
    'sampling',
  ]);
  child.send({
    jsonrpc: '2.0',
    id: init.id,
    result: {
      protocolVersion: '2025-06-18',
      capabilities: { logging: {} },
      serverInfo: { name: 'fake', version: '1' },
    },
  });
  await attached;
  await child.next('notifications/initialized');
  const open = (caps: Record<string, unknown> = {}): Session => {
    const s = new Session(`s${sessions.size}`, 'streamable-http');
    s.clientCapabilities = caps;
    s.standing = new StreamOutlet();
    sessions.add(s);
    return s;
  };
  return { bridge, child, open, sessions };
}

const request = (
  id: number | string,
  method: string,
  params: Record<string, unknown> = {},
): JsonRpcMessage => ({
  jsonrpc: '2.0',
  id,
  method,
  params,
});

test('request ids: equal client ids from two sessions reach the child as distinct ids and come back restored', async (t) => {
  const { bridge, child, open } = await setup(t);
  const a = open();
  const b = open();
  const ra = new Collector();
  const rb = new Collector();
  bridge.handle(a, request(1, 'tools/call', { name: 'x' }), ra);
  bridge.handle(b, request(1, 'tools/call', { name: 'y' }), rb);
  const first = await child.next('tools/call');
  const second = await child.next('tools/call');
  assert.notEqual(first.id, second.id);
  // Answer out of order.
  child.send({ jsonrpc: '2.0', id: second.id, result: { from: 'y' } });
  child.send({ jsonrpc: '2.0', id: first.id, result: { from: 'x' } });
  await Promise.all([ra.done, rb.done]);
  assert.deepEqual(ra.final_, { jsonrpc: '2.0', id: 1, result: { from: 'x' } });
  assert.deepEqual(rb.final_, { jsonrpc: '2.0', id: 1, result: { from: 'y' } });
});

test('a session keeps its latest response target only while a request is in flight', async (t) => {
  // An idle session must not pin the last HTTP response (and its socket) until it expires.
  const { bridge, child, open } = await setup(t);
  const a = open();
  const first = new Collector();
  const second = new Collector();
  bridge.handle(a, request(1, 'tools/call', { name: 'x' }), first);
  bridge.handle(a, request(2, 'tools/call', { name: 'y' }), second);
  const calls = [await child.next('tools/call'), await child.next('tools/call')];
  assert.equal(a.lastTarget, second);
  child.send({ jsonrpc: '2.0', id: calls[0]!.id, result: {} });
  await first.done;
  assert.equal(a.inflight, 1);
  assert.equal(a.lastTarget, second, 'still in flight: progress and server requests go there');
  child.send({ jsonrpc: '2.0', id: calls[1]!.id, result: {} });
  await second.done;
  assert.equal(a.inflight, 0);
  assert.equal(a.lastTarget, undefined);
});

test('a client that can answer roots, once initialized and reachable, tells the shared child its roots changed (once)', async (t) => {
  const { bridge, child, open } = await setup(t);
  const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' } as JsonRpcMessage;
  bridge.handle(open({}), initialized, undefined);
  const roots = { roots: { listChanged: true } };
  bridge.handle(open(roots), initialized, undefined);
  // Initialized before its GET stream is open: announced when the stream opens, and only then.
  const late = open(roots);
  late.standing = undefined;
  bridge.handle(late, initialized, undefined);
  const marker = async (id: number) => {
    // A request after the others: everything the bridge sent before it has arrived.
    bridge.handle(open(), request(id, 'tools/call', { name: 'x' }), new Collector());
    await child.next('tools/call');
  };
  await marker(9);
  assert.equal(child.count('notifications/roots/list_changed'), 1);
  late.standing = new StreamOutlet();
  bridge.announceRoots(late);
  bridge.announceRoots(late);
  await marker(10);
  assert.equal(child.count('notifications/roots/list_changed'), 2);
  assert.equal(child.has('notifications/initialized'), false, 'a client initialized is never forwarded');
});

test('progress tokens are rewritten per request and progress goes back to the owner with its own token', async (t) => {
  const { bridge, child, open } = await setup(t);
  const a = open();
  const b = open();
  const ra = new Collector();
  const rb = new Collector();
  bridge.handle(a, request(5, 'tools/call', { name: 'x', _meta: { progressToken: 'tok' } }), ra);
  bridge.handle(b, request(5, 'tools/call', { name: 'x', _meta: { progressToken: 'tok' } }), rb);
  const ca = await child.next('tools/call');
  const cb = await child.next('tools/call');
  const tokA = (ca.params as { _meta: { progressToken: string } })._meta.progressToken;
  const tokB = (cb.params as { _meta: { progressToken: string } })._meta.progressToken;
  assert.notEqual(tokA, tokB);
  child.send({
    jsonrpc: '2.0',
    method: 'notifications/progress',
    params: { progressToken: tokB, progress: 1 },
  });
  child.send({ jsonrpc: '2.0', id: cb.id, result: {} });
  await rb.done;
  assert.deepEqual(rb.interims, [
    { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'tok', progress: 1 } },
  ]);
  assert.deepEqual(ra.interims, []);
});

test('notifications/cancelled from a client carries the proxy id of that client request', async (t) => {
  const { bridge, child, open } = await setup(t);
  const a = open();
  bridge.handle(a, request(9, 'tools/call', { name: 'slow' }), new Collector());
  const forwarded = await child.next('tools/call');
  bridge.handle(
    a,
    { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 9, reason: 'user' } },
    undefined,
  );
  const cancel = await child.next('notifications/cancelled');
  assert.equal((cancel.params as { requestId: unknown }).requestId, forwarded.id);
});

test('server → client requests go to the session whose request is in flight; with no capable session the child gets an error', async (t) => {
  const { bridge, child, open } = await setup(t);
  const idle = open({ sampling: {} });
  const busy = open({ sampling: {} });
  const target = new Collector();
  bridge.handle(busy, request(1, 'tools/call', { name: 'sample' }), target);
  const call = await child.next('tools/call');
  child.send({ jsonrpc: '2.0', id: 77, method: 'sampling/createMessage', params: { messages: [] } });
  await target.inbox.holds(1); // the bridge routes a line in one go: the idle session is settled too
  assert.equal(target.interims[0]?.method, 'sampling/createMessage');
  assert.equal((idle.standing as unknown as StreamOutlet).messages.length, 0);
  // The client answers with the child's id; the answer reaches the child unchanged.
  bridge.handle(
    busy,
    { jsonrpc: '2.0', id: 77, result: { role: 'assistant', content: { type: 'text', text: 'hi' } } },
    undefined,
  );
  const answer = await child.next();
  assert.equal(answer.id, 77);
  // The tool call then completes on its own stream.
  child.send({ jsonrpc: '2.0', id: call.id, result: {} });
  await target.done;

  // Elicitation: nobody declared the capability → JSON-RPC error to the child.
  child.send({ jsonrpc: '2.0', id: 78, method: 'elicitation/create', params: {} });
  const refused = await child.next();
  assert.equal(refused.id, 78);
  assert.equal(refused.error?.code, -32603);
});

test('resources/subscribe goes upstream once per URI; unsubscribe only when the last subscriber leaves; updates reach subscribers only', async (t) => {
  const { bridge, child, open } = await setup(t);
  const a = open();
  const b = open();
  const c = open();
  const r1 = new Collector();
  bridge.handle(a, request(1, 'resources/subscribe', { uri: 'file:///x' }), r1);
  const sub = await child.next('resources/subscribe');
  child.send({ jsonrpc: '2.0', id: sub.id, result: {} });
  await r1.done;
  const r2 = new Collector();
  bridge.handle(b, request(1, 'resources/subscribe', { uri: 'file:///x' }), r2);
  await r2.done; // answered by the proxy
  assert.equal(child.has('resources/subscribe'), false);

  child.send({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'file:///x' } });
  // A line is delivered to every subscriber in one go: once a and b have it, c is settled too.
  await (a.standing as unknown as StreamOutlet).inbox.holds(1);
  await (b.standing as unknown as StreamOutlet).inbox.holds(1);
  assert.equal((a.standing as unknown as StreamOutlet).messages.length, 1);
  assert.equal((b.standing as unknown as StreamOutlet).messages.length, 1);
  assert.equal((c.standing as unknown as StreamOutlet).messages.length, 0);

  const r3 = new Collector();
  bridge.handle(a, request(2, 'resources/unsubscribe', { uri: 'file:///x' }), r3);
  await r3.done;
  assert.equal(child.has('resources/unsubscribe'), false);
  bridge.sessionClosed(b); // the last subscriber leaves
  const unsub = await child.next('resources/unsubscribe');
  assert.equal((unsub.params as { uri: string }).uri, 'file:///x');
});

test('logging: the child runs at the most verbose level asked for; each session gets only its levels; list_changed goes to all', async (t) => {
  const { bridge, child, open } = await setup(t);
  const quiet = open();
  const chatty = open();
  const rq = new Collector();
  bridge.handle(quiet, request(1, 'logging/setLevel', { level: 'error' }), rq);
  const first = await child.next('logging/setLevel');
  assert.equal((first.params as { level: string }).level, 'error');
  child.send({ jsonrpc: '2.0', id: first.id, result: {} });
  await rq.done;
  const rc = new Collector();
  bridge.handle(chatty, request(1, 'logging/setLevel', { level: 'debug' }), rc);
  const second = await child.next('logging/setLevel');
  assert.equal((second.params as { level: string }).level, 'debug');
  child.send({ jsonrpc: '2.0', id: second.id, result: {} });
  await rc.done;

  child.send({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'detail' } });
  child.send({
    jsonrpc: '2.0',
    method: 'notifications/message',
    params: { level: 'critical', data: 'boom' },
  });
  child.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
  // Every session gets list_changed, the last line: once chatty has it, all three lines are routed.
  await (chatty.standing as unknown as StreamOutlet).inbox.holds(3);
  const q = (quiet.standing as unknown as StreamOutlet).messages.map(
    (m) => m.method + ':' + String(m.params?.['data'] ?? ''),
  );
  const c = (chatty.standing as unknown as StreamOutlet).messages.map(
    (m) => m.method + ':' + String(m.params?.['data'] ?? ''),
  );
  assert.deepEqual(q, ['notifications/message:boom', 'notifications/tools/list_changed:']);
  assert.deepEqual(c, [
    'notifications/message:detail',
    'notifications/message:boom',
    'notifications/tools/list_changed:',
  ]);
});

test('a dead child fails in-flight requests with JSON-RPC -32000; new requests wait and run on the next child', async (t) => {
  const { bridge, child, open } = await setup(t);
  const a = open();
  const inflight = new Collector();
  bridge.handle(a, request('q', 'tools/call', { name: 'x' }), inflight);
  await child.next('tools/call');
  child.stdout.end(); // the child's output ends: it died
  await inflight.done;
  assert.equal(inflight.final_?.id, 'q');
  assert.equal(inflight.final_?.error?.code, -32000);

  const waiting = new Collector();
  bridge.handle(a, request('w', 'tools/call', { name: 'x' }), waiting);
  const next = new FakeChild();
  const attached = bridge.attach({ stdin: next.stdin, stdout: next.stdout });
  const init = await next.next('initialize');
  next.send({
    jsonrpc: '2.0',
    id: init.id,
    result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'fake', version: '2' } },
  });
  await attached;
  const call = await next.next('tools/call');
  next.send({ jsonrpc: '2.0', id: call.id, result: { ok: true } });
  await waiting.done;
  assert.deepEqual(waiting.final_, { jsonrpc: '2.0', id: 'w', result: { ok: true } });
});
