/**
 * The filtering proxy of a sandboxed server with an outbound allow-list. The
 * sandbox has its own network namespace with nothing but its loopback; the runner serves this
 * HTTP forward proxy (plain requests and `CONNECT` tunnels) on a unix socket bound into the
 * sandbox, where a forwarder relays `127.0.0.1:3128` to it and `HTTP(S)_PROXY` point there.
 * It runs in the runner, outside the sandbox, so the server cannot change what it allows.
 *
 * The rule is the container egress proxy's (`egress/egress-script.ts`): a destination passes
 * when its host matches `allow_host` (or the list is empty) and its port is in `allow_port`
 * (or the list is empty); both empty → nothing. `.example.com` / `*.example.com` match the
 * domain and its subdomains. One more rule here, because this proxy runs on the host: a
 * destination whose address leads into the host or its cloud — loopback, link-local and cloud
 * metadata, unspecified (`0.0.0.0` reaches the host) and the other special-purpose ranges, in
 * every spelling the shared address policy knows (`src/shared/net`: IPv4-mapped, -compatible
 * and -translated IPv6, NAT64, 6to4, Teredo; `inet_aton` forms of IPv4) — is refused unless
 * the profile lists that host itself, by the address (`127.0.0.1`, `::1`, `169.254.169.254`)
 * or as `localhost`. A port-only allow-list therefore never leads into the host, and no listed
 * DNS name can (whatever it resolves to); the address checked is the address connected to.
 */
import { lookup } from 'node:dns/promises';
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import { connect, isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import {
  type AddressClass,
  canonicalHost,
  classifyAddress,
  LISTENER_DEFAULTS,
  listenerOptions,
} from '../../../shared/index.js';
import { listenRelay, type RelayListener, TrackedStreams } from './listener.js';

export interface EgressRules {
  hosts: readonly string[];
  ports: readonly number[];
}

function normalizeHost(host: string): string {
  return host
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
}

/**
 * A host as the WHATWG URL parser reads it (`0x7f.1` → `127.0.0.1`, IPv6 compressed), so every
 * spelling of an address compares equal; `undefined` when it is no host.
 */
function canonicalName(host: string): string | undefined {
  const h = normalizeHost(host);
  try {
    return canonicalHost(isIP(h) === 6 ? `[${h}]` : h);
  } catch {
    return undefined;
  }
}

function hostMatches(list: readonly string[], host: string): boolean {
  const h = canonicalName(host) ?? normalizeHost(host);
  return list.some((raw) => {
    const entry = normalizeHost(raw);
    const pattern = entry.startsWith('*.') ? entry.slice(1) : entry;
    if (pattern.startsWith('.')) return h === pattern.slice(1) || h.endsWith(pattern);
    return h === (canonicalName(entry) ?? entry);
  });
}

/** The allow-list rule (the same as the container egress proxy's). */
export function egressAllows(rules: EgressRules, host: string, port: number): boolean {
  if (rules.hosts.length === 0 && rules.ports.length === 0) return false;
  return (
    (rules.hosts.length === 0 || hostMatches(rules.hosts, host)) &&
    (rules.ports.length === 0 || rules.ports.includes(port))
  );
}

/**
 * Address classes that lead into this host or its cloud (`classifyAddress`). The other
 * special-purpose ranges (documentation, benchmarking, multicast) lead nowhere here, and some
 * networks answer public names with them (a resolving proxy that hands out RFC 5737 addresses).
 */
const GUARDED: ReadonlySet<AddressClass> = new Set<AddressClass>(['loopback', 'link-local', 'unspecified']);

const LOOPBACK_NAMES = new Set(['localhost', 'localhost.localdomain']);

/**
 * True when `host` (canonical) is an address, or `localhost` resolving to loopback, that the
 * profile lists exactly: the only way to a guarded address.
 */
function listedItself(rules: EgressRules, host: string, addressClass: AddressClass): boolean {
  const literal = isIP(host) !== 0 || (LOOPBACK_NAMES.has(host) && addressClass === 'loopback');
  return literal && rules.hosts.some((entry) => (canonicalName(entry) ?? normalizeHost(entry)) === host);
}

export type EgressVerdict = { ok: true; address: string } | { ok: false; reason: string };

/** Whether the proxy lets `host:port` through, and to which address; literals need no lookup. */
export async function egressVerdict(rules: EgressRules, host: string, port: number): Promise<EgressVerdict> {
  if (!Number.isInteger(port) || port <= 0 || port > 65535) return { ok: false, reason: 'bad port' };
  const h = canonicalName(host);
  if (h === undefined) return { ok: false, reason: 'is not a host name' };
  if (!egressAllows(rules, h, port)) return { ok: false, reason: 'not allowed by the permission profile' };
  let addresses: string[];
  if (isIP(h) !== 0) addresses = [h];
  else {
    try {
      addresses = (await lookup(h, { all: true, verbatim: true })).map((r) => r.address);
    } catch (err) {
      return { ok: false, reason: `cannot resolve: ${(err as NodeJS.ErrnoException).code ?? String(err)}` };
    }
  }
  const address = addresses[0];
  if (address === undefined) return { ok: false, reason: 'no address' };
  for (const a of addresses) {
    const addressClass = classifyAddress(a);
    if (GUARDED.has(addressClass) && !listedItself(rules, h, addressClass)) {
      const what = addressClass === 'unspecified' ? 'the unspecified' : `a ${addressClass}`;
      return {
        ok: false,
        reason: `${a === h ? 'is' : `resolves to ${a}, which is`} ${what} address that the permission profile does not list`,
      };
    }
  }
  return { ok: true, address };
}

function splitHostPort(value: string, defaultPort: number): { host: string; port: number } | undefined {
  const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(value) ?? /^([^:/]+)(?::(\d+))?$/.exec(value);
  if (m === null) return undefined;
  return { host: m[1] as string, port: m[2] === undefined ? defaultPort : Number(m[2]) };
}

export type EgressProxy = RelayListener;

/** Serves the filtering proxy on the unix socket `socketPath`; `log` gets one line per decision. */
export function startEgressProxy(
  socketPath: string,
  rules: EgressRules,
  log: (line: string) => void,
): Promise<EgressProxy> {
  const streams = new TrackedStreams();
  const refuse = (res: ServerResponse, status: number, text: string) => {
    res
      .writeHead(status, { 'content-type': 'text/plain', connection: 'close' })
      .end(`skep egress: ${text}\n`);
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      refuse(res, 400, 'absolute URL required');
      return;
    }
    if (url.protocol !== 'http:') {
      refuse(res, 400, 'only http:// is proxied; use CONNECT for TLS');
      return;
    }
    const port = url.port === '' ? 80 : Number(url.port);
    const target = `${url.hostname}:${port}`;
    void egressVerdict(rules, url.hostname, port).then((verdict) => {
      if (!verdict.ok) {
        log(`deny ${target}: ${verdict.reason}`);
        refuse(res, 403, `${target} ${verdict.reason}`);
        return;
      }
      log(`allow ${target}`);
      const headers = { ...req.headers };
      delete headers['proxy-connection'];
      delete headers['proxy-authorization'];
      const upstream = request(
        { host: verdict.address, port, method: req.method, path: `${url.pathname}${url.search}`, headers },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      upstream.on('error', (err) => {
        if (!res.headersSent) refuse(res, 502, err.message);
        else res.destroy();
      });
      req.pipe(upstream);
    });
  };

  const onConnect = (req: IncomingMessage, client: Duplex, head: Buffer) => {
    streams.add(client);
    client.on('error', () => client.destroy());
    const target = splitHostPort(req.url ?? '', 443);
    const deny = (reason: string) => {
      log(`deny CONNECT ${req.url ?? ''}: ${reason}`);
      client.end(
        `HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nskep egress: ${req.url ?? ''} ${reason}\n`,
      );
    };
    if (target === undefined) {
      deny('is not host:port');
      return;
    }
    void egressVerdict(rules, target.host, target.port).then((verdict) => {
      if (!verdict.ok) {
        deny(verdict.reason);
        return;
      }
      log(`allow CONNECT ${req.url ?? ''}`);
      const upstream: Socket = connect(target.port, verdict.address, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length > 0) upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      streams.add(upstream);
      upstream.on('error', (err) =>
        client.end(`HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\n\r\nskep egress: ${err.message}\n`),
      );
      client.on('close', () => upstream.destroy());
    });
  };

  // Bounded like every listener: a server that opens connections and sends no headers is cut
  // off. The request timeout stays off: a relayed upload streams through for as long as it takes.
  const server: Server = createServer(
    listenerOptions({ ...LISTENER_DEFAULTS, requestTimeoutMs: 0 }),
    onRequest,
  );
  server.maxConnections = LISTENER_DEFAULTS.maxConnections;
  server.on('connect', onConnect);
  server.on('connection', streams.add);
  server.on('clientError', (_err, socket) => socket.destroy());
  return listenRelay(server, { path: socketPath }, streams);
}
