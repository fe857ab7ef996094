/**
 * `skep serve`: binds the management API on TCP or a unix socket, enforces one healthy
 * server per state dir through the discovery file, and shuts down gracefully.
 */
import { chmodSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { dirname } from 'node:path';
import type { SkepConfig } from '../config/index.js';
import { SkepError, writeFileAtomicSync } from '../shared/index.js';
import { buildApp, type SkepApp } from './app.js';
import { type ApiContext, type ContextOptions, createContext } from './context.js';

export interface DiscoveryInfo {
  url: string;
  pid: number;
  nonce: string;
  started_at: string;
}

export interface ListenOptions {
  host?: string;
  port?: number;
  /** Unix socket path; overrides host and port. */
  socket?: string;
}

/** How often `skep serve` re-checks workloads and client configs. */
export const SWEEP_INTERVAL_MS = 15_000;

export interface RunningServer {
  readonly url: string;
  readonly app: SkepApp;
  readonly ctx: ApiContext;
  close(): Promise<void>;
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

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** GET /health on a discovered server; true only for a 204 carrying the expected nonce. */
export function probeHealth(info: DiscoveryInfo, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const target = info.url.startsWith('unix://')
      ? { socketPath: info.url.slice('unix://'.length), path: '/health', host: 'localhost' }
      : (() => {
          const u = new URL('/health', info.url);
          return { host: u.hostname, port: Number(u.port), path: '/health' };
        })();
    const req = httpRequest({ ...target, method: 'GET', timeout: timeoutMs }, (res) => {
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
  if (existing.pid !== process.pid && pidAlive(existing.pid) && (await probeHealth(existing))) {
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
  options: ContextOptions & { sweepIntervalMs?: number } = {},
): Promise<RunningServer> {
  const discoveryFile = config.paths.discoveryFile;
  await claimDiscovery(discoveryFile);
  const ctx = createContext(config, options);
  const host = listen.host ?? config.server.host;
  let app: SkepApp;
  try {
    app = await buildApp(ctx, { bindHost: host });
  } catch (err) {
    await ctx.close();
    throw err;
  }

  let url: string;
  try {
    if (listen.socket !== undefined) {
      mkdirSync(dirname(listen.socket), { recursive: true, mode: 0o750 });
      rmSync(listen.socket, { force: true });
      await app.listen({ path: listen.socket });
      chmodSync(listen.socket, 0o660);
      url = `unix://${listen.socket}`;
    } else {
      await app.listen({ host, port: listen.port ?? config.server.port });
      const address = app.server.address();
      if (address === null || typeof address === 'string')
        throw new Error('server did not bind a TCP address');
      const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      url = `http://${shown}:${address.port}`;
    }
  } catch (err) {
    await app.close();
    await ctx.close();
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE')
      throw new SkepError(
        'conflict',
        `address already in use: ${listen.socket ?? `${host}:${listen.port ?? config.server.port}`}`,
      );
    if (code === 'EACCES')
      throw new SkepError(
        'forbidden',
        `permission denied binding ${listen.socket ?? `${host}:${listen.port}`}`,
      );
    throw err;
  }

  const info: DiscoveryInfo = {
    url,
    pid: process.pid,
    nonce: ctx.nonce,
    started_at: new Date().toISOString(),
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
    close() {
      closing ??= (async () => {
        clearInterval(timer);
        try {
          await sweeping;
          await app.close();
        } finally {
          const current = readDiscovery(discoveryFile);
          if (current?.nonce === ctx.nonce) rmSync(discoveryFile, { force: true });
          if (listen.socket !== undefined) rmSync(listen.socket, { force: true });
          await ctx.close();
        }
      })();
      return closing;
    },
  };
}
