/**
 * The middleware chain in a real proxy: stages run in order and each sees what the ones before
 * it did, whether they decide at once or return a promise (the chain goes on synchronously
 * until the first promise, then after it); the first rejection is sent as it is and stops the
 * chain; a stage that throws is a 500 with an opaque body.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import type { ProxyMiddleware, ProxyMiddlewareResult } from '../../../src/dataplane/proxy/index.js';
import { proxyFor, startHttpUpstream } from './helpers.js';

type Decide = 'pass' | ProxyMiddlewareResult | Error;

/** A stage that logs its name and the header the stages before it set, then decides. */
function stage(name: string, log: string[], decide: Decide, async: boolean): ProxyMiddleware {
  const run = (ctx: Parameters<ProxyMiddleware['handle']>[0]): ProxyMiddlewareResult | undefined => {
    log.push(`${name}:${ctx.outboundHeaders['x-chain'] ?? ''}`);
    ctx.outboundHeaders['x-chain'] = `${ctx.outboundHeaders['x-chain'] ?? ''}${name}`;
    if (decide instanceof Error) throw decide;
    return decide === 'pass' ? undefined : decide;
  };
  return {
    name,
    handle: async
      ? (ctx) =>
          new Promise((resolve, reject) =>
            setImmediate(() => {
              try {
                resolve(run(ctx));
              } catch (err) {
                reject(err);
              }
            }),
          )
      : run,
  };
}

async function call(t: TestContext, middlewares: ProxyMiddleware[]) {
  const upstream = await startHttpUpstream(t, (req, res) => {
    const id = (JSON.parse(req.body) as { id: number }).id;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id, result: {} }));
  });
  const proxy = await proxyFor(t, undefined, {
    upstream: { kind: 'http', url: `${upstream.url}/mcp`, transport: 'streamable-http' },
    middlewares,
  });
  const res = await fetch(`${proxy.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
  });
  return { res, text: await res.text(), received: upstream.received };
}

const SYNC = false;
const ASYNC = true;

test('stages that decide at once run in order, and the request reaches the server with what they set', async (t) => {
  const log: string[] = [];
  const { res, received } = await call(t, [
    stage('a', log, 'pass', SYNC),
    stage('b', log, 'pass', SYNC),
    stage('c', log, 'pass', SYNC),
  ]);
  assert.equal(res.status, 200);
  assert.deepEqual(log, ['a:', 'b:a', 'c:ab']);
  assert.equal(received.length, 1);
  assert.equal(received[0]?.headers['x-chain'], 'abc');
});

test('after a stage that returns a promise, the rest run once it settles, in order', async (t) => {
  const log: string[] = [];
  const { res, received } = await call(t, [
    stage('a', log, 'pass', SYNC),
    stage('b', log, 'pass', ASYNC),
    stage('c', log, 'pass', SYNC),
    stage('d', log, 'pass', ASYNC),
  ]);
  assert.equal(res.status, 200);
  assert.deepEqual(log, ['a:', 'b:a', 'c:ab', 'd:abc']);
  assert.equal(received[0]?.headers['x-chain'], 'abcd');
});

test('a rejection at once is sent as it is, and the stages after it do not run', async (t) => {
  const log: string[] = [];
  const { res, text, received } = await call(t, [
    stage('a', log, 'pass', SYNC),
    stage('b', log, { status: 429, headers: { 'retry-after': '3' }, body: 'slow down' }, SYNC),
    stage('c', log, 'pass', SYNC),
  ]);
  assert.equal(res.status, 429);
  assert.equal(res.headers.get('retry-after'), '3');
  assert.equal(text, 'slow down');
  assert.deepEqual(log, ['a:', 'b:a']);
  assert.equal(received.length, 0);
});

test('a rejection after a promise, by the promise or by a stage after it, is sent and stops the chain', async (t) => {
  const byPromise: string[] = [];
  const first = await call(t, [
    stage('a', byPromise, 'pass', SYNC),
    stage('b', byPromise, { status: 403, body: { error: 'no' } }, ASYNC),
    stage('c', byPromise, 'pass', SYNC),
  ]);
  assert.equal(first.res.status, 403);
  assert.deepEqual(JSON.parse(first.text), { error: 'no' });
  assert.deepEqual(byPromise, ['a:', 'b:a']);
  assert.equal(first.received.length, 0);

  const after: string[] = [];
  const second = await call(t, [
    stage('a', after, 'pass', ASYNC),
    stage('b', after, { status: 401 }, SYNC),
    stage('c', after, 'pass', ASYNC),
  ]);
  assert.equal(second.res.status, 401);
  assert.equal(second.text, '');
  assert.deepEqual(after, ['a:', 'b:a']);
  assert.equal(second.received.length, 0);
});

test('a stage that throws, at once or in its promise, is a 500 that says nothing of the error', async (t) => {
  for (const async of [SYNC, ASYNC]) {
    const log: string[] = [];
    const { res, text, received } = await call(t, [
      stage('a', log, 'pass', SYNC),
      stage('b', log, new Error('secret detail'), async),
      stage('c', log, 'pass', SYNC),
    ]);
    assert.equal(res.status, 500, `async: ${async}`);
    assert.doesNotMatch(text, /secret detail/);
    assert.deepEqual(log, ['a:', 'b:a']);
    assert.equal(received.length, 0);
  }
});
