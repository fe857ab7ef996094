import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../../src/shared/index.js';
import {
  type FailurePolicy,
  type WebhookCaller,
  type WebhookCallResult,
  type WebhookChainInput,
  type WebhookConfig,
} from '../../../src/dataplane/middleware/webhooks/index.js';
import { runMutatingChain, runValidatingChain } from '../../../src/dataplane/middleware/webhooks/runtime.js';

interface Scripted extends WebhookCaller {
  /** The request envelopes it was sent, parsed. */
  readonly seen: Array<Record<string, unknown>>;
}

function caller(
  name: string,
  policy: FailurePolicy,
  answer: WebhookCallResult | ((n: number) => WebhookCallResult),
): Scripted {
  const seen: Array<Record<string, unknown>> = [];
  const config = { name, failurePolicy: policy } as WebhookConfig;
  return {
    config,
    seen,
    call: async (body: string) => {
      seen.push(JSON.parse(body) as Record<string, unknown>);
      return typeof answer === 'function' ? answer(seen.length) : answer;
    },
  };
}

const allow: WebhookCallResult = { kind: 'answer', response: { allowed: true } };
const deny: WebhookCallResult = {
  kind: 'answer',
  response: { allowed: false, reason: 'secret-reason', message: 'internal detail' },
};
const always: WebhookCallResult = { kind: 'always-deny' };
const broken: WebhookCallResult = { kind: 'failure', reason: 'ECONNREFUSED' };
const patchWith = (patch: unknown, patchType = 'json_patch'): WebhookCallResult => ({
  kind: 'answer',
  response: { allowed: true, patchType, patch },
});

const request = {
  jsonrpc: '2.0',
  id: 'req-1',
  method: 'tools/call',
  params: { name: 'echo', arguments: { message: 'hi' } },
};
function input(over: Partial<WebhookChainInput> = {}): WebhookChainInput {
  return {
    bodyText: JSON.stringify(request),
    body: request,
    id: 'req-1',
    principal: { sub: 'alice' },
    context: { server_name: 'srv', source_ip: '127.0.0.1', transport: 'stdio' },
    ...over,
  };
}

/** `id` null: the refusal has none. */
function rpcError(status: number, code: number, message: string, id: string | null = 'req-1') {
  return {
    status,
    headers: { 'content-type': 'application/json' },
    body: { jsonrpc: '2.0', ...(id === null ? {} : { id }), error: { code, message } },
  };
}

test('validating: all allow → passes; each webhook is asked in order with its own uid', async () => {
  const a = caller('a', 'fail', allow);
  const b = caller('b', 'fail', allow);
  assert.equal(await runValidatingChain([a, b], input(), silentLogger), undefined);
  assert.equal(a.seen.length, 1);
  assert.equal(b.seen.length, 1);
  assert.notEqual(a.seen[0]?.['uid'], b.seen[0]?.['uid']);
  assert.deepEqual(a.seen[0]?.['mcp_request'], request);
  assert.deepEqual(a.seen[0]?.['principal'], { sub: 'alice' });
  assert.deepEqual(a.seen[0]?.['context'], {
    server_name: 'srv',
    source_ip: '127.0.0.1',
    transport: 'stdio',
  });
});

test('validating table: allowed:false, 422 and (with fail) errors → 403 "Request denied by policy", id echoed', async () => {
  const denied = rpcError(403, 403, 'Request denied by policy');
  for (const policy of ['fail', 'ignore'] as const) {
    assert.deepEqual(await runValidatingChain([caller('d', policy, deny)], input(), silentLogger), denied);
    assert.deepEqual(await runValidatingChain([caller('d', policy, always)], input(), silentLogger), denied);
  }
  assert.deepEqual(await runValidatingChain([caller('e', 'fail', broken)], input(), silentLogger), denied);
  const later = caller('later', 'fail', allow);
  const first = caller('first', 'fail', deny);
  await runValidatingChain([first, later], input(), silentLogger);
  assert.equal(later.seen.length, 0, 'the first denial ends the chain');
});

test('validating: an error with ignore skips that webhook only', async () => {
  const next = caller('next', 'fail', deny);
  assert.deepEqual(
    await runValidatingChain([caller('e', 'ignore', broken), next], input(), silentLogger),
    rpcError(403, 403, 'Request denied by policy'),
  );
  assert.equal(next.seen.length, 1);
  assert.equal(await runValidatingChain([caller('e', 'ignore', broken)], input(), silentLogger), undefined);
});

test('a notification has no id, so the refusal omits it (never null)', async () => {
  const result = await runValidatingChain(
    [caller('d', 'fail', deny)],
    input({ id: undefined }),
    silentLogger,
  );
  assert.deepEqual(result, rpcError(403, 403, 'Request denied by policy', null));
  assert.ok(!('id' in (result?.body ?? {})));
});

test('a body over 1 MiB → 413 JSON-RPC -32600 before any webhook is called', async () => {
  const big = { ...request, params: { name: 'echo', arguments: { message: 'x'.repeat(1024 * 1024) } } };
  const hook = caller('a', 'ignore', allow);
  const tooLarge = rpcError(413, -32600, 'Request body exceeds maximum size');
  assert.deepEqual(
    await runValidatingChain([hook], input({ body: big, bodyText: JSON.stringify(big) }), silentLogger),
    tooLarge,
  );
  assert.deepEqual(
    await runMutatingChain([hook], input({ body: big, bodyText: JSON.stringify(big) }), silentLogger),
    { rejection: tooLarge },
  );
  assert.equal(hook.seen.length, 0);
});

test('mutating table: 403 for allowed:false, 422 for HTTP 422, whatever the policy', async () => {
  for (const policy of ['fail', 'ignore'] as const) {
    assert.deepEqual(await runMutatingChain([caller('d', policy, deny)], input(), silentLogger), {
      rejection: rpcError(403, 403, 'Request denied by webhook policy'),
    });
    assert.deepEqual(await runMutatingChain([caller('d', policy, always)], input(), silentLogger), {
      rejection: rpcError(422, 403, 'Request denied by webhook policy'),
    });
  }
});

test('mutating table: errors → 500 "Webhook error" with fail, body unchanged with ignore', async () => {
  assert.deepEqual(await runMutatingChain([caller('e', 'fail', broken)], input(), silentLogger), {
    rejection: rpcError(500, -32603, 'Webhook error'),
  });
  assert.deepEqual(await runMutatingChain([caller('e', 'ignore', broken)], input(), silentLogger), {
    body: request,
    changed: false,
  });
});

test('mutating: each patch problem has its message with fail and leaves the body with ignore', async () => {
  const cases: Array<[WebhookCallResult, string]> = [
    [
      patchWith([{ op: 'add', path: '/mcp_request/x', value: 1 }], 'merge_patch'),
      'Unsupported patch type from webhook',
    ],
    [patchWith({ op: 'add' }), 'Malformed patch from webhook'],
    [patchWith([{ op: 'merge', path: '/mcp_request/x' }]), 'Invalid patch from webhook'],
    [
      patchWith([{ op: 'replace', path: '/principal/sub', value: 'root' }]),
      'Patch must be scoped to mcp_request',
    ],
    [patchWith([{ op: 'remove', path: '/mcp_request/params/nope' }]), 'Failed to apply patch from webhook'],
    [
      patchWith([{ op: 'test', path: '/mcp_request/method', value: 'tools/list' }]),
      'Failed to apply patch from webhook',
    ],
  ];
  for (const [answer, message] of cases) {
    assert.deepEqual(
      await runMutatingChain([caller('p', 'fail', answer)], input(), silentLogger),
      {
        rejection: rpcError(500, -32603, message),
      },
      message,
    );
    assert.deepEqual(
      await runMutatingChain([caller('p', 'ignore', answer)], input(), silentLogger),
      {
        body: request,
        changed: false,
      },
      message,
    );
  }
});

test('mutating: no patch_type or an empty patch leaves the request unchanged', async () => {
  for (const answer of [
    allow,
    patchWith([]),
    patchWith(null),
    patchWith([{ op: 'add', path: '/mcp_request/x', value: 1 }], ''),
  ])
    assert.deepEqual(await runMutatingChain([caller('p', 'fail', answer)], input(), silentLogger), {
      body: request,
      changed: false,
    });
});

test('mutating: patches chain in order, the next webhook sees the patched body, the input is not changed', async () => {
  const first = caller(
    'first',
    'fail',
    patchWith([{ op: 'replace', path: '/mcp_request/params/arguments/message', value: 'one' }]),
  );
  const second = caller(
    'second',
    'fail',
    patchWith([{ op: 'add', path: '/mcp_request/params/arguments/tag', value: 'two' }]),
  );
  const result = await runMutatingChain([first, second], input(), silentLogger);
  assert.deepEqual(result, {
    body: { ...request, params: { name: 'echo', arguments: { message: 'one', tag: 'two' } } },
    changed: true,
  });
  assert.deepEqual((second.seen[0]?.['mcp_request'] as typeof request).params.arguments, { message: 'one' });
  assert.equal(request.params.arguments.message, 'hi');
});

test('mutating: a patch that puts the same value back is not a change', async () => {
  const same = caller(
    'same',
    'fail',
    patchWith([{ op: 'replace', path: '/mcp_request/params/arguments/message', value: 'hi' }]),
  );
  assert.deepEqual(await runMutatingChain([same], input(), silentLogger), { body: request, changed: false });
});

test('mutating: a failure with ignore after a patch keeps the patched body', async () => {
  const patcher = caller(
    'p',
    'fail',
    patchWith([{ op: 'replace', path: '/mcp_request/params/arguments/message', value: 'p' }]),
  );
  const result = await runMutatingChain([patcher, caller('e', 'ignore', broken)], input(), silentLogger);
  assert.equal(result.rejection, undefined);
  assert.equal(result.rejection === undefined && result.changed, true);
});
