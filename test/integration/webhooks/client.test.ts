/**
 * The webhook client on loopback sockets: the limits and the lifecycle that the proxy tests
 * do not reach directly (an answer over 1 MiB, a 200 that is not an object, close() cutting a
 * call that is still waiting, the clock used for the signature timestamp, the timeout before
 * and after the request was sent).
 */
import assert from 'node:assert/strict';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { type TestContext, test } from 'node:test';
import { parseWebhookList } from '../../../src/dataplane/middleware/webhooks/index.js';
import { WebhookClient } from '../../../src/dataplane/middleware/webhooks/runtime.js';
import { startReceiver } from './receiver.js';

async function clientFor(url: string, extra: Record<string, unknown> = {}, now?: () => number) {
  const [config] = await parseWebhookList(
    [{ name: 'hook', url, failure_policy: 'fail', tls_config: { insecure_skip_verify: true }, ...extra }],
    'validating',
    async (name) => (name === 'k' ? 'key' : undefined),
  );
  assert.ok(config !== undefined);
  return new WebhookClient(config, now === undefined ? {} : { now });
}

test('an answer over 1 MiB is a failure, one of exactly 1 MiB is read', async (t) => {
  const big = await startReceiver(t, {
    respond: () => ({ status: 200, text: `{"allowed":true,"message":"${'x'.repeat(1024 * 1024)}"}` }),
  });
  const client = await clientFor(big.url);
  t.after(() => client.close());
  assert.deepEqual(await client.call('{}'), { kind: 'failure', reason: 'answer larger than 1048576 bytes' });
  const padding = 1024 * 1024 - '{"allowed":true,"message":""}'.length;
  const exact = await startReceiver(t, {
    respond: () => ({ status: 200, text: `{"allowed":true,"message":"${'x'.repeat(padding)}"}` }),
  });
  const exactClient = await clientFor(exact.url);
  t.after(() => exactClient.close());
  const result = await exactClient.call('{}');
  assert.equal(result.kind, 'answer');
});

test('a 200 whose JSON is not an answer object is a failure', async (t) => {
  const receiver = await startReceiver(t, { respond: () => ({ status: 200, json: [true] }) });
  const client = await clientFor(receiver.url);
  t.after(() => client.close());
  assert.deepEqual(await client.call('{}'), { kind: 'failure', reason: 'the answer is not a JSON object' });
});

test('the signature timestamp comes from the injected clock, in unix seconds', async (t) => {
  const receiver = await startReceiver(t, {
    key: Buffer.from('key'),
    respond: () => ({ status: 200, json: { allowed: true } }),
  });
  const client = await clientFor(receiver.url, { hmac_secret_ref: 'k' }, () => Date.now() + 1_000);
  t.after(() => client.close());
  const before = Math.floor(Date.now() / 1000);
  assert.equal((await client.call('{"a":1}')).kind, 'answer');
  const call = receiver.calls[0];
  assert.ok(call !== undefined);
  assert.equal(call.signatureValid, true);
  const ts = Number(call.headers['x-toolhive-timestamp']);
  assert.ok(ts >= before + 1 && ts <= before + 2, `timestamp ${ts} is the injected clock`);
  assert.equal(call.raw, '{"a":1}', 'the body is sent byte for byte');
});

test('close() cuts a call that is still waiting (a stopping workload does not wait for a slow webhook)', async (t) => {
  const receiver = await startReceiver(t, { respond: () => 'hang' });
  const client = await clientFor(receiver.url, { timeout: '30s' });
  const pending = client.call('{}');
  // Wait until the receiver has the request, so close() cuts a call in flight.
  while (receiver.calls.length === 0) await new Promise((resolve) => setImmediate(resolve));
  const started = Date.now();
  await client.close();
  const result = await pending;
  assert.equal(result.kind, 'failure');
  assert.ok(Date.now() - started < 5_000, 'not the 30 s timeout');
  assert.deepEqual(await client.call('{}'), { kind: 'failure', reason: 'the webhook client is closed' });
  await client.close();
});

/** Calls `url` with a 1 s timeout: the call fails at the deadline, not before and not much later. */
async function assertFailsAtTheDeadline(t: TestContext, url: string): Promise<void> {
  const client = await clientFor(url, { timeout: '1s' });
  t.after(() => client.close());
  const started = Date.now();
  const result = await client.call('{}');
  const elapsed = Date.now() - started;
  assert.deepEqual(result, { kind: 'failure', reason: 'no answer within 1000 ms' });
  assert.ok(elapsed >= 990, `waited the whole second (${elapsed} ms)`);
  assert.ok(elapsed < 5_000, `and not much more, nor undici's 10 s connect timeout (${elapsed} ms)`);
}

test('timeout: a receiver that never answers is a failure after the configured timeout, not later', async (t) => {
  const receiver = await startReceiver(t, { respond: () => 'hang' });
  await assertFailsAtTheDeadline(t, receiver.url);
  assert.equal(receiver.calls.length, 1, 'one request was sent, no retry');
});

test('timeout: a connection that never completes its TLS handshake is a failure after the configured timeout', async (t) => {
  // A TCP server that accepts and then says nothing: undici never gets to send the request,
  // so the deadline passes before the call has a connection at all.
  const held: Socket[] = [];
  const server = createServer((socket) => void held.push(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    for (const socket of held) socket.destroy();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  await assertFailsAtTheDeadline(t, `https://127.0.0.1:${port}/validate`);
  assert.equal(held.length, 1, 'the connection was accepted');
});
