/**
 * The egress proxy script run as a real Node process on loopback (the same source the
 * egress container runs): plain HTTP forwarding and CONNECT tunnels pass only for allowed
 * host:port pairs; domain patterns match subdomains.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, request } from 'node:http';
import { connect } from 'node:net';
import { test } from 'node:test';
import { EGRESS_PROXY_SCRIPT, type EgressConfig } from '../../../src/runtime/egress/egress-script.js';
import { freePort } from '../../helpers/net.js';

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
