import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Auditor } from '../../../src/dataplane/middleware/audit/auditor.js';
import { parseAuditConfig } from '../../../src/dataplane/middleware/audit/config.js';
import type { AuditEvent } from '../../../src/dataplane/middleware/audit/event.js';
import { AuditWriter } from '../../../src/dataplane/middleware/audit/writer.js';
import type { ProxyRequestContext } from '../../../src/dataplane/proxy/index.js';
import { silentLogger } from '../../../src/shared/index.js';

type ReplyHook = Parameters<ProxyRequestContext['onReply']>[0];
type EndHook = Parameters<ProxyRequestContext['onEnd']>[0];

/** A request context whose hooks the test fires itself. */
function fakeContext(overrides: Partial<ProxyRequestContext> = {}) {
  const replies: ReplyHook[] = [];
  const ends: EndHook[] = [];
  const ctx: ProxyRequestContext = {
    method: 'POST',
    path: '/mcp',
    query: '',
    headers: {},
    remoteAddress: '127.0.0.1',
    remotePort: 50000,
    httpVersion: '1.1',
    identity: {},
    outboundHeaders: {},
    body: undefined,
    bodyText: '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}',
    mcp: {
      method: 'tools/call',
      id: 7,
      resourceId: 'echo',
      arguments: undefined,
      message: { jsonrpc: '2.0', id: 7, method: 'tools/call' },
    },
    serverName: 'srv',
    backendTransport: 'stdio',
    replaceBody() {},
    spanAttributes: undefined,
    setSpanAttribute() {},
    workSpan: undefined,
    onReply: (hook: ReplyHook) => replies.push(hook),
    onEnd: (hook: EndHook) => ends.push(hook),
    ...overrides,
  };
  return {
    ctx,
    reply: (message: Record<string, unknown>) => {
      for (const hook of replies.toReversed()) void hook({ jsonrpc: '2.0', ...message });
    },
    end: (status: number) => {
      for (const hook of ends) hook({ status, completed: true });
    },
    replyHooks: replies,
  };
}

function auditorWith(
  config: unknown = {},
  options: { replyWaitMs?: number; claims?: Record<string, unknown> } = {},
) {
  const events: AuditEvent[] = [];
  const written = new Set<() => void>();
  const writer = new AuditWriter<AuditEvent>({
    sink: {
      write(batch) {
        events.push(...batch);
        for (const wake of written) wake();
      },
      close() {},
    },
    logger: silentLogger,
  });
  const auditor = new Auditor({
    config: parseAuditConfig(config),
    component: 'srv',
    trustProxyHeaders: false,
    writer,
    unauthenticatedClaims: () => options.claims,
    ...(options.replyWaitMs === undefined ? {} : { replyWaitMs: options.replyWaitMs }),
  });
  /** Resolves once `n` events were written. */
  const until = (n: number) =>
    new Promise<AuditEvent[]>((resolve) => {
      const check = () => {
        if (events.length >= n) {
          written.delete(check);
          resolve(events);
        }
      };
      written.add(check);
      check();
    });
  return { auditor, events, until };
}

test('an exchange is written when it ends, with the answer seen through onReply', async () => {
  const { auditor, until } = auditorWith();
  const request = fakeContext();
  auditor.handle(request.ctx);
  request.reply({ id: 7, result: { content: [] } });
  request.end(200);
  const [event] = await until(1);
  assert.equal(event?.type, 'mcp_tool_call');
  assert.equal(event?.outcome, 'success');
  await auditor.close();
});

test('the identity set by a later stage is read at the end; unauthenticated requests get the fallback claims', async () => {
  const { auditor, until } = auditorWith({}, { claims: { sub: 'local-user', name: 'Local User: me' } });
  const authed = fakeContext();
  const local = fakeContext();
  auditor.handle(authed.ctx);
  auditor.handle(local.ctx);
  authed.ctx.identity = { claims: { sub: 'alice', email: 'alice@example.com' } };
  authed.end(403);
  local.end(200);
  const events = await until(2);
  assert.deepEqual(events[0]?.subjects, { user: 'alice@example.com', user_id: 'alice' });
  assert.equal(events[0]?.outcome, 'denied');
  assert.deepEqual(events[1]?.subjects, { user: 'Local User: me', user_id: 'local-user' });
  await auditor.close();
});

test('legacy SSE: a 202 waits for the answer on the stream, whose error makes the outcome', async () => {
  const { auditor, events, until } = auditorWith();
  const request = fakeContext({ path: '/messages' });
  auditor.handle(request.ctx);
  request.end(202);
  assert.equal(events.length, 0, 'nothing is written before the answer');
  request.reply({ id: 7, error: { code: -32602, message: 'Unknown tool' } });
  const [event] = await until(1);
  assert.equal(event?.outcome, 'application_error');
  assert.equal(event?.metadata?.extra['jsonrpc_error_code'], -32602);
  assert.equal(event?.metadata?.extra['transport'], 'sse');
  await auditor.close();
});

test('legacy SSE: the wait is bounded; without an answer the event is written with what is known', async () => {
  const { auditor, until } = auditorWith({}, { replyWaitMs: 20 });
  const request = fakeContext({ path: '/messages' });
  auditor.handle(request.ctx);
  request.end(202);
  // The wait's timer does not hold the process open (a live proxy does); this test must.
  const keepAlive = setInterval(() => {}, 1000);
  const [event] = await until(1).finally(() => clearInterval(keepAlive));
  assert.equal(event?.outcome, 'success');
  await auditor.close();
});

test('close() writes the events still open: a 202 awaiting its answer, a stream (established), a request in flight (error)', async () => {
  const { auditor, events } = auditorWith({}, { replyWaitMs: 3_600_000 });
  const accepted = fakeContext({ path: '/messages' });
  auditor.handle(accepted.ctx);
  accepted.end(202);
  const stream = fakeContext({
    method: 'GET',
    path: '/sse',
    headers: { accept: 'text/event-stream' },
    mcp: undefined,
    bodyText: undefined,
  });
  auditor.handle(stream.ctx);
  const inFlight = fakeContext();
  auditor.handle(inFlight.ctx);
  await auditor.close();
  assert.deepEqual(
    events.map((e) => [e.type, e.outcome]),
    [
      ['mcp_tool_call', 'success'],
      ['sse_connection', 'success'],
      ['mcp_tool_call', 'error'],
    ],
  );
  // An end that comes after close writes nothing more.
  stream.end(200);
  assert.equal(events.length, 3);
});

test('a notification (no id) registers no reply hook and is written at its 202', async () => {
  const { auditor, until } = auditorWith();
  const request = fakeContext({
    mcp: {
      method: 'notifications/initialized',
      id: undefined,
      resourceId: undefined,
      arguments: undefined,
      message: { jsonrpc: '2.0', method: 'notifications/initialized' },
    },
  });
  auditor.handle(request.ctx);
  assert.equal(request.replyHooks.length, 0);
  request.end(202);
  const [event] = await until(1);
  assert.equal(event?.type, 'mcp_request');
  assert.equal(event?.target['method'], 'notifications/initialized');
  await auditor.close();
});

test('a stream open is one sse_connection event with the status it got', async () => {
  const { auditor, until } = auditorWith();
  const request = fakeContext({
    method: 'GET',
    path: '/sse',
    headers: { accept: 'text/event-stream' },
    mcp: undefined,
    bodyText: undefined,
  });
  auditor.handle(request.ctx);
  assert.equal(request.replyHooks.length, 0);
  request.end(200);
  const [event] = await until(1);
  assert.equal(event?.type, 'sse_connection');
  assert.equal(event?.target['type'], 'sse_endpoint');
  await auditor.close();
});

test('the answer hook asks to see only answers the event needs, so the others are relayed unparsed', () => {
  const needsOf = (config: unknown, path = '/mcp') => {
    const options: Array<{ needs?: (text: string) => boolean; observeOnly?: boolean }> = [];
    const { auditor } = auditorWith(config);
    auditor.handle(
      fakeContext({
        path,
        onReply: (_hook: ReplyHook, o?: { needs?: (text: string) => boolean; observeOnly?: boolean }) =>
          void options.push(o ?? {}),
      }).ctx,
    );
    assert.equal(options.length, 1);
    assert.equal(options[0]?.observeOnly, true);
    return options[0]?.needs;
  };
  const plain = '{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}';
  // Application errors are detected by default: only an answer that may hold one is parsed.
  const detect = needsOf({});
  assert.equal(detect?.(plain), false);
  assert.equal(detect?.('{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"x"}}'), true);
  assert.equal(detect?.('{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":true}}'), true);
  assert.equal(detect?.('{"jsonrpc":"2.0","id":7,"\\u0065rror":{"code":1,"message":"x"}}'), true);
  // Nothing to detect: no answer is needed.
  assert.equal(needsOf({ detectApplicationErrors: false })?.(plain), false);
  assert.equal(needsOf({ detectApplicationErrors: false })?.('{"error":{}}'), false);
  // Response data, and a legacy-SSE POST (its event waits for the answer): every answer.
  assert.equal(needsOf({ includeResponseData: true }), undefined);
  assert.equal(needsOf({}, '/messages'), undefined);
});
