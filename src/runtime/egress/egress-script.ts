/**
 * The egress proxy that enforces `network.outbound` of a permission profile. It runs as
 * `node -e <EGRESS_PROXY_SCRIPT>` in a small container attached to the workload's internal
 * network (which has no route out) and to the engine's default network, so it is the only
 * way out: an HTTP forward proxy (plain requests and `CONNECT` tunnels) that lets through
 * only allowed host:port pairs. For HTTP servers it also forwards inbound connections from
 * the published loopback port to the workload, checking the `Host` header against
 * `network.inbound.allow_host` (loopback names always pass: that is Skep's own proxy).
 *
 * The script is kept as plain JavaScript source with no dependencies because it runs inside
 * the container, with whatever Node the configured image has; its configuration comes in
 * the `SKEP_EGRESS` environment variable (see `EgressConfig`).
 *
 * Rule: a destination is allowed when its host matches `allow_host` (or the list is empty)
 * and its port is in `allow_port` (or the list is empty); with both lists empty nothing is
 * allowed. A host entry `.example.com` (or `*.example.com`) matches the domain and its
 * subdomains; anything else matches exactly (case-insensitive).
 */

export interface EgressConfig {
  /** Port of the forward proxy inside the egress container. */
  proxyPort: number;
  allowHosts: string[];
  allowPorts: number[];
  inbound?: {
    listenPort: number;
    targetHost: string;
    targetPort: number;
    allowHosts: string[];
  };
}

export const EGRESS_CONFIG_ENV = 'SKEP_EGRESS';
export const EGRESS_PROXY_PORT = 3128;

export const EGRESS_PROXY_SCRIPT = String.raw`
'use strict';
const http = require('node:http');
const net = require('node:net');
const config = JSON.parse(process.env.SKEP_EGRESS || '{}');
const hosts = (config.allowHosts || []).map((h) => String(h).toLowerCase());
const ports = (config.allowPorts || []).map(Number);
const log = (line) => process.stdout.write(new Date().toISOString() + ' ' + line + '\n');

function hostMatches(list, host) {
  host = String(host).toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
  return list.some((entry) => {
    const pattern = entry.startsWith('*.') ? entry.slice(1) : entry;
    if (pattern.startsWith('.')) return host === pattern.slice(1) || host.endsWith(pattern);
    return host === pattern;
  });
}
function allowed(host, port) {
  if (hosts.length === 0 && ports.length === 0) return false;
  return (hosts.length === 0 || hostMatches(hosts, host)) && (ports.length === 0 || ports.includes(port));
}
function splitHostPort(value, defaultPort) {
  const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(value) || /^([^:]+)(?::(\d+))?$/.exec(value);
  if (!m) return undefined;
  return { host: m[1], port: m[2] ? Number(m[2]) : defaultPort };
}

const server = http.createServer((req, res) => {
  let url;
  try { url = new URL(req.url); } catch { res.writeHead(400).end('absolute URL required\n'); return; }
  if (url.protocol !== 'http:') { res.writeHead(400).end('only http:// is proxied; use CONNECT for TLS\n'); return; }
  const port = url.port ? Number(url.port) : 80;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!allowed(host, port)) {
    log('deny ' + host + ':' + port);
    res.writeHead(403, { 'content-type': 'text/plain' }).end('skep egress: ' + host + ':' + port + ' is not allowed by the permission profile\n');
    return;
  }
  log('allow ' + host + ':' + port);
  const headers = Object.assign({}, req.headers);
  delete headers['proxy-connection'];
  delete headers['proxy-authorization'];
  const upstream = http.request({ host, port, method: req.method, path: url.pathname + url.search, headers }, (up) => {
    res.writeHead(up.statusCode || 502, up.headers);
    up.pipe(res);
  });
  upstream.on('error', (err) => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end('skep egress: ' + err.message + '\n');
    else res.destroy();
  });
  req.pipe(upstream);
});
server.on('connect', (req, socket, head) => {
  const target = splitHostPort(req.url, 443);
  if (!target || !allowed(target.host, target.port)) {
    log('deny CONNECT ' + req.url);
    socket.end('HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nskep egress: ' + req.url + ' is not allowed by the permission profile\n');
    return;
  }
  log('allow CONNECT ' + req.url);
  const upstream = net.connect(target.port, target.host, () => {
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head && head.length) upstream.write(head);
    upstream.pipe(socket);
    socket.pipe(upstream);
  });
  upstream.on('error', (err) => socket.end('HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\n\r\nskep egress: ' + err.message + '\n'));
  socket.on('error', () => upstream.destroy());
});
server.on('clientError', (err, socket) => socket.destroy());
server.listen(config.proxyPort, '0.0.0.0', () => log('egress proxy listening on ' + config.proxyPort));

if (config.inbound) {
  const inbound = config.inbound;
  const inboundHosts = (inbound.allowHosts || []).map((h) => String(h).toLowerCase());
  const loopback = ['localhost', '127.0.0.1', '::1'];
  net.createServer((client) => {
    client.once('data', (first) => {
      if (inboundHosts.length > 0) {
        const m = /\r\nhost:\s*([^\r\n]*)/i.exec(first.toString('latin1'));
        const value = m ? splitHostPort(m[1].trim(), 0) : undefined;
        const host = value ? value.host : '';
        if (!hostMatches(loopback, host) && !hostMatches(inboundHosts, host)) {
          log('deny inbound Host ' + host);
          client.end('HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nskep: host not allowed\n');
          return;
        }
      }
      const upstream = net.connect(inbound.targetPort, inbound.targetHost, () => {
        upstream.write(first);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    });
    client.on('error', () => client.destroy());
  }).listen(inbound.listenPort, '0.0.0.0', () => log('inbound forwarder listening on ' + inbound.listenPort));
}
process.on('SIGTERM', () => process.exit(0));
`;
