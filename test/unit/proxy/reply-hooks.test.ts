import assert from 'node:assert/strict';
import test from 'node:test';
import { HookedTarget } from '../../../src/dataplane/proxy/reply-hooks.js';
import { newRequestContext } from '../../../src/dataplane/proxy/request-context.js';
import type { ReplyTarget } from '../../../src/dataplane/proxy/outlets.js';
import type { JsonRpcMessage } from '../../../src/protocol/index.js';

/** A reply target that records the final answer. */
function recording(): ReplyTarget & { finals: string[] } {
  const finals: string[] = [];
  return { finals, open: true, interim: () => false, final: (text) => void finals.push(text) };
}

// The server's own spelling: spaces and key order a re-serialization would change.
const ANSWER = '{"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "hi"}]}}';

test('observe-only hooks see the answer and it is relayed exactly as the server wrote it', () => {
  const inner = recording();
  const seen: JsonRpcMessage[] = [];
  new HookedTarget(inner, [(reply) => void seen.push(reply)], false).final(ANSWER);
  assert.equal(seen.length, 1);
  assert.deepEqual(seen[0]?.result, { content: [{ type: 'text', text: 'hi' }] });
  assert.deepEqual(inner.finals, [ANSWER]);
});

test('a hook that may rewrite the answer gets it re-serialized with its changes', () => {
  const inner = recording();
  const rename = (reply: JsonRpcMessage): void => {
    (reply.result as { content: { text: string }[] }).content[0]!.text = 'changed';
  };
  new HookedTarget(inner, [rename], true).final(ANSWER);
  assert.deepEqual(JSON.parse(inner.finals[0]!), {
    jsonrpc: '2.0',
    id: 7,
    result: { content: [{ type: 'text', text: 'changed' }] },
  });
});

test('an observe-only hook that throws still fails closed: the client gets an internal error', async () => {
  const inner = recording();
  new HookedTarget(
    inner,
    [
      () => {
        throw new Error('broken observer');
      },
    ],
    false,
  ).final(ANSWER);
  const sent = JSON.parse(inner.finals[0]!) as JsonRpcMessage;
  assert.equal(sent.id, 7);
  assert.equal(sent.result, undefined);
  assert.deepEqual(sent.error, { code: -32603, message: 'internal error' });
  // And a rejecting asynchronous observer the same way.
  const later = recording();
  new HookedTarget(later, [() => Promise.reject(new Error('no'))], false).final(ANSWER);
  await new Promise((r) => setImmediate(r));
  assert.equal((JSON.parse(later.finals[0]!) as JsonRpcMessage).error?.code, -32603);
});

test('gates: an answer no hook needs is relayed unparsed and the hooks are not called; one that needs it runs them all', () => {
  const calls: string[] = [];
  const hooks = [() => void calls.push('a'), () => void calls.push('b')];
  const skipped = recording();
  new HookedTarget(skipped, hooks, false, [() => false, () => false]).final(ANSWER);
  assert.deepEqual(calls, [], 'no hook ran');
  assert.deepEqual(skipped.finals, [ANSWER]);
  const needed = recording();
  new HookedTarget(needed, hooks, false, [() => false, (text) => text.includes('"hi"')]).final(ANSWER);
  assert.deepEqual(calls, ['b', 'a'], 'every hook ran (innermost first) once one gate said so');
  assert.deepEqual(needed.finals, [ANSWER]);
});

test('a request context keeps each hook’s gate in order, and none once a hook has no gate', () => {
  const init = { method: 'POST', path: '/mcp', serverName: 'w', backendTransport: 'stdio' as const };
  const gated = newRequestContext(init);
  const first = (text: string) => text.includes('x');
  const second = (text: string) => text.includes('y');
  gated.ctx.onReply(() => undefined, { needs: first, observeOnly: true });
  gated.ctx.onReply(() => undefined, { needs: second, observeOnly: true });
  assert.deepEqual(gated.replyGates, [first, second]);
  const mixed = newRequestContext(init);
  mixed.ctx.onReply(() => undefined, { needs: first });
  mixed.ctx.onReply(() => undefined);
  mixed.ctx.onReply(() => undefined, { needs: second });
  assert.equal(mixed.replyGates, undefined, 'an ungated hook needs every answer');
});
