/**
 * `skep ui`: logs the browser in to the running `skep serve` (issue 16, item 1). It finds
 * the server through its discovery file, reads the API token the way the server does
 * (`SKEP_API_TOKEN`, else the token file), asks for a one-time login link with it, and
 * prints the link (and opens it when a display is there).
 *
 * Over HTTPS the server's certificate is pinned to the fingerprint `skep serve` wrote into
 * the discovery file, checked before the token is sent: that works for self-signed and
 * CA-issued certificates alike, and whatever name the certificate carries.
 */
import { spawn } from 'node:child_process';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import type { Command } from 'commander';
import { type DiscoveryInfo, readDiscovery } from '../../api/server.js';
import { type ApiToken, API_TOKEN_ENV, loadConfig, resolveApiToken } from '../../config/index.js';
import { SkepError } from '../../shared/index.js';

const TIMEOUT_MS = 10_000;

export function registerUi(program: Command): void {
  program
    .command('ui')
    .description('Open the web UI of the running skep serve in a browser (a one-time login URL)')
    .option('--print', 'only print the URL; do not open a browser')
    .action(async (opts: { print?: boolean }) => {
      const config = loadConfig();
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
      const url = await mintLoginLink(info, token);
      process.stdout.write(`${url}\n`);
      if (opts.print !== true) openBrowser(url);
    });
}

async function mintLoginLink(info: DiscoveryInfo, token: ApiToken): Promise<string> {
  const target = new URL('/api/v1beta/auth/login-link', info.url);
  const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = Number(target.port);
  const socket = target.protocol === 'https:' ? await connectPinned(host, port, info) : undefined;
  const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest(
      {
        host,
        port,
        path: target.pathname,
        method: 'POST',
        headers: { authorization: `Bearer ${token.token}`, host: target.host },
        timeout: TIMEOUT_MS,
        ...(socket === undefined ? {} : { createConnection: () => socket }),
      },
      (response: IncomingMessage) => {
        let body = '';
        response.setEncoding('utf8').on('data', (chunk: string) => {
          body += chunk;
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
        response.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', (err) =>
      reject(new SkepError('unavailable', `cannot reach skep serve at ${info.url}: ${err.message}`)),
    );
    req.end();
  });
  let parsed: { url?: unknown; message?: unknown } = {};
  try {
    parsed = JSON.parse(res.body) as typeof parsed;
  } catch {
    // reported below
  }
  if (res.status === 401)
    throw new SkepError(
      'unauthorized',
      `skep serve at ${info.url} refused the API token from ${token.source === 'env' ? API_TOKEN_ENV : token.file}; ` +
        `use the token it was started with (${API_TOKEN_ENV}, or its state directory's api-token file)`,
    );
  if (res.status !== 200 || typeof parsed.url !== 'string')
    throw new SkepError(
      'bad_gateway',
      `skep serve at ${info.url} answered ${res.status}${typeof parsed.message === 'string' ? `: ${parsed.message}` : ''}`,
    );
  return parsed.url;
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
    socket.once('secureConnect', () => {
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
    socket.once('timeout', () => socket.destroy(new Error('TLS handshake timed out')));
    socket.once('error', (err) =>
      reject(new SkepError('unavailable', `cannot reach skep serve at ${info.url}: ${err.message}`)),
    );
  });
}

/** Opens the URL with the desktop's handler when there is a desktop; the URL is printed either way. */
function openBrowser(url: string): void {
  const command =
    process.platform === 'darwin'
      ? 'open'
      : process.platform !== 'win32' &&
          (process.env['DISPLAY'] !== undefined || process.env['WAYLAND_DISPLAY'] !== undefined)
        ? 'xdg-open'
        : undefined;
  if (command === undefined) return;
  const child = spawn(command, [url], { detached: true, stdio: 'ignore' });
  child.on('error', (err) =>
    process.stderr.write(`cannot open a browser (${err.message}); open the URL above\n`),
  );
  child.unref();
}
