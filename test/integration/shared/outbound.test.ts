/**
 * The outbound address policy against real loopback listeners: a refused
 * request opens no connection at all; the address checked is the address connected to (DNS
 * rebinding, with an injected resolver); redirects are checked hop by hop.
 */
import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { test, type TestContext } from 'node:test';
import {
  OutboundAddressError,
  OutboundClient,
  type OutboundPolicy,
  type Resolver,
} from '../../../src/shared/index.js';

interface Listener {
  port: number;
  connections: () => number;
}

/** A TCP listener that only counts connections (and closes them). */
async function countingListener(t: TestContext, host = '127.0.0.1', port = 0): Promise<Listener> {
  let count = 0;
  const server: Server = createServer((socket) => {
    count++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port: (server.address() as AddressInfo).port, connections: () => count };
}

interface HttpListener {
  port: number;
  seen: { url: string; headers: IncomingHttpHeaders }[];
}

async function httpListener(
  t: TestContext,
  handle: (url: string) => { status: number; headers?: Record<string, string>; body?: string },
  host = '127.0.0.1',
): Promise<HttpListener> {
  const seen: HttpListener['seen'] = [];
  const server = createHttpServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers });
    const out = handle(req.url ?? '');
    res.writeHead(out.status, out.headers).end(out.body ?? '');
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { port: (server.address() as AddressInfo).port, seen };
}

function client(t: TestContext, resolve?: Resolver): OutboundClient {
  const c = new OutboundClient({ ...(resolve ? { resolve } : {}), connectTimeoutMs: 1_000 });
  t.after(() => c.close());
  return c;
}

async function refusal(promise: Promise<unknown>): Promise<OutboundAddressError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof OutboundAddressError, `expected a refusal, got ${String(err)}`);
    return err;
  }
  assert.fail('the request was not refused');
}

test('a loopback listener receives no connection from a request the policy refuses', async (t) => {
  const listener = await countingListener(t);
  const p = listener.port;
  const names: Resolver = async (hostname) => {
    if (hostname === 'registry.example.test') return [{ address: '127.0.0.1', family: 4 }];
    if (hostname === 'mixed.example.test')
      return [
        { address: '93.184.216.34', family: 4 },
        { address: '127.0.0.1', family: 4 },
      ];
    throw Object.assign(new Error(`unknown ${hostname}`), { code: 'ENOTFOUND' });
  };
  const c = client(t, names);
  const fetchDefault = c.fetcher({});
  for (const url of [
    `http://127.0.0.1:${p}/v2/`,
    `http://0x7f.1:${p}/`,
    `http://2130706433:${p}/`,
    `http://0177.0.0.1:${p}/`,
    `http://127.1:${p}/`,
    `http://[::ffff:127.0.0.1]:${p}/`,
    `http://[::ffff:7f00:1]:${p}/`,
    `http://[::7f00:1]:${p}/`,
    `http://[::127.0.0.1]:${p}/`,
    `http://[64:ff9b::7f00:1]:${p}/`,
    `http://registry.example.test:${p}/`,
    `http://mixed.example.test:${p}/`,
  ]) {
    const err = await refusal(fetchDefault(url));
    assert.equal(err.addressClass, 'loopback', url);
  }
  // The system resolver too: localhost is loopback whatever it resolves to first.
  const viaSystem = client(t);
  assert.equal((await refusal(viaSystem.fetch(`http://localhost:${p}/`, {}, {}))).addressClass, 'loopback');
  assert.equal(listener.connections(), 0, 'no connection reached the listener');

  // Opting in, per host and port or for every host, lets the same request through.
  const ok = async (policy: OutboundPolicy, url = `http://127.0.0.1:${p}/`) => {
    const before = listener.connections();
    await c.fetch(url, { signal: AbortSignal.timeout(3_000) }, policy).catch(() => undefined);
    return listener.connections() > before;
  };
  assert.equal(await ok({ privateHosts: [`127.0.0.1:${p}`] }), true);
  assert.equal(await ok({ privateHosts: ['127.0.0.1'] }), true);
  assert.equal(await ok({ privateHosts: [`127.0.0.1:${p === 1 ? 2 : p - 1}`] }).catch(() => false), false);
  assert.equal(await ok({ allowLoopback: true }, `http://registry.example.test:${p}/`), true);
  assert.equal(await ok({ allowPrivate: true }), false, 'private is not loopback');
});

test('link-local, metadata and special addresses are refused whatever the policy says', async (t) => {
  const c = client(t, async (hostname) =>
    hostname === 'metadata.google.internal'
      ? [{ address: '169.254.169.254', family: 4 }]
      : [{ address: 'fd00:ec2::254', family: 6 }],
  );
  const everything: OutboundPolicy = {
    allowLoopback: true,
    allowPrivate: true,
    privateHosts: ['169.254.169.254', 'metadata.google.internal', 'imds.example.test', '0.0.0.0'],
  };
  for (const [url, cls] of [
    ['http://169.254.169.254/latest/meta-data/', 'link-local'],
    ['http://0xa9fea9fe/latest/meta-data/', 'link-local'],
    ['http://[::ffff:a9fe:a9fe]/', 'link-local'],
    ['http://[fd00:ec2::254]/', 'link-local'],
    ['http://100.100.100.200/', 'link-local'],
    ['http://metadata.google.internal/computeMetadata/v1/', 'link-local'],
    ['http://imds.example.test/', 'link-local'],
    ['http://0.0.0.0/', 'unspecified'],
    ['http://[::]/', 'unspecified'],
  ] as const) {
    const err = await refusal(c.fetch(url, {}, everything));
    assert.equal(err.addressClass, cls, url);
    assert.equal(err.optional, false);
  }
});

test('DNS rebinding — the address checked is the address connected to', async (t) => {
  const listener = await countingListener(t);
  let calls = 0;
  // Public on the first answer, loopback on every later one: a check that resolves apart from
  // the connect would pass the first answer and then connect to the second.
  const rebinding: Resolver = async () => {
    calls++;
    return [{ address: calls === 1 ? '93.184.216.34' : '127.0.0.1', family: 4 }];
  };
  const c = client(t, rebinding);
  const attempted: string[] = [];
  const onConnected = (message: unknown) => {
    const socket = (message as { socket: { remoteAddress?: string } }).socket;
    attempted.push(socket.remoteAddress ?? '');
  };
  const onError = (message: unknown) => {
    const error = (message as { error: Error & { address?: string } }).error;
    attempted.push(error.address ?? error.message);
  };
  subscribe('undici:client:connected', onConnected);
  subscribe('undici:client:connectError', onError);
  t.after(() => {
    unsubscribe('undici:client:connected', onConnected);
    unsubscribe('undici:client:connectError', onError);
  });
  await c
    .fetch(`http://rebind.example.test:${listener.port}/`, { signal: AbortSignal.timeout(3_000) }, {})
    .catch(() => undefined);
  assert.equal(calls, 1, 'the name was resolved once, for the check and the connect');
  assert.equal(listener.connections(), 0, 'the loopback listener got no connection');
  assert.ok(attempted.length > 0, 'a connection was attempted');
  assert.ok(
    attempted.every((a) => a.includes('93.184.216.34')),
    `only the checked address was used: ${attempted.join(', ')}`,
  );

  // With loopback allowed, a resolver that moves 127.0.0.1 → 127.0.0.2 still lands on the first.
  const second = await countingListener(t, '127.0.0.2', listener.port).catch(() => undefined);
  let n = 0;
  const moving = client(t, async () => [{ address: n++ === 0 ? '127.0.0.1' : '127.0.0.2', family: 4 }]);
  await moving
    .fetch(
      `http://moving.example.test:${listener.port}/`,
      { signal: AbortSignal.timeout(3_000) },
      { allowLoopback: true },
    )
    .catch(() => undefined);
  assert.equal(n, 1);
  assert.equal(listener.connections(), 1);
  if (second !== undefined) assert.equal(second.connections(), 0);
});

test('a name answering ::1 first and 127.0.0.1 second reaches an IPv4-only listener (addresses tried in order)', async (t) => {
  const server = await httpListener(t, () => ({ status: 200, body: 'ok' }));
  const c = client(t, async () => [
    { address: '::1', family: 6 },
    { address: '127.0.0.1', family: 4 },
  ]);
  const res = await c.fetch(`http://dual.example.test:${server.port}/`, {}, { allowLoopback: true });
  assert.equal(await res.text(), 'ok');
});

test('every redirect hop is checked again; credentials stay on their origin', async (t) => {
  const target = await httpListener(t, () => ({ status: 200, body: 'landed' }));
  const forbidden = await countingListener(t);
  const start = await httpListener(t, (url) => {
    if (url === '/to-unlisted')
      return { status: 302, headers: { location: `http://127.0.0.1:${forbidden.port}/` } };
    if (url === '/to-metadata') return { status: 307, headers: { location: 'http://169.254.169.254/' } };
    if (url === '/to-listed')
      return { status: 302, headers: { location: `http://127.0.0.1:${target.port}/x` } };
    if (url === '/post')
      return { status: 303, headers: { location: `http://127.0.0.1:${target.port}/after` } };
    return { status: 404 };
  });
  const c = client(t);
  const policy: OutboundPolicy = {
    privateHosts: [`127.0.0.1:${start.port}`, `127.0.0.1:${target.port}`],
    hint: 'list it',
  };
  const base = `http://127.0.0.1:${start.port}`;
  const unlisted = await refusal(c.fetch(`${base}/to-unlisted`, {}, policy));
  assert.match(unlisted.message, /loopback address; list it$/);
  assert.equal(forbidden.connections(), 0);
  assert.equal((await refusal(c.fetch(`${base}/to-metadata`, {}, policy))).addressClass, 'link-local');

  const res = await c.fetch(
    `${base}/to-listed`,
    { headers: { authorization: 'Bearer secret', 'x-other': '1' } },
    policy,
  );
  assert.equal(await res.text(), 'landed');
  const landed = target.seen.at(-1);
  assert.equal(landed?.url, '/x');
  assert.equal(landed?.headers.authorization, undefined, 'Authorization is dropped on a cross-origin hop');
  assert.equal(landed?.headers['x-other'], '1');

  const after = await c.fetch(
    `${base}/post`,
    { method: 'POST', body: 'a=1', headers: { 'content-type': 'text/plain' } },
    policy,
  );
  await after.arrayBuffer();
  assert.equal(target.seen.at(-1)?.url, '/after');

  const manual = await c.fetch(`${base}/to-unlisted`, { redirect: 'manual' }, policy);
  assert.equal(manual.status, 302, 'redirect: manual hands the redirect back');
  await manual.arrayBuffer();
});

test('only http and https are fetched', async (t) => {
  const c = client(t);
  await assert.rejects(c.fetch('file:///etc/passwd', {}, { allowLoopback: true }), TypeError);
  await assert.rejects(c.fetch('ftp://127.0.0.1/', {}, { allowLoopback: true }), TypeError);
});
