/**
 * The two relays between a sandbox with its own network namespace and the runner, over unix
 * sockets in a directory bound into the sandbox at `SANDBOX_SOCKET_DIR` (a unix socket is a
 * file, so it crosses the namespace boundary that TCP cannot):
 *
 * - Inside: `FORWARDER_SCRIPT`, run as `node -e` before the server (it is the server's parent,
 *   so it listens before the server starts). Outbound: `127.0.0.1:SANDBOX_PROXY_PORT` → the
 *   runner's filtering proxy (`egress.sock`). Inbound, for HTTP servers: `inbound.sock` →
 *   `127.0.0.1:<target port>` where the server listens inside. It passes SIGTERM/SIGINT on
 *   and exits with the server's status. It holds no authority: the filter is the runner's.
 * - Outside: `startInboundBridge`, the runner's `127.0.0.1:<target port>` → `inbound.sock`,
 *   so the proxy reaches an HTTP server as if it listened on the host.
 *
 * The script is plain JavaScript with no dependencies: it runs under the runner's own Node
 * binary inside the sandbox. Its settings come in `FORWARDER_CONFIG_ENV`, which it removes
 * from the environment before starting the server.
 */
import { connect, createServer, type Server } from 'node:net';
import { listenRelay, type RelayListener, TrackedStreams } from './listener.js';

export const SANDBOX_SOCKET_DIR = '/run/skep';
export const SANDBOX_PROXY_PORT = 3128;
export const FORWARDER_CONFIG_ENV = 'SKEP_SANDBOX_FORWARDER';
export const EGRESS_SOCKET = 'egress.sock';
export const INBOUND_SOCKET = 'inbound.sock';

export interface ForwarderConfig {
  /** Unix socket of the runner's filtering proxy (inside path); unset: no outbound relay. */
  egressSocket?: string;
  proxyPort: number;
  /** Unix socket to serve for inbound connections (inside path), relayed to `targetPort`. */
  inboundSocket?: string;
  targetPort?: number;
  command: string;
  args: string[];
}

export const FORWARDER_SCRIPT = String.raw`
'use strict';
const net = require('node:net');
const { spawn } = require('node:child_process');
const config = JSON.parse(process.env.${FORWARDER_CONFIG_ENV});
delete process.env.${FORWARDER_CONFIG_ENV};
function relay(a, b) {
  a.on('error', () => b.destroy());
  b.on('error', () => a.destroy());
  a.on('close', () => b.destroy());
  b.on('close', () => a.destroy());
  a.pipe(b);
  b.pipe(a);
}
function listen(server, ...where) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(...where, resolve);
  });
}
const ready = [];
if (config.egressSocket) {
  ready.push(listen(net.createServer((c) => relay(c, net.connect(config.egressSocket))), config.proxyPort, '127.0.0.1'));
}
if (config.inboundSocket) {
  ready.push(listen(net.createServer((c) => relay(c, net.connect(config.targetPort, '127.0.0.1'))), config.inboundSocket));
}
Promise.all(ready).then(() => {
  const child = spawn(config.command, config.args, { stdio: 'inherit' });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('error', (err) => {
    process.stderr.write('[skep sandbox] cannot start ' + config.command + ': ' + err.message + '\n');
    process.exit(127);
  });
  child.on('exit', (code, signal) => process.exit(code === null ? 128 + (require('node:os').constants.signals[signal] || 1) : code));
}, (err) => {
  process.stderr.write('[skep sandbox] relay failed: ' + err.message + '\n');
  process.exit(70);
});
`;

export type InboundBridge = RelayListener;

/** Listens on `127.0.0.1:port` and relays every connection to the unix socket `socketPath`. */
export function startInboundBridge(port: number, socketPath: string): Promise<InboundBridge> {
  const streams = new TrackedStreams();
  const server: Server = createServer((client) => {
    streams.add(client);
    const upstream = connect(socketPath);
    streams.add(upstream);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  return listenRelay(server, { port, host: '127.0.0.1' }, streams);
}
