/**
 * `skep serve`: binds the management API on TCP or a unix socket, enforces one healthy
 * server per state dir through the discovery file, and shuts down gracefully.
 *
 * On TCP every request but `GET /health` needs the API token (else any local user could call the
 * API). Binding beyond loopback is an explicit choice (`allowRemote`), checked with every other
 * listener setting (origins, TLS files, port) before anything is bound or written.
 */
import { createPrivateKey, randomBytes, X509Certificate } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest, type RequestOptions } from 'node:http';
import { dirname } from 'node:path';
import { type ApiToken, resolveApiToken, type SkepConfig } from '../../config/index.js';
import {
  definedOnly,
  isLoopbackName,
  isWildcardAddress,
  processAlive,
  SkepError,
  writeFileAtomicSync,
} from '../../shared/index.js';
import { buildApp, type SkepApp } from './app.js';
import { BrowserSessions } from './browser-sessions.js';
import { type ApiContext, type ContextOptions, createContext } from '../app/index.js';

export interface DiscoveryInfo {
  url: string;
  pid: number;
  nonce: string;
  started_at: string;
  /**
   * A secret of this start (32 random bytes, base64url), TCP only: `skep ui` asks the server at
   * `url` to prove it holds it before sending the API token (`GET /auth/challenge`). The file
   * is 0600, so only the user and the server that wrote it know it; the public `nonce` is no
   * proof, since `GET /health` tells it to anyone.
   */
  proof_key?: string;
  /** SHA-256 fingerprint of the TLS certificate (`AA:BB:…`) when the API serves HTTPS: `skep ui` pins it. */
  tls_cert_sha256?: string;
}

export interface ListenOptions {
  host?: string;
  port?: number;
  /** Unix socket path; overrides host and port. */
  socket?: string;
  /** Allow a bind address that is not loopback (a wildcard or a network interface). */
  allowRemote?: boolean;
  /** Browser origins allowed besides the server's own, added to config `server.allowed_origins`. */
  allowedOrigins?: readonly string[];
  /** PEM certificate (chain) and key files; default: config `server.tls_cert` / `server.tls_key`. */
  tlsCert?: string;
  tlsKey?: string;
}

/** How often `skep serve` re-checks workloads and client configs. */
export const SWEEP_INTERVAL_MS = 15_000;

export interface RunningServer {
  readonly url: string;
  readonly app: SkepApp;
  readonly ctx: ApiContext;
  /** Where the API token came from (TCP only): `SKEP_API_TOKEN` or the token file. */
  readonly apiToken: Omit<ApiToken, 'token'> | undefined;
  /** A fresh one-time browser login URL (TCP only; valid once, for 60 s). */
  loginUrl(): string | undefined;
  close(): Promise<void>;
}

/** A listener whose every setting has been checked. */
type ListenPlan =
  | { kind: 'unix'; socket: string }
  | {
      kind: 'tcp';
      host: string;
      port: number;
      remote: boolean;
      allowedOrigins: string[];
      tls: { cert: string; key: string; fingerprint: string } | undefined;
      apiToken: ApiToken;
    };

/**
 * Checks an allowed origin: exactly `scheme://host[:port]` (a path, query or credentials
 * would be silently dropped by the comparison, so they are refused instead).
 */
function checkOrigin(value: string, source: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (
    url === undefined ||
    (url.protocol !== 'http:' && url.protocol !== 'https:') ||
    url.username !== '' ||
    url.password !== '' ||
    url.pathname !== '/' ||
    url.search !== '' ||
    url.hash !== ''
  )
    throw new SkepError(
      'invalid_config',
      `${source}: '${value}' is not an origin; write scheme, host and optional port, e.g. https://ui.example.com:8443`,
    );
  return url.origin;
}

function readPem(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new SkepError(
      'invalid_config',
      `cannot read the TLS ${what} ${file}: ${code === 'ENOENT' ? 'no such file' : (code ?? 'unreadable')}`,
    );
  }
}

/** Loads and cross-checks the PEM files, so a bad pair is a clear start error, not a TLS failure later. */
function loadTls(certFile: string, keyFile: string): { cert: string; key: string; fingerprint: string } {
  const cert = readPem(certFile, 'certificate');
  const key = readPem(keyFile, 'key');
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch {
    throw new SkepError('invalid_config', `${certFile} is not a PEM certificate`);
  }
  let privateKey: ReturnType<typeof createPrivateKey>;
  try {
    privateKey = createPrivateKey(key);
  } catch {
    throw new SkepError('invalid_config', `${keyFile} is not an unencrypted PEM private key`);
  }
  if (!x509.checkPrivateKey(privateKey))
    throw new SkepError('invalid_config', `${keyFile} is not the private key of the certificate ${certFile}`);
  return { cert, key, fingerprint: x509.fingerprint256 };
}

/** Checks every listener setting (flags and config) before anything is bound or written. */
function planListener(config: SkepConfig, listen: ListenOptions, env: NodeJS.ProcessEnv): ListenPlan {
  if (listen.socket !== undefined) {
    if (listen.tlsCert !== undefined || listen.tlsKey !== undefined)
      throw new SkepError(
        'invalid_config',
        'TLS is for TCP listeners; a unix socket is protected by its file mode',
      );
    return { kind: 'unix', socket: listen.socket };
  }
  const host = listen.host ?? config.server.host;
  const port = listen.port ?? config.server.port;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new SkepError('invalid_config', `invalid port ${port}: use 0 to 65535`);
  const remote = !isLoopbackName(host);
  if (remote && listen.allowRemote !== true)
    throw new SkepError(
      'forbidden',
      `refusing to listen on ${isWildcardAddress(host) ? `every interface (${host || 'any'})` : host}: ` +
        'the management API starts programs as you, and this address can be reached from other machines. ' +
        'Add --allow-remote to do it on purpose (every client then needs the API token; ' +
        'add --tls-cert and --tls-key so the token does not travel in clear text), or bind 127.0.0.1.',
    );
  const allowedOrigins = [
    ...config.server.allowed_origins.map((o) =>
      checkOrigin(o, `server.allowed_origins in ${config.paths.configFile}`),
    ),
    ...(listen.allowedOrigins ?? []).map((o) => checkOrigin(o, '--allowed-origin')),
  ];
  const certFile = listen.tlsCert ?? config.server.tls_cert;
  const keyFile = listen.tlsKey ?? config.server.tls_key;
  if ((certFile === undefined) !== (keyFile === undefined))
    throw new SkepError(
      'invalid_config',
      'TLS needs both a certificate and its key: give --tls-cert and --tls-key (or server.tls_cert and server.tls_key)',
    );
  const tls = certFile === undefined || keyFile === undefined ? undefined : loadTls(certFile, keyFile);
  const apiToken = resolveApiToken(config.paths, env, { create: true });
  return { kind: 'tcp', host, port, remote, allowedOrigins, tls, apiToken };
}

export function readDiscovery(file: string): DiscoveryInfo | undefined {
  try {
    const info = JSON.parse(readFileSync(file, 'utf8')) as DiscoveryInfo;
    if (typeof info.url !== 'string' || typeof info.pid !== 'number') return undefined;
    return info;
  } catch {
    return undefined;
  }
}

/**
 * GET /health on a discovered server; true only for a 204 carrying the expected nonce.
 * Over HTTPS the certificate is not verified: nothing is sent, and the answer only counts
 * when it carries the nonce from our own state directory.
 */
export async function probeHealth(info: DiscoveryInfo, timeoutMs = 1000): Promise<boolean> {
  let target: RequestOptions;
  let request = httpRequest;
  if (info.url.startsWith('unix://')) {
    target = { socketPath: info.url.slice('unix://'.length), path: '/health', host: 'localhost' };
  } else {
    const u = new URL('/health', info.url);
    target = { host: u.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(u.port), path: '/health' };
    if (u.protocol === 'https:') {
      // Loaded on demand: only a TLS server needs it, and `skep serve` starts lean.
      request = (await import('node:https')).request;
      target = { ...target, rejectUnauthorized: false } as RequestOptions;
    }
  }
  return new Promise((resolve) => {
    const req = request({ ...target, method: 'GET', timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode === 204 && res.headers['x-skep-nonce'] === info.nonce);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

/** Fails when another healthy `skep serve` owns this state dir; removes a stale file. */
export async function claimDiscovery(file: string): Promise<void> {
  const existing = readDiscovery(file);
  if (existing === undefined) return;
  if (existing.pid !== process.pid && processAlive(existing.pid) && (await probeHealth(existing))) {
    throw new SkepError(
      'conflict',
      `another skep server is already running at ${existing.url} (pid ${existing.pid}); stop it first or use another SKEP_HOME`,
    );
  }
  rmSync(file, { force: true });
}

export async function startServer(
  config: SkepConfig,
  listen: ListenOptions = {},
  options: ContextOptions & { sweepIntervalMs?: number; sessions?: BrowserSessions } = {},
): Promise<RunningServer> {
  const plan = planListener(config, listen, options.env ?? process.env);
  const discoveryFile = config.paths.discoveryFile;
  await claimDiscovery(discoveryFile);
  const ctx = createContext(config, options);
  const sessions = options.sessions ?? new BrowserSessions();
  const proofKey = randomBytes(32);
  let app: SkepApp;
  try {
    app = await buildApp(
      ctx,
      plan.kind === 'unix'
        ? { transport: 'unix', sessions }
        : {
            transport: 'tcp',
            apiToken: plan.apiToken.token,
            bindHost: plan.host,
            allowedOrigins: plan.allowedOrigins,
            sessions,
            discoveryProofKey: proofKey,
            ...(plan.tls === undefined ? {} : { tls: { cert: plan.tls.cert, key: plan.tls.key } }),
          },
    );
  } catch (err) {
    await ctx.close();
    throw err;
  }

  let url: string;
  const where = plan.kind === 'unix' ? plan.socket : `${plan.host}:${plan.port}`;
  try {
    if (plan.kind === 'unix') {
      // 0700: only the user reaches the socket inside a directory Skep creates.
      mkdirSync(dirname(plan.socket), { recursive: true, mode: 0o700 });
      rmSync(plan.socket, { force: true });
      await app.listen({ path: plan.socket });
      chmodSync(plan.socket, 0o660);
      url = `unix://${plan.socket}`;
    } else {
      await app.listen({ host: plan.host, port: plan.port });
      const address = app.server.address();
      if (address === null || typeof address === 'string')
        throw new Error('server did not bind a TCP address');
      // A wildcard bind is reached locally through loopback; the URL is what local clients
      // (and `skep ui`'s browser) use, and 0.0.0.0 is no address to connect to.
      const local = isWildcardAddress(address.address)
        ? address.family === 'IPv6'
          ? '[::1]'
          : '127.0.0.1'
        : address.family === 'IPv6'
          ? `[${address.address}]`
          : address.address;
      url = `${plan.tls === undefined ? 'http' : 'https'}://${local}:${address.port}`;
    }
  } catch (err) {
    await app.close();
    await ctx.close();
    const code = (err as NodeJS.ErrnoException).code;
    const tcp = plan.kind === 'tcp';
    if (code === 'EADDRINUSE')
      throw new SkepError(
        'conflict',
        `address already in use: ${where}; another program (another skep serve?) listens there: stop it, or ${tcp ? 'choose another port with --port' : 'give another --socket path'}`,
      );
    if (code === 'EACCES')
      throw new SkepError(
        'forbidden',
        `permission denied binding ${where}${tcp ? '; ports below 1024 need privileges: choose another with --port' : ''}`,
      );
    if (code === 'EADDRNOTAVAIL')
      throw new SkepError('invalid_config', `cannot bind ${where}: no network interface has that address`);
    throw err;
  }
  if (plan.kind === 'tcp' && plan.remote && plan.tls === undefined)
    ctx.logger.warn(
      { url, host: plan.host },
      'THE API IS REACHABLE FROM OTHER MACHINES WITHOUT TLS: the API token and every request travel in clear text. ' +
        'Add --tls-cert and --tls-key.',
    );

  const info: DiscoveryInfo = {
    url,
    pid: process.pid,
    nonce: ctx.nonce,
    started_at: new Date().toISOString(),
    ...(plan.kind === 'tcp' ? { proof_key: proofKey.toString('base64url') } : {}),
    ...(plan.kind === 'tcp' && plan.tls !== undefined ? { tls_cert_sha256: plan.tls.fingerprint } : {}),
  };
  writeFileAtomicSync(discoveryFile, JSON.stringify(info, null, 2));

  // The API is a controller, not the workloads' parent: on start, and then periodically,
  // bring back workloads that should run but whose runner is gone (reboot, kill), and make
  // registered clients' config files match the running workloads.
  const sweep = async (): Promise<void> => {
    try {
      const resumed = await ctx.workloads.reconcile();
      if (resumed.length > 0) ctx.logger.info({ resumed }, 'resumed workloads');
      await ctx.clients.syncClientConfigs();
    } catch (err) {
      ctx.logger.error({ err }, 'workload reconciliation failed');
    }
  };
  let sweeping: Promise<void> | undefined;
  const startSweep = (): void => {
    sweeping ??= sweep().finally(() => {
      sweeping = undefined;
    });
  };
  startSweep();
  const timer = setInterval(startSweep, options.sweepIntervalMs ?? SWEEP_INTERVAL_MS);
  timer.unref();

  let closing: Promise<void> | undefined;
  return {
    url,
    app,
    ctx,
    apiToken:
      plan.kind === 'unix'
        ? undefined
        : {
            source: plan.apiToken.source,
            ...definedOnly({ file: plan.apiToken.file }),
          },
    loginUrl() {
      return plan.kind === 'unix' ? undefined : `${url}/auth/login?ticket=${sessions.mintTicket()}`;
    },
    close() {
      closing ??= (async () => {
        clearInterval(timer);
        try {
          await sweeping;
          await app.close();
        } finally {
          const current = readDiscovery(discoveryFile);
          if (current?.nonce === ctx.nonce) rmSync(discoveryFile, { force: true });
          if (plan.kind === 'unix') rmSync(plan.socket, { force: true });
          await ctx.close();
        }
      })();
      return closing;
    },
  };
}
