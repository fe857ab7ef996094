/**
 * The one outbound address policy (docs/security.md, "What a workload can reach"): every outgoing
 * request whose target a caller can steer — registry URLs, OCI skill references, git skill hosts,
 * OAuth discovery, JWKS, introspection and token endpoints — is sent through an `OutboundClient`.
 *
 * - Link-local and cloud metadata addresses, and special-purpose ones (unspecified,
 *   multicast, documentation, reserved), are always refused (`address-class.ts`).
 * - Loopback and private addresses are refused unless the call's `OutboundPolicy` allows
 *   them: for every host (`allowLoopback`, `allowPrivate`) or for hosts the user named as
 *   their own (`privateHosts`: `name`, `name:port`, `[v6]:port`).
 * - The checked address is the one connected to. The undici connector resolves the name,
 *   checks every address it gets, and opens the socket to a checked address itself, so a
 *   DNS answer that changes between a check and the connect (DNS rebinding) cannot slip a
 *   loopback address in. IP literals are also checked before a request is sent.
 * - Redirects are followed by hand: each hop is checked again (its host may have another
 *   policy), https never downgrades to http, and credentials are dropped on a cross-origin
 *   hop (Fetch standard §4.4 "HTTP-redirect fetch", step 13).
 *
 * undici loads on first use only: the workload runner imports this module (through the
 * auth stages it loads on demand) but most runners never send such a request.
 */
import { lookup } from 'node:dns/promises';
import type { Agent, buildConnector, Dispatcher, RequestInit as UndiciRequestInit } from 'undici';
import type { ErrorCode } from '../errors.js';
import { lazyRequire } from '../lazy.js';
import { type AddressClass, canonicalHost, classifyAddress, isIpLiteral } from './address-class.js';

const loadUndici = lazyRequire<typeof import('undici')>('undici');

export interface OutboundPolicy {
  /** Every host may be a loopback address. */
  allowLoopback?: boolean;
  /** Every host may be a private-network address. */
  allowPrivate?: boolean;
  /**
   * Hosts the user named as theirs (`name`, `name:port`, `a.b.c.d:port`, `[v6]:port`), which
   * may be loopback or private. An entry without a port matches every port. Matching is on
   * the host as the URL parser normalizes it, never on what it resolves to.
   */
  privateHosts?: readonly string[];
  /** Appended to a loopback/private refusal: how the user opts in (e.g. "set allow_private_ip"). */
  hint?: string;
}

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Name → addresses. The default is the system resolver (`getaddrinfo`, honours /etc/hosts). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

const systemResolver: Resolver = (hostname) => lookup(hostname, { all: true });

const DESCRIPTION: Record<Exclude<AddressClass, 'public'>, string> = {
  'link-local': 'a link-local or cloud metadata address, which is never contacted',
  unspecified: 'the unspecified address (it reaches this host), which is never contacted',
  special:
    'a reserved or special-purpose address (multicast, documentation, benchmarking), which is never contacted',
  loopback: 'a loopback address',
  private: 'a private-network address',
};

/** A request refused by the address policy. `host` is the name asked for, `address` what it is or resolves to. */
export class OutboundAddressError extends Error {
  override readonly name = 'OutboundAddressError';
  /** The address policy forbids the destination. */
  readonly code: ErrorCode = 'forbidden';

  constructor(
    readonly host: string,
    readonly address: string,
    readonly addressClass: Exclude<AddressClass, 'public'>,
    readonly hint?: string,
  ) {
    const subject = host === address ? address : `${host} resolves to ${address}, which`;
    const optIn =
      hint !== undefined && (addressClass === 'loopback' || addressClass === 'private') ? `; ${hint}` : '';
    super(`${subject} is ${DESCRIPTION[addressClass]}${optIn}`);
  }

  /** True when the user could allow it (loopback or private), false when it is never allowed. */
  get optional(): boolean {
    return this.addressClass === 'loopback' || this.addressClass === 'private';
  }
}

/** The refusal inside `err` (undici wraps connector errors in `fetch failed` / socket errors). */
export function findOutboundRefusal(err: unknown): OutboundAddressError | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 6 && current instanceof Error; depth++) {
    if (current instanceof OutboundAddressError) return current;
    current = current.cause;
  }
  return undefined;
}

interface HostEntry {
  host: string;
  port: number | undefined;
}

/** Parses one `privateHosts` entry; throws `TypeError` naming it when it is not a host[:port]. */
export function parseHostEntry(entry: string): HostEntry {
  const text = entry.trim();
  const bad = () => new TypeError(`"${entry}" is not a host or host:port`);
  let host = text;
  let port: string | undefined;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (bracketed !== null) {
    host = bracketed[1]!;
    port = bracketed[2];
  } else if (text.split(':').length === 2) {
    [host, port] = text.split(':') as [string, string];
  }
  if (port !== undefined && !/^\d{1,5}$/.test(port)) throw bad();
  const portNumber = port === undefined ? undefined : Number(port);
  if (portNumber !== undefined && (portNumber < 1 || portNumber > 65535)) throw bad();
  try {
    const canonical = canonicalHost(isIpLiteral(host) && host.includes(':') ? `[${host}]` : host);
    return { host: canonical, port: portNumber };
  } catch {
    throw bad();
  }
}

/**
 * Parses a user's list of private hosts (comma or white-space separated), as read from an
 * environment variable or a config field. Throws `TypeError` naming the first bad entry.
 */
export function parseHostList(value: string | readonly string[] | undefined): string[] {
  if (value === undefined) return [];
  const items = typeof value === 'string' ? value.split(/[\s,]+/) : value;
  const out: string[] = [];
  for (const item of items) {
    if (item.trim() === '') continue;
    parseHostEntry(item);
    out.push(item.trim());
  }
  return out;
}

interface Flags {
  loopback: boolean;
  private: boolean;
}

/** What `policy` allows for a request to `host` (canonical, no brackets) on `port`. */
function flagsFor(policy: OutboundPolicy, host: string, port: number): Flags {
  const named = (policy.privateHosts ?? []).some((entry) => {
    const e = parseHostEntry(entry);
    return e.host === host && (e.port === undefined || e.port === port);
  });
  return {
    loopback: policy.allowLoopback === true || named,
    private: policy.allowPrivate === true || named,
  };
}

function check(host: string, address: string, flags: Flags, hint?: string): void {
  const cls = classifyAddress(address);
  if (cls === 'public') return;
  if (cls === 'loopback' && flags.loopback) return;
  if (cls === 'private' && flags.private) return;
  throw new OutboundAddressError(host, address, cls, hint);
}

function defaultPort(protocol: string): number {
  return protocol === 'https:' ? 443 : 80;
}

export interface OutboundClientOptions {
  /** Resolves names (tests inject one); default the system resolver. */
  resolve?: Resolver;
  /** How long an idle pooled connection is kept, ms (default 4 s). */
  keepAliveTimeoutMs?: number;
  /** Deadline of one TCP/TLS connect, ms (default 10 s). */
  connectTimeoutMs?: number;
  /**
   * Skip the server certificate check: only for an endpoint whose configuration says so
   * (`insecure_skip_verify`). The address policy still applies.
   */
  insecureSkipVerify?: boolean;
  /**
   * The certificate authorities server certificates are checked against, PEM. Replaces Node's
   * default set (as TLS `ca` does): a caller that adds one authority passes the defaults too.
   */
  ca?: readonly string[];
}

const MAX_REDIRECTS = 5;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/**
 * Connection pools bound to the policy. At most four undici agents (loopback allowed or
 * not × private allowed or not): what a request may reach depends only on its origin and its
 * policy, and a pool is per origin, so a pooled connection was checked under the same rule.
 * `close()` ends the pools (a CLI process must be able to exit).
 */
export class OutboundClient {
  readonly #resolve: Resolver;
  readonly #keepAliveTimeoutMs: number;
  readonly #connectTimeoutMs: number;
  readonly #insecureSkipVerify: boolean;
  readonly #ca: readonly string[] | undefined;
  readonly #agents = new Map<string, Agent>();
  #closed = false;

  constructor(options: OutboundClientOptions = {}) {
    this.#resolve = options.resolve ?? systemResolver;
    this.#keepAliveTimeoutMs = options.keepAliveTimeoutMs ?? 4_000;
    this.#connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
    this.#insecureSkipVerify = options.insecureSkipVerify === true;
    this.#ca = options.ca;
  }

  /**
   * Checks `url` against `policy` before anything is sent (scheme, and the address when the
   * host is an IP literal) and returns the dispatcher to send it with; names are checked by
   * that dispatcher when it connects. Throws `OutboundAddressError` or `TypeError`.
   */
  dispatcherFor(url: URL, policy: OutboundPolicy): Dispatcher {
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new TypeError(`${url.protocol} URLs are not fetched (http and https only)`);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const flags = flagsFor(policy, host, Number(url.port) || defaultPort(url.protocol));
    if (isIpLiteral(host)) check(host, host, flags, policy.hint);
    return this.#agent(flags);
  }

  /**
   * The addresses `host` may be reached at under `policy`, for callers that connect with
   * another program (git): resolve once, check every answer, then connect only to these.
   */
  async addressesFor(host: string, port: number, policy: OutboundPolicy): Promise<string[]> {
    const canonical = canonicalHost(isIpLiteral(host) && host.includes(':') ? `[${host}]` : host);
    const flags = flagsFor(policy, canonical, port);
    try {
      return await this.#checked(canonical, flags);
    } catch (err) {
      const refusal = findOutboundRefusal(err);
      if (refusal !== undefined && policy.hint !== undefined)
        throw new OutboundAddressError(refusal.host, refusal.address, refusal.addressClass, policy.hint);
      throw err;
    }
  }

  /** `fetch` under `policy`, with redirects followed by hand (see the module comment). */
  async fetch(input: string | URL, init: RequestInit = {}, policy: OutboundPolicy): Promise<Response> {
    const undici = loadUndici();
    let url = new URL(String(input));
    let method = (init.method ?? 'GET').toUpperCase();
    let body = init.body ?? null;
    const headers = new Headers(init.headers);
    const mode = init.redirect ?? 'follow';
    for (let hop = 0; ; hop++) {
      const dispatcher = this.dispatcherFor(url, policy);
      let res: Awaited<ReturnType<typeof undici.fetch>>;
      try {
        const request: UndiciRequestInit = {
          method,
          headers: [...headers],
          // The global BodyInit types and undici's differ only in their stream classes.
          body: body as Exclude<UndiciRequestInit['body'], undefined>,
          redirect: 'manual',
          dispatcher,
          ...(init.signal ? { signal: init.signal } : {}),
        };
        res = await undici.fetch(url, request);
      } catch (err) {
        const refusal = findOutboundRefusal(err);
        if (refusal === undefined) throw err;
        throw new OutboundAddressError(refusal.host, refusal.address, refusal.addressClass, policy.hint);
      }
      const location = res.headers.get('location');
      // undici's Response is the same class as the global one, from a newer copy of undici.
      if (mode === 'manual' || !REDIRECT_STATUSES.has(res.status) || location === null) return res;
      await res.body?.cancel().catch(() => undefined);
      if (mode === 'error') throw new TypeError(`${url.href} answered with a redirect`);
      if (hop >= MAX_REDIRECTS) throw new TypeError(`${String(input)}: more than ${MAX_REDIRECTS} redirects`);
      const next = new URL(location, url);
      if (url.protocol === 'https:' && next.protocol !== 'https:')
        throw new TypeError(
          `${url.href} redirects to ${next.protocol} (${next.origin}); an https request stays on https`,
        );
      if (next.origin !== url.origin) {
        for (const name of ['authorization', 'cookie', 'proxy-authorization']) headers.delete(name);
      }
      // Fetch §4.4 step 12: 303 (except HEAD), and 301/302 after POST, continue as GET without a body.
      if (
        (res.status === 303 && method !== 'HEAD') ||
        ((res.status === 301 || res.status === 302) && method === 'POST')
      ) {
        method = 'GET';
        body = null;
        for (const name of [
          'content-type',
          'content-length',
          'content-encoding',
          'content-language',
          'content-location',
        ])
          headers.delete(name);
      } else if (body instanceof ReadableStream) {
        throw new TypeError(`${url.href} redirects a streamed request body, which cannot be sent again`);
      }
      url = next;
    }
  }

  /** A `fetch` bound to `policy`, for code that takes an injected `fetch`. */
  fetcher(policy: OutboundPolicy): typeof fetch {
    return (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
      if (typeof input !== 'string' && !(input instanceof URL))
        throw new TypeError('the guarded fetch takes a URL, not a Request');
      return this.fetch(input, init, policy);
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const agents = [...this.#agents.values()];
    this.#agents.clear();
    await Promise.all(agents.map((a) => a.close()));
  }

  async #checked(host: string, flags: Flags): Promise<string[]> {
    if (isIpLiteral(host)) {
      check(host, host, flags);
      return [host];
    }
    const answers = await this.#resolve(host);
    if (answers.length === 0)
      throw Object.assign(new Error(`${host} has no address`), { code: 'ENOTFOUND', hostname: host });
    // Every answer must pass, not just the one used: a name that also points at a refused
    // address is refused as a whole (a rebinding name often answers with both).
    for (const answer of answers) check(host, answer.address, flags);
    return answers.map((a) => a.address);
  }

  #agent(flags: Flags): Dispatcher {
    if (this.#closed) throw new Error('the outbound HTTP client is closed');
    const key = `${flags.loopback ? 'L' : '-'}${flags.private ? 'P' : '-'}`;
    let agent = this.#agents.get(key);
    if (agent === undefined) {
      const undici = loadUndici();
      const base = undici.buildConnector({
        timeout: this.#connectTimeoutMs,
        ...(this.#insecureSkipVerify ? { rejectUnauthorized: false } : {}),
        ...(this.#ca === undefined ? {} : { ca: [...this.#ca] }),
      });
      const connect: buildConnector.connector = (options, callback) => {
        this.#checked(options.hostname, flags).then(
          (addresses) => connectInOrder(base, options, addresses, 0, callback),
          (err: Error) => callback(err, null),
        );
      };
      agent = new undici.Agent({ keepAliveTimeout: this.#keepAliveTimeoutMs, connect });
      this.#agents.set(key, agent);
    }
    return agent;
  }
}

/**
 * Connects to the checked addresses in resolver order until one answers (what the system's
 * own connect does for a name, RFC 8305 without the racing). `host` stays the name, so TLS
 * sends it as SNI and checks the certificate against it.
 */
function connectInOrder(
  base: buildConnector.connector,
  options: buildConnector.Options,
  addresses: string[],
  index: number,
  callback: buildConnector.Callback,
): void {
  base({ ...options, hostname: addresses[index]! }, (...args) => {
    if (args[0] !== null && index + 1 < addresses.length) {
      connectInOrder(base, options, addresses, index + 1, callback);
      return;
    }
    callback(...args);
  });
}

let shared: OutboundClient | undefined;

/**
 * A `fetch` that applies `policy`, on a process-wide client created on first use. This is
 * the default `fetch` of every caller named in the module comment; tests inject their own.
 */
export function outboundFetch(policy: OutboundPolicy): typeof fetch {
  return (input: Parameters<typeof fetch>[0], init?: RequestInit) =>
    (shared ??= new OutboundClient()).fetcher(policy)(input, init);
}
