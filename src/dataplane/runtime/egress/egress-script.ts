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
 * subdomains; anything else matches exactly (case-insensitive, every spelling of an address
 * alike: `0x7f.1` is `127.0.0.1`).
 *
 * Address rule, the sandbox proxy's (`sandbox/egress-proxy.ts`): a destination whose address
 * is loopback, link-local or cloud metadata, or unspecified (the classes of
 * `src/shared/net/address-class.ts` that lead into this host or its cloud, in every spelling: IPv4-mapped, -compatible
 * and -translated IPv6, NAT64, 6to4, Teredo, `inet_aton` forms of IPv4) is refused unless the
 * profile lists that address itself (or `localhost` for loopback). Private addresses (RFC 1918,
 * RFC 4193) pass like public ones, as they do there, with one exception a container needs: the
 * addresses that lead into the host running the engine — the gateways of the container's
 * routes, the gateways of the networks it is on (`hostAddresses`), and what
 * `host.containers.internal` / `host.docker.internal` resolve to — are refused unless listed
 * themselves (by the address, or by one of those names). Names are resolved once, every
 * address is checked, and the proxy connects to the checked address, so no listed DNS name
 * leads to a guarded address.
 */

export interface EgressConfig {
  /** Port of the forward proxy inside the egress container. */
  proxyPort: number;
  allowHosts: string[];
  allowPorts: number[];
  /** Addresses of the host as the container sees it (network gateways), guarded like loopback. */
  hostAddresses?: string[];
  inbound?: {
    listenPort: number;
    targetHost: string;
    targetPort: number;
    allowHosts: string[];
  };
}

export const EGRESS_CONFIG_ENV = 'SKEP_EGRESS';
export const EGRESS_PROXY_PORT = 3128;

/**
 * `classifyAddress` of `src/shared/net/address-class.ts` in plain JavaScript (the container has
 * no access to Skep's modules), plus `v6Groups` and `embeddedV4`. It expects `net` (node:net) in
 * scope. A unit test runs this exact source against the shared classifier on the same table and
 * a sweep of range boundaries; the two must agree on every address.
 */
export const EGRESS_ADDRESS_CLASS_SOURCE = String.raw`
const SEVERITY = { 'link-local': 5, unspecified: 4, special: 3, loopback: 2, private: 1, public: 0 };
const worst = (a, b) => (SEVERITY[a] >= SEVERITY[b] ? a : b);
const v4 = (text) => text.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
// RFC 6890 special-purpose registries; first match wins (metadata /32s before their ranges).
const V4_RANGES = [
  ['169.254.0.0', 16, 'link-local'], // RFC 3927; cloud metadata at 169.254.169.254
  ['100.100.100.200', 32, 'link-local'], // Alibaba Cloud metadata
  ['168.63.129.16', 32, 'link-local'], // Azure WireServer
  ['127.0.0.0', 8, 'loopback'],
  ['0.0.0.0', 8, 'unspecified'], // RFC 1122 "this network"; 0.0.0.0 reaches the local host
  ['10.0.0.0', 8, 'private'], // RFC 1918
  ['172.16.0.0', 12, 'private'],
  ['192.168.0.0', 16, 'private'],
  ['100.64.0.0', 10, 'private'], // RFC 6598
  ['192.0.0.0', 24, 'special'],
  ['192.0.2.0', 24, 'special'], // RFC 5737
  ['198.51.100.0', 24, 'special'],
  ['203.0.113.0', 24, 'special'],
  ['198.18.0.0', 15, 'special'], // RFC 2544
  ['192.88.99.0', 24, 'special'], // RFC 7526
  ['224.0.0.0', 4, 'special'],
  ['240.0.0.0', 4, 'special'],
].map(([base, bits, cls]) => [v4(base), 2 ** (32 - bits), cls]);
function classifyV4(n) {
  for (const [base, size, cls] of V4_RANGES) if (n >= base && n < base + size) return cls;
  return 'public';
}
function v6Groups(address) {
  let text = address;
  let tail = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const n = v4(dotted[1]);
    tail = [Math.floor(n / 65536), n % 65536];
    text = text.slice(0, -dotted[1].length);
    if (text.endsWith(':') && !text.endsWith('::')) text = text.slice(0, -1);
  }
  const parse = (part) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const gap = text.indexOf('::');
  if (gap === -1) return parse(text).concat(tail);
  const head = parse(text.slice(0, gap));
  const rest = parse(text.slice(gap + 2)).concat(tail);
  return head.concat(new Array(8 - head.length - rest.length).fill(0), rest);
}
function classifyV6(g) {
  const [g0, g1, g2, g3, g4, g5, g6, g7] = g;
  const low32 = g6 * 65536 + g7;
  const zero5 = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0;
  if (zero5 && g5 === 0) {
    if (low32 === 0) return 'unspecified'; // ::
    if (low32 === 1) return 'loopback'; // ::1
    return classifyV4(low32); // IPv4-compatible (RFC 4291 §2.5.5.1)
  }
  if (zero5 && g5 === 0xffff) return classifyV4(low32); // IPv4-mapped (RFC 4291 §2.5.5.2)
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0xffff && g5 === 0) return classifyV4(low32); // RFC 2765
  if (g0 === 0x64 && g1 === 0xff9b) {
    if (g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return classifyV4(low32); // RFC 6052
    if (g2 === 1) return worst('private', classifyV4(low32)); // RFC 8215 local-use
  }
  if (g0 === 0x2002) return classifyV4(g1 * 65536 + g2); // 6to4, RFC 3056
  if (g0 === 0x2001 && g1 === 0) // Teredo, RFC 4380: server, and the client inverted
    return worst(classifyV4(g2 * 65536 + g3), classifyV4((g6 ^ 0xffff) * 65536 + (g7 ^ 0xffff)));
  if (g0 === 0xfd00 && g1 === 0x0ec2 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0 && low32 === 0x254)
    return 'link-local'; // AWS metadata fd00:ec2::254
  if (g0 === 0xfd20 && g1 === 0x00ce && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0 && low32 === 0x254)
    return 'link-local'; // GCP metadata fd20:ce::254
  if ((g0 & 0xffc0) === 0xfe80) return 'link-local';
  if ((g0 & 0xffc0) === 0xfec0) return 'private'; // RFC 3879
  if ((g0 & 0xfe00) === 0xfc00) return 'private'; // RFC 4193
  if ((g0 & 0xff00) === 0xff00) return 'special';
  if (g0 === 0x2001 && g1 === 0x0db8) return 'special'; // RFC 3849
  if (g0 === 0x3fff && (g1 & 0xf000) === 0) return 'special'; // RFC 9637
  if (g0 === 0x2001 && g1 < 0x0200) return 'special';
  if (g0 === 0x0100 && g1 === 0 && g2 === 0 && g3 === 0) return 'special'; // RFC 6666
  if ((g0 & 0xe000) !== 0x2000) return 'special';
  return 'public';
}
function bareAddress(address) {
  let text = String(address).trim();
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  const zone = text.indexOf('%');
  return zone === -1 ? text : text.slice(0, zone);
}
function classifyAddress(address) {
  const text = bareAddress(address);
  const family = net.isIP(text);
  if (family === 4) return classifyV4(v4(text));
  if (family === 6) return classifyV6(v6Groups(text.toLowerCase()));
  throw new TypeError('"' + address + '" is not an IP address');
}
// The IPv4 addresses an address reaches: itself, or those an IPv6 form carries (the forms above).
function embeddedV4(address) {
  const text = bareAddress(address);
  if (net.isIP(text) === 4) return [v4(text)];
  if (net.isIP(text) !== 6) return [];
  const [g0, g1, g2, g3, g4, g5, g6, g7] = v6Groups(text.toLowerCase());
  const low32 = g6 * 65536 + g7;
  const zero4 = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0;
  if (zero4 && ((g4 === 0 && (g5 === 0 || g5 === 0xffff)) || (g4 === 0xffff && g5 === 0))) return [low32];
  if (g0 === 0x64 && g1 === 0xff9b) return [low32];
  if (g0 === 0x2002) return [g1 * 65536 + g2];
  if (g0 === 0x2001 && g1 === 0) return [g2 * 65536 + g3, (g6 ^ 0xffff) * 65536 + (g7 ^ 0xffff)];
  return [];
}
`;

export const EGRESS_PROXY_SCRIPT = String.raw`
'use strict';
const http = require('node:http');
const net = require('node:net');
const dns = require('node:dns');
const fs = require('node:fs');
const os = require('node:os');
${EGRESS_ADDRESS_CLASS_SOURCE}
const config = JSON.parse(process.env.SKEP_EGRESS || '{}');
const hosts = (config.allowHosts || []).map((h) => String(h).toLowerCase());
const ports = (config.allowPorts || []).map(Number);
const log = (line) => process.stdout.write(new Date().toISOString() + ' ' + line + '\n');

function normalizeHost(host) {
  return String(host).toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
}
// A host as the WHATWG URL parser reads it (0x7f.1 is 127.0.0.1, IPv6 compressed), so every
// spelling of an address compares equal; undefined when it is no host.
function canonicalName(host) {
  const h = normalizeHost(host);
  if (h === '' || /[/?#@\\\s]/.test(h)) return undefined;
  try {
    return new URL('http://' + (net.isIP(h) === 6 ? '[' + h + ']' : h) + '/').hostname.replace(/^\[|\]$/g, '');
  } catch {
    return undefined;
  }
}
function hostMatches(list, host) {
  host = normalizeHost(host);
  return list.some((entry) => {
    const pattern = entry.startsWith('*.') ? entry.slice(1) : entry;
    if (pattern.startsWith('.')) return host === pattern.slice(1) || host.endsWith(pattern);
    return host === pattern;
  });
}
function allowListMatches(host) {
  const h = canonicalName(host) ?? normalizeHost(host);
  return hosts.some((raw) => {
    const entry = normalizeHost(raw);
    const pattern = entry.startsWith('*.') ? entry.slice(1) : entry;
    if (pattern.startsWith('.')) return h === pattern.slice(1) || h.endsWith(pattern);
    return h === (canonicalName(entry) ?? entry);
  });
}
function allowed(host, port) {
  if (hosts.length === 0 && ports.length === 0) return false;
  return (hosts.length === 0 || allowListMatches(host)) && (ports.length === 0 || ports.includes(port));
}
function splitHostPort(value, defaultPort) {
  const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(value) || /^([^:]+)(?::(\d+))?$/.exec(value);
  if (!m) return undefined;
  return { host: m[1], port: m[2] ? Number(m[2]) : defaultPort };
}

// Address classes that lead into this container, the host or its cloud: the sandbox proxy's set.
// What leads into this host or its cloud; documentation, benchmarking and multicast ranges
// lead nowhere here (and some resolving proxies answer public names with RFC 5737 addresses).
const GUARDED = new Set(['loopback', 'link-local', 'unspecified']);
const LOOPBACK_NAMES = new Set(['localhost', 'localhost.localdomain']);
// The host running the engine, as this container reaches it: a private address passes a
// port-only list, but these lead into the host's own services, as loopback does on the host.
const HOST_NAMES = ['host.containers.internal', 'host.docker.internal', 'gateway.docker.internal'];
const hostByName = new Set();
function routeGateways() {
  const out = [];
  try {
    // /proc/net/route: Gateway is the address in host byte order; flag 0x2 is RTF_GATEWAY.
    for (const line of fs.readFileSync('/proc/net/route', 'latin1').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 4 || (parseInt(f[3], 16) & 2) === 0) continue;
      const g = parseInt(f[2], 16) >>> 0;
      if (g === 0) continue;
      const bytes = [g & 255, (g >>> 8) & 255, (g >>> 16) & 255, g >>> 24];
      out.push((os.endianness() === 'LE' ? bytes : bytes.reverse()).join('.'));
    }
  } catch {}
  try {
    // /proc/net/ipv6_route: the fifth field is the next hop, 32 hex digits.
    for (const line of fs.readFileSync('/proc/net/ipv6_route', 'latin1').split('\n')) {
      const hop = line.trim().split(/\s+/)[4];
      if (hop && /^[0-9a-f]{32}$/.test(hop) && !/^0+$/.test(hop)) out.push(hop.match(/.{4}/g).join(':'));
    }
  } catch {}
  return out;
}
function hostAddressKeys() {
  const keys = new Set(hostByName);
  for (const a of (config.hostAddresses || []).concat(routeGateways())) {
    if (net.isIP(bareAddress(a)) === 0) continue;
    for (const n of embeddedV4(a)) keys.add(n);
    const c = canonicalName(bareAddress(a));
    if (c !== undefined) keys.add(c);
  }
  return keys;
}
function isHostAddress(address, keys) {
  const c = canonicalName(bareAddress(address));
  return (c !== undefined && keys.has(c)) || embeddedV4(address).some((n) => keys.has(n));
}
function resolveHostNames() {
  const within = (ms, p) => Promise.race([p, new Promise((resolve) => setTimeout(resolve, ms, []))]);
  return Promise.all(
    HOST_NAMES.map((name) =>
      within(2000, dns.promises.lookup(name, { all: true, verbatim: true }).catch(() => [])).then((found) => {
        for (const r of found) {
          for (const n of embeddedV4(r.address)) hostByName.add(n);
          const c = canonicalName(bareAddress(r.address));
          if (c !== undefined) hostByName.add(c);
        }
      }),
    ),
  );
}

function listedItself(h) {
  return hosts.some((entry) => (canonicalName(entry) ?? normalizeHost(entry)) === h);
}
// Whether host:port passes, and the address to connect to (the one checked). A refusal is
// { status: 403 }; a name that does not resolve is { status: 502 }, as a failed connect is.
async function verdict(host, port) {
  if (!Number.isInteger(port) || port <= 0 || port > 65535) return { status: 403, reason: 'has a bad port' };
  const h = canonicalName(host);
  if (h === undefined) return { status: 403, reason: 'is not a host name' };
  if (!allowed(h, port)) return { status: 403, reason: 'is not allowed by the permission profile (allow_host, allow_port)' };
  let addresses;
  if (net.isIP(h) !== 0) addresses = [h];
  else {
    try {
      addresses = (await dns.promises.lookup(h, { all: true, verbatim: true })).map((r) => r.address);
    } catch (err) {
      return { status: 502, reason: 'cannot be resolved: ' + (err.code || err.message) };
    }
  }
  if (addresses.length === 0) return { status: 502, reason: 'has no address' };
  const keys = hostAddressKeys();
  const literal = net.isIP(h) !== 0;
  for (const a of addresses) {
    const cls = classifyAddress(a);
    const where = a === h ? 'is' : 'resolves to ' + a + ', which is';
    if (GUARDED.has(cls) && !(listedItself(h) && (literal || (LOOPBACK_NAMES.has(h) && cls === 'loopback')))) {
      const what = cls === 'unspecified' ? 'the unspecified' : 'a ' + cls;
      return { status: 403, reason: where + ' ' + what + ' address that the permission profile does not list' };
    }
    if (isHostAddress(a, keys) && !(listedItself(h) && (literal || HOST_NAMES.includes(h))))
      return { status: 403, reason: where + " the container host's gateway address, which the permission profile does not list" };
  }
  return { status: 200, address: addresses[0] };
}

const server = http.createServer((req, res) => {
  const refuse = (status, text) =>
    res.writeHead(status, { 'content-type': 'text/plain', connection: 'close' }).end('skep egress: ' + text + '\n');
  let url;
  try { url = new URL(req.url); } catch { refuse(400, 'absolute URL required'); return; }
  if (url.protocol !== 'http:') { refuse(400, 'only http:// is proxied; use CONNECT for TLS'); return; }
  const port = url.port ? Number(url.port) : 80;
  const target = url.hostname + ':' + port;
  verdict(url.hostname, port).then((v) => {
    if (v.status !== 200) {
      log('deny ' + target + ': ' + v.reason);
      refuse(v.status, target + ' ' + v.reason);
      return;
    }
    log('allow ' + target + ' via ' + v.address);
    const headers = Object.assign({}, req.headers);
    delete headers['proxy-connection'];
    delete headers['proxy-authorization'];
    if (!headers.host) headers.host = url.host;
    const upstream = http.request({ host: v.address, port, method: req.method, path: url.pathname + url.search, headers }, (up) => {
      res.writeHead(up.statusCode || 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', (err) => {
      if (!res.headersSent) refuse(502, err.message);
      else res.destroy();
    });
    req.pipe(upstream);
  }, (err) => refuse(500, String(err && err.message)));
});
server.on('connect', (req, socket, head) => {
  socket.on('error', () => socket.destroy());
  const deny = (status, reason) => {
    log('deny CONNECT ' + req.url + ': ' + reason);
    const line = status === 403 ? '403 Forbidden' : '502 Bad Gateway';
    socket.end('HTTP/1.1 ' + line + '\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nskep egress: ' + req.url + ' ' + reason + '\n');
  };
  const target = splitHostPort(req.url, 443);
  if (!target) { deny(403, 'is not host:port'); return; }
  verdict(target.host, target.port).then((v) => {
    if (v.status !== 200) { deny(v.status, v.reason); return; }
    log('allow CONNECT ' + req.url + ' via ' + v.address);
    const upstream = net.connect(target.port, v.address, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head && head.length) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on('error', (err) => socket.end('HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\n\r\nskep egress: ' + err.message + '\n'));
    socket.on('close', () => upstream.destroy());
  }, (err) => deny(502, String(err && err.message)));
});
server.on('clientError', (err, socket) => socket.destroy());
// Bounded like Skep's other listeners: headers within 20 s, at most 1024 connections. No
// request timeout: a relayed upload streams through for as long as it takes.
server.headersTimeout = 20000;
server.requestTimeout = 0;
server.maxConnections = 1024;
resolveHostNames().then(() =>
  server.listen(config.proxyPort, '0.0.0.0', () => log('egress proxy listening on ' + config.proxyPort)),
);

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
