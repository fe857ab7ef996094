/**
 * The egress proxy script run as a real Node process on loopback (the same source the
 * egress container runs): plain HTTP forwarding and CONNECT tunnels pass only for allowed
 * host:port pairs; domain patterns match subdomains; loopback, link-local/metadata and
 * special addresses (RFC 6890), in every spelling, pass only when the profile lists them.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, request } from 'node:http';
import { connect } from 'node:net';
import { type TestContext, test } from 'node:test';
import {
  EGRESS_CONFIG_ENV,
  EGRESS_PROXY_SCRIPT,
  type EgressConfig,
} from '../../../src/dataplane/runtime/egress/egress-script.js';
import { freePort } from '../../helpers/net.js';
import { waitFor } from '../../helpers/wait.js';

function viaProxy(proxyPort: number, url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: proxyPort, path: url, method: 'GET' }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

function tunnel(proxyPort: number, target: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(proxyPort, '127.0.0.1', () =>
      socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`),
    );
    socket.once('data', (d: Buffer) => {
      socket.destroy();
      resolve(d.toString().split('\r\n')[0] ?? '');
    });
    socket.on('error', reject);
  });
}

test('egress proxy: only allowed host:port pairs pass (HTTP and CONNECT); .domain patterns match subdomains', async (t) => {
  const target = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', () => r()));
  t.after(() => target.close());
  const allowedPort = (target.address() as { port: number }).port;
  const proxyPort = await freePort();
  const config: EgressConfig = {
    proxyPort,
    allowHosts: ['127.0.0.1', '.example.invalid'],
    allowPorts: [allowedPort, 80],
  };
  const child = spawn(process.execPath, ['-e', EGRESS_PROXY_SCRIPT], {
    env: { SKEP_EGRESS: JSON.stringify(config) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => child.kill('SIGKILL'));
  await new Promise<void>((resolve) =>
    child.stdout.on('data', (d: Buffer) => d.toString().includes('listening') && resolve()),
  );

  assert.equal(await viaProxy(proxyPort, `http://127.0.0.1:${allowedPort}/`), 200);
  assert.equal(await viaProxy(proxyPort, `http://127.0.0.1:${proxyPort}/`), 403, 'port not in allow_port');
  assert.equal(await viaProxy(proxyPort, 'http://elsewhere.invalid/'), 403, 'host not in allow_host');
  // Allowed by the pattern; the name does not resolve, so the proxy answers 502, not 403.
  assert.equal(await viaProxy(proxyPort, 'http://api.example.invalid/'), 502);
  assert.equal(await tunnel(proxyPort, `127.0.0.1:${allowedPort}`), 'HTTP/1.1 200 Connection Established');
  assert.equal(await tunnel(proxyPort, '127.0.0.1:443'), 'HTTP/1.1 403 Forbidden');
});

test('egress proxy: with both allow lists empty nothing passes', async (t) => {
  const proxyPort = await freePort();
  const child = spawn(process.execPath, ['-e', EGRESS_PROXY_SCRIPT], {
    env: { SKEP_EGRESS: JSON.stringify({ proxyPort, allowHosts: [], allowPorts: [] }) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => child.kill('SIGKILL'));
  await new Promise<void>((resolve) =>
    child.stdout.on('data', (d: Buffer) => d.toString().includes('listening') && resolve()),
  );
  assert.equal(await viaProxy(proxyPort, `http://127.0.0.1:${proxyPort}/`), 403);
});

interface Answer {
  status: number;
  body: string;
}

function getViaProxy(proxyPort: number, url: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: proxyPort, path: url, method: 'GET', timeout: 10_000 },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timeout: ${url}`)));
    req.on('error', reject);
    req.end();
  });
}

/** CONNECT, then (when tunnelled) one plain GET through the tunnel. */
function connectViaProxy(proxyPort: number, target: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = connect(proxyPort, '127.0.0.1', () =>
      socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`),
    );
    let text = '';
    socket.setTimeout(10_000, () => socket.destroy(new Error(`timeout: CONNECT ${target}`)));
    socket.on('data', (d: Buffer) => {
      text += d.toString();
      if (text.startsWith('HTTP/1.1 200') && text.endsWith('\r\n\r\n') && !text.includes('ok')) {
        socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      }
    });
    socket.on('end', () => {
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? 0);
      resolve({ status, body: text.slice(text.indexOf('\r\n\r\n') + 4) });
    });
    socket.on('error', reject);
  });
}

async function startScript(t: TestContext, config: EgressConfig): Promise<{ log: () => string }> {
  const child = spawn(process.execPath, ['-e', EGRESS_PROXY_SCRIPT], {
    env: { [EGRESS_CONFIG_ENV]: JSON.stringify(config) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  await waitFor(
    'the egress script to listen',
    () => out.includes('egress proxy listening') || undefined,
    20_000,
  );
  return { log: () => out };
}

test('RFC 6890: a port-only allow-list reaches no loopback or metadata address, in any spelling (HTTP and CONNECT)', async (t) => {
  let connections = 0;
  const target = createServer((_req, res) => res.end('ok'));
  target.on('connection', () => connections++);
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', () => r()));
  t.after(() => target.close());
  const port = (target.address() as { port: number }).port;
  const proxyPort = await freePort();
  const proxy = await startScript(t, { proxyPort, allowHosts: [], allowPorts: [port] });

  const guarded = [
    '127.0.0.1',
    '127.1',
    '0x7f.1',
    '2130706433',
    '0177.0.0.1',
    '017700000001',
    '0',
    '0.0.0.0',
    '[::1]',
    '[::]',
    '[::ffff:7f00:1]',
    '[::ffff:127.0.0.1]',
    '[0:0:0:0:0:ffff:7f00:1]',
    '[::127.0.0.1]',
    '[::ffff:0:7f00:1]',
    '[64:ff9b::7f00:1]',
    '[2002:7f00:1::1]',
    'localhost',
    '169.254.169.254',
    '0xa9fea9fe',
    '[::ffff:a9fe:a9fe]',
    '[fd00:ec2::254]',
    '[fe80::1]',
    '100.100.100.200',
  ];
  for (const host of guarded) {
    const plain = await getViaProxy(proxyPort, `http://${host}:${port}/`);
    assert.equal(plain.status, 403, `http://${host}:${port}/ answered ${plain.status} ${plain.body}`);
    assert.match(plain.body, /^skep egress: .* address that the permission profile does not list\n$/, host);
    const tunnelled = await connectViaProxy(proxyPort, `${host}:${port}`);
    assert.equal(tunnelled.status, 403, `CONNECT ${host}:${port} answered ${tunnelled.status}`);
    assert.match(tunnelled.body, /address that the permission profile does not list\n$/, host);
  }
  assert.equal(connections, 0, 'the loopback listener saw no connection');
  assert.match(
    proxy.log(),
    /deny CONNECT 0x7f\.1:\d+: is a loopback address that the permission profile does not list/,
  );
  assert.match(
    proxy.log(),
    /deny localhost:\d+: resolves to (127\.0\.0\.1|::1), which is a loopback address/,
  );
});

test('a listed 127.0.0.1 (in any spelling of that address) and a listed localhost still pass', async (t) => {
  let requests = 0;
  const target = createServer((_req, res) => {
    requests++;
    res.end('ok');
  });
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', () => r()));
  t.after(() => target.close());
  const port = (target.address() as { port: number }).port;
  const proxyPort = await freePort();
  await startScript(t, { proxyPort, allowHosts: ['127.0.0.1', 'localhost'], allowPorts: [port] });

  for (const host of ['127.0.0.1', '127.1', '0x7f.1']) {
    assert.deepEqual(
      await getViaProxy(proxyPort, `http://${host}:${port}/`),
      { status: 200, body: 'ok' },
      host,
    );
    const tunnelled = await connectViaProxy(proxyPort, `${host}:${port}`);
    assert.equal(tunnelled.status, 200, host);
    assert.match(tunnelled.body, /ok$/, host);
  }
  // IPv4-mapped is another host than the IPv4 address the list names.
  assert.equal((await getViaProxy(proxyPort, `http://[::ffff:7f00:1]:${port}/`)).status, 403);
  // localhost is checked against the address it resolves to, and connected there.
  const viaName = await getViaProxy(proxyPort, `http://localhost:${port}/`);
  assert.ok(viaName.status === 200 || viaName.status === 502, `localhost answered ${viaName.status}`);
  assert.ok(requests >= 6, `the listener answered ${requests} requests`);
});

test("the engine's gateway (the container host) passes only when listed itself, in any spelling", async (t) => {
  const proxyPort = await freePort();
  // 192.0.2.0/24 is documentation space (RFC 5737): nothing answers there, and nothing is tried.
  const proxy = await startScript(t, {
    proxyPort,
    allowHosts: [],
    allowPorts: [80, 443],
    hostAddresses: ['10.88.0.1', 'fd00:88::1'],
  });
  for (const host of [
    '10.88.0.1',
    '10.88.1',
    '0xa580001',
    '[::ffff:a58:1]',
    '[64:ff9b::a58:1]',
    '[fd00:88::1]',
  ]) {
    const plain = await getViaProxy(proxyPort, `http://${host}/`);
    assert.equal(plain.status, 403, `${host} answered ${plain.status} ${plain.body}`);
    assert.match(
      plain.body,
      /the container host's gateway address, which the permission profile does not list/,
    );
    assert.equal((await connectViaProxy(proxyPort, `${host}:443`)).status, 403, host);
  }
  assert.match(proxy.log(), /deny \[::ffff:a58:1\]:80: is the container host's gateway address/);
});
