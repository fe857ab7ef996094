import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type ExchangeEnd,
  newRequestContext,
  parseMcpRequest,
  type ReplyHook,
  runReplyHooks,
} from '../../../src/dataplane/proxy/index.js';
import type { JsonRpcMessage } from '../../../src/protocol/index.js';

test('the parser names what each method is about; responses and batches are not requests', () => {
  const call = parseMcpRequest(
    { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'shown', arguments: { a: 1 } } },
    (n) => (n === 'shown' ? 'real' : n),
  );
  assert.equal(call?.method, 'tools/call');
  assert.equal(call?.id, 7);
  assert.equal(call?.resourceId, 'real', 'tools/call names the server’s own tool');
  assert.deepEqual(call?.arguments, { a: 1 });
  const read = parseMcpRequest({
    jsonrpc: '2.0',
    id: 'x',
    method: 'resources/read',
    params: { uri: 'file:///a' },
  });
  assert.equal(read?.resourceId, 'file:///a');
  assert.equal(read?.arguments, undefined);
  const note = parseMcpRequest({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
  assert.equal(note?.id, undefined);
  assert.equal(note?.resourceId, 'notifications/tools/list_changed');
  assert.equal(parseMcpRequest({ jsonrpc: '2.0', id: 1, result: {} }), undefined);
  assert.equal(parseMcpRequest([{ jsonrpc: '2.0', id: 1, method: 'ping' }]), undefined);
});

test('reply hooks run innermost first, may be async, and a failing hook fails the answer closed', async () => {
  const order: string[] = [];
  const outer: ReplyHook = (r) => {
    order.push(`outer saw ${JSON.stringify(r.result)}`);
  };
  const inner: ReplyHook = async (r) => {
    await new Promise((resolve) => setImmediate(resolve));
    order.push('inner');
    r.result = { filtered: true };
  };
  const reply: JsonRpcMessage = { jsonrpc: '2.0', id: 1, result: { raw: true } };
  const done = runReplyHooks([outer, inner], reply);
  assert.ok(done instanceof Promise, 'an async hook makes the run async');
  await done;
  assert.deepEqual(order, ['inner', 'outer saw {"filtered":true}']);

  const syncReply: JsonRpcMessage = { jsonrpc: '2.0', id: 2, result: {} };
  assert.equal(runReplyHooks([() => {}], syncReply), undefined, 'sync hooks stay sync');

  const broken: JsonRpcMessage = { jsonrpc: '2.0', id: 3, result: { secret: 'list' } };
  void runReplyHooks(
    [
      (r) => {
        order.push(`after failure: ${JSON.stringify(r)}`);
      },
      () => {
        throw new Error('boom');
      },
    ],
    broken,
  );
  assert.equal(broken.result, undefined);
  assert.deepEqual(broken.error, { code: -32603, message: 'internal error' });
  assert.match(order.at(-1) ?? '', /-32603/);
});

test('request context: replaceBody re-parses and refuses non-messages; end hooks get the status once', () => {
  let fire: ((end: ExchangeEnd) => void) | undefined;
  const built = newRequestContext({
    method: 'POST',
    path: '/mcp',
    body: { json: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'a' } } },
    serverName: 'w',
    backendTransport: 'stdio',
    whenEnded: (f) => {
      fire = f;
    },
  });
  const { ctx } = built;
  ctx.replaceBody({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'b' } });
  assert.equal(ctx.mcp?.resourceId, 'b');
  assert.equal(ctx.bodyText, '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b"}}');
  assert.throws(() => ctx.replaceBody({ jsonrpc: '1.0', id: 1, method: 'x' }), TypeError);
  assert.throws(() => ctx.replaceBody([{ jsonrpc: '2.0', id: 1, method: 'x' }]), TypeError);
  assert.equal(ctx.mcp?.resourceId, 'b', 'a refused body changes nothing');
  const seen: number[] = [];
  ctx.onEnd((e) => seen.push(e.status));
  ctx.onEnd((e) => seen.push(e.status + 1));
  assert.ok(fire !== undefined, 'the first end hook subscribes');
  fire({ status: 403, completed: true });
  assert.deepEqual(seen, [403, 404]);
});
