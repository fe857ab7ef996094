/**
 * `skep ui`: logs the browser in to the running `skep serve`. It finds
 * the server through its discovery file, reads the API token the way the server does
 * (`SKEP_API_TOKEN`, else the token file), asks for a one-time login link with it, and
 * prints the link (and opens it when a display is there).
 *
 * A discovery file can outlive its server, and another account can then listen on the port
 * it names. So before the token goes anywhere, the server must prove it holds the secret of
 * the discovery file (0600): it answers a fresh nonce with an HMAC under that key
 * (`GET /auth/challenge`), and the token then goes over the same connection. Over HTTPS the
 * certificate is also pinned to the fingerprint `skep serve` wrote into the file, checked
 * before anything is sent. Only a login URL on the verified origin is opened, and never on a
 * command line (`openInBrowser`: the opener gets a page that only the user can read).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { join } from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { type Duplex, PassThrough } from 'node:stream';
import { type ApiToken, API_TOKEN_ENV, loadConfig, resolveApiToken } from '../../../config/index.js';
import { openInBrowser, SkepError } from '../../../shared/index.js';

const TIMEOUT_MS = 10_000;

/** The API server's module, for its discovery file: loaded when the command runs. */
const loadServer = () => import('../../api/server.js');
type DiscoveryInfo = NonNullable<ReturnType<Awaited<ReturnType<typeof loadServer>>['readDiscovery']>>;

export async function openUi(opts: { print?: boolean }): Promise<void> {
  const config = loadConfig();
  const { readDiscovery } = await loadServer();
  const info = readDiscovery(config.paths.discoveryFile);
  if (info === undefined)
    throw new SkepError(
      'unavailable',
      `no skep serve is running for ${config.paths.stateDir}; start one with 'skep serve'`,
    );
  if (info.url.startsWith('unix://'))
    throw new SkepError(
      'bad_request',
      `skep serve listens on the unix socket ${info.url.slice('unix://'.length)}, which a browser cannot open; run it on TCP for the web UI`,
    );
  const token = resolveApiToken(config.paths, process.env);
  if (token === undefined)
    throw new SkepError(
      'unauthorized',
      `no API token: ${config.paths.apiTokenFile} does not exist; if skep serve was started with ${API_TOKEN_ENV}, set it here too`,
    );
  const url = await mintLoginLink(info, token, config.paths.discoveryFile);
  process.stdout.write(`${url}\n`);
  if (opts.print === true) return;
  const opened = await openInBrowser(url, { dir: join(config.paths.stateDir, 'open') });
  if (!opened.opened && opened.headless !== true)
    process.stderr.write(`cannot open a browser (${opened.reason ?? 'unknown'}); open the URL above\n`);
}

/** An HTTP agent with one connection, made beforehand: the proof and the token share it. */
class OneConnectionAgent extends Agent {
  #socket: Duplex | undefined;

  constructor(socket: Duplex) {
    super({ keepAlive: true, maxSockets: 1 });
    this.#socket = socket;
  }

  override createConnection(): Duplex {
    const socket = this.#socket;
    this.#socket = undefined;
    if (socket !== undefined) return socket;
    // A second connection could reach another program than the one that proved itself.
    const refused = new PassThrough();
    process.nextTick(() =>
      refused.destroy(new Error('the connection closed after the server proved itself; run skep ui again')),
    );
    return refused;
  }
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

function send(
  agent: Agent,
  base: URL,
  method: 'GET' | 'POST',
  path: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    const req = httpRequest(
      {
        agent,
        host: base.hostname.replace(/^\[(.*)\]$/, '$1'),
        port: Number(base.port),
        path,
        method,
        headers: { ...headers, host: base.host },
        timeout: TIMEOUT_MS,
      },
      (response: IncomingMessage) => {
        let text = '';
        response.setEncoding('utf8').on('data', (chunk: string) => {
          text += chunk;
        });
        response.on('end', () => {
          let body: Record<string, unknown> = {};
          try {
            const parsed: unknown = JSON.parse(text);
            if (parsed !== null && typeof parsed === 'object') body = parsed as Record<string, unknown>;
          } catch {
            // not JSON: an empty body, judged by the caller
          }
          resolve({ status: response.statusCode ?? 0, body });
        });
        response.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', (err) =>
      reject(new SkepError('unavailable', `cannot reach skep serve at ${base.origin}: ${err.message}`)),
    );
    req.end();
  });
}

const staleDiscovery =
  (discoveryFile: string) =>
  (why: string): SkepError =>
    new SkepError(
      'unavailable',
      `the discovery file is stale (${why}); not sending the API token. ` +
        `Start skep serve again (it rewrites ${discoveryFile}).`,
    );

const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest();

/**
 * Asks the server for HMAC(discovery secret, fresh nonce). Anything but the right answer
 * means the discovery file's server is gone and something else has its address.
 */
async function proveServer(agent: Agent, base: URL, proofKey: string, discoveryFile: string): Promise<void> {
  const stale = staleDiscovery(discoveryFile);
  const nonce = randomBytes(32).toString('base64url');
  let answer: Answer;
  try {
    answer = await send(agent, base, 'GET', `/auth/challenge?nonce=${nonce}`);
  } catch (err) {
    throw stale(`the server at ${base.origin} does not answer: ${(err as Error).message}`);
  }
  const proof = answer.body['proof'];
  const { discoveryProof } = await import('../../api/auth.js');
  const expected = discoveryProof(Buffer.from(proofKey, 'base64url'), nonce);
  if (answer.status !== 200 || typeof proof !== 'string' || !timingSafeEqual(sha256(proof), sha256(expected)))
    throw stale(
      `the program at ${base.origin} cannot prove it is the skep serve that wrote ${discoveryFile}`,
    );
}

async function mintLoginLink(info: DiscoveryInfo, token: ApiToken, discoveryFile: string): Promise<string> {
  if (info.proof_key === undefined)
    throw staleDiscovery(discoveryFile)(
      `${discoveryFile} holds no proof key: it was written by another version of skep serve`,
    );
  const base = new URL(info.url);
  const host = base.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = Number(base.port);
  const socket =
    base.protocol === 'https:' ? await connectPinned(host, port, info) : await connectPlain(host, port, info);
  const agent = new OneConnectionAgent(socket);
  try {
    await proveServer(agent, base, info.proof_key, discoveryFile);
    const res = await send(agent, base, 'POST', '/api/v1beta/auth/login-link', {
      authorization: `Bearer ${token.token}`,
    });
    if (res.status === 401)
      throw new SkepError(
        'unauthorized',
        `skep serve at ${info.url} refused the API token from ${token.source === 'env' ? API_TOKEN_ENV : token.file}; ` +
          `use the token it was started with (${API_TOKEN_ENV}, or its state directory's api-token file)`,
      );
    const url = res.body['url'];
    if (res.status !== 200 || typeof url !== 'string')
      throw new SkepError(
        'bad_gateway',
        `skep serve at ${info.url} answered ${res.status}${typeof res.body['message'] === 'string' ? `: ${res.body['message']}` : ''}`,
      );
    // Only a login page of the server that proved itself is printed and opened.
    let link: URL | undefined;
    try {
      link = new URL(url);
    } catch {
      link = undefined;
    }
    if (link === undefined || link.origin !== base.origin || link.pathname !== '/auth/login')
      throw new SkepError('bad_gateway', `skep serve at ${info.url} answered a login URL on another origin`);
    return link.href;
  } finally {
    agent.destroy();
    socket.destroy();
  }
}

/** A TCP connection to the discovered address. */
function connectPlain(host: string, port: number, info: DiscoveryInfo): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = netConnect({ host, port, timeout: TIMEOUT_MS });
    const timedOut = () => socket.destroy(new Error('connection timed out'));
    socket.once('timeout', timedOut);
    socket.once('connect', () => {
      // From here on each request's own deadline applies.
      socket.off('timeout', timedOut);
      socket.setTimeout(0);
      resolve(socket);
    });
    socket.once('error', (err) =>
      reject(new SkepError('unavailable', `cannot reach skep serve at ${info.url}: ${err.message}`)),
    );
  });
}

/** A TLS connection whose certificate is exactly the one `skep serve` announced. */
function connectPinned(host: string, port: number, info: DiscoveryInfo): Promise<TLSSocket> {
  const expected = info.tls_cert_sha256;
  if (expected === undefined)
    return Promise.reject(
      new SkepError('bad_gateway', `the discovery file names ${info.url} but no certificate fingerprint`),
    );
  return new Promise((resolve, reject) => {
    // Verification is the fingerprint comparison below, done before anything is written.
    const socket = tlsConnect({
      host,
      port,
      ...(isIP(host) === 0 ? { servername: host } : {}),
      rejectUnauthorized: false,
      ALPNProtocols: ['http/1.1'],
      timeout: TIMEOUT_MS,
    });
    const timedOut = () => socket.destroy(new Error('TLS handshake timed out'));
    socket.once('timeout', timedOut);
    socket.once('secureConnect', () => {
      socket.off('timeout', timedOut);
      socket.setTimeout(0);
      if (socket.getPeerCertificate().fingerprint256 !== expected) {
        socket.destroy();
        reject(
          new SkepError(
            'bad_gateway',
            `the server at ${info.url} presented another certificate than skep serve announced; not sending the token`,
          ),
        );
        return;
      }
      resolve(socket);
    });
    socket.once('error', (err) =>
      reject(new SkepError('unavailable', `cannot reach skep serve at ${info.url}: ${err.message}`)),
    );
  });
}
