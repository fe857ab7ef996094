/**
 * One sentence for a failed outbound connection: what happened, in words, with the system's
 * code in parentheses, and what to check. Node's own messages (`getaddrinfo ENOTFOUND x`,
 * `fetch failed`, `connect ECONNREFUSED 127.0.0.1:9`) name a syscall, not the problem, and
 * undici hides the real error in `cause` (or in an AggregateError's `errors` when several
 * addresses were tried).
 */

interface SystemError {
  code?: unknown;
  hostname?: unknown;
  address?: unknown;
  port?: unknown;
  message?: unknown;
  cause?: unknown;
  errors?: unknown;
}

/** The innermost error of `err` that carries a system code (depth-limited: causes can loop). */
function systemErrorOf(err: unknown): SystemError | undefined {
  let found: SystemError | undefined;
  const visit = (value: unknown, depth: number): void => {
    if (depth > 6 || value === null || typeof value !== 'object') return;
    const e = value as SystemError;
    if (
      typeof e.code === 'string' &&
      /^(E[A-Z_]+|UND_ERR_[A-Z_]+|[A-Z_]*CERT[A-Z_]*|ERR_TLS_[A-Z_]+)$/.test(e.code)
    )
      found = e;
    if (Array.isArray(e.errors)) for (const inner of e.errors) visit(inner, depth + 1);
    visit(e.cause, depth + 1);
  };
  visit(err, 0);
  return found;
}

function hostOf(target: string | undefined): { host: string; endpoint: string } | undefined {
  if (target === undefined) return undefined;
  try {
    const url = new URL(target);
    const port = url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80';
    return { host: url.hostname, endpoint: `${url.hostname}:${port}` };
  } catch {
    return undefined;
  }
}

/**
 * Describes a connection failure to `target` (a URL, used for the host when the error does not
 * name it); undefined when `err` carries no system code (not a connection problem).
 */
export function describeConnectError(err: unknown, target?: string): string | undefined {
  const sys = systemErrorOf(err);
  if (sys === undefined) {
    // undici's fetch refuses the ports browsers block (6000, 6667, ...) before connecting.
    const cause = (err as SystemError | null)?.cause as SystemError | undefined;
    if (cause?.message === 'bad port')
      return `fetch refuses to connect to port ${hostOf(target)?.endpoint.split(':').pop() ?? '?'} (a port browsers block); use another port`;
    return undefined;
  }
  const code = sys.code as string;
  const fromUrl = hostOf(target);
  const host = typeof sys.hostname === 'string' ? sys.hostname : (fromUrl?.host ?? 'the host');
  const endpoint =
    typeof sys.address === 'string' && typeof sys.port === 'number'
      ? `${sys.address.includes(':') ? `[${sys.address}]` : sys.address}:${sys.port}`
      : (fromUrl?.endpoint ?? host);
  switch (code) {
    case 'ENOTFOUND':
      return `the host name '${host}' does not resolve (DNS: ${code}); check the URL`;
    case 'EAI_AGAIN':
      return `the host name '${host}' cannot be resolved right now (DNS: ${code}); check the network connection and DNS settings`;
    case 'ECONNREFUSED':
      return `nothing accepts connections at ${endpoint} (${code}); check the URL and that the server is running`;
    case 'ETIMEDOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
      return `connecting to ${endpoint} timed out (${code}); check the URL, the network and any firewall`;
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `${endpoint} cannot be reached from this machine (${code}); check the network connection`;
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return `the connection to ${endpoint} was closed unexpectedly (${code}); check that the URL points at an HTTP server`;
    default:
      if (/CERT|ERR_TLS/.test(code))
        return `the TLS certificate of ${host} is not trusted (${code}); check the URL, or add the CA with NODE_EXTRA_CA_CERTS`;
      return `${typeof sys.message === 'string' && sys.message !== '' ? sys.message : 'connection failed'}${
        typeof sys.message === 'string' && sys.message.includes(code) ? '' : ` (${code})`
      }`;
  }
}
