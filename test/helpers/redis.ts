/**
 * Real Redis topologies for tests and benchmarks: a standalone server, a Sentinel set-up
 * (master + replica + three sentinels) and a 3-master Cluster, each on free loopback ports
 * in its own temporary directory, started from the Debian `redis-server`/`redis-sentinel`
 * binaries and stopped (SIGTERM, then SIGKILL) by `stop()`. Nothing is persisted to disk.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hasCommand } from './services.js';

export const REDIS_HINT = 'apt-get install redis-server redis-sentinel redis-tools';

export function redisAvailable(): boolean {
  return hasCommand('redis-server') && hasCommand('redis-sentinel') && hasCommand('redis-cli');
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** A free port whose cluster-bus twin (port + 10000) is free too. */
async function freePortWithBus(): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = 20000 + Math.floor(Math.random() * 20000);
    if ((await portFree(port)) && (await portFree(port + 10000))) return port;
  }
  throw new Error('no free port pair found');
}

/** Resolves when the server answers on its port (any RESP reply, even NOAUTH, means it is up). */
async function waitForRedis(
  port: number,
  proc: ChildProcess,
  what: string,
  timeoutMs = 20_000,
  tlsCa?: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`${what} exited with code ${proc.exitCode}`);
    const ok = await new Promise<boolean>((resolve) => {
      const sock: Socket =
        tlsCa === undefined
          ? connect(port, '127.0.0.1')
          : tlsConnect({ port, host: '127.0.0.1', ca: readFileSync(tlsCa) });
      sock.setTimeout(1000);
      sock.once(tlsCa === undefined ? 'connect' : 'secureConnect', () => sock.write('PING\r\n'));
      sock.once('data', (d) => {
        sock.destroy();
        resolve(/^[+-]/.test(d.toString()));
      });
      sock.once('error', () => resolve(false));
      sock.once('timeout', () => {
        sock.destroy();
        resolve(false);
      });
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} on port ${port} did not start within ${timeoutMs} ms`);
}

function stopProcess(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => proc.kill('SIGKILL'), 5000);
    proc.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    proc.kill('SIGTERM');
  });
}

export interface RedisInstance {
  port: number;
  addr: string;
  proc: ChildProcess;
  stop(): Promise<void>;
}

function launch(binary: string, args: string[], dir: string, log: string[]): ChildProcess {
  const proc = spawn(binary, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  const keep = (d: Buffer) => {
    log.push(d.toString());
    if (log.length > 200) log.shift();
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  return proc;
}

/** PEM files for a Redis server that speaks only TLS. */
export interface RedisTlsFiles {
  cert: string;
  key: string;
  ca: string;
}

/**
 * Directives for a server whose `default` user is off and whose only user is `user` with
 * `password` and every permission: clients must authenticate as that ACL user.
 */
export function aclUserArgs(user: string, password: string): string[] {
  return ['--user', 'default', 'off', '--user', user, 'on', `>${password}`, '~*', '&*', '+@all'];
}

/**
 * Starts `redis-server` with the given extra directives (`--name value` pairs). With `tls`
 * it listens only with TLS (no plain port) and does not ask clients for certificates.
 */
export async function startRedis(
  extra: string[] = [],
  dir?: string,
  tls?: RedisTlsFiles,
): Promise<RedisInstance> {
  const own = dir === undefined;
  const workDir = dir ?? mkdtempSync(join(tmpdir(), 'skep-redis-'));
  const port = await freePortWithBus();
  const log: string[] = [];
  const listen =
    tls === undefined
      ? ['--port', String(port)]
      : [
          '--port',
          '0',
          '--tls-port',
          String(port),
          '--tls-cert-file',
          tls.cert,
          '--tls-key-file',
          tls.key,
          '--tls-ca-cert-file',
          tls.ca,
          '--tls-auth-clients',
          'no',
        ];
  const proc = launch(
    'redis-server',
    [
      ...listen,
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      workDir,
      '--dbfilename',
      `dump-${port}.rdb`,
      ...extra,
    ],
    workDir,
    log,
  );
  try {
    await waitForRedis(port, proc, 'redis-server', 20_000, tls?.ca);
  } catch (err) {
    proc.kill('SIGKILL');
    throw new Error(`${(err as Error).message}\n${log.join('')}`, { cause: err });
  }
  return {
    port,
    addr: `127.0.0.1:${port}`,
    proc,
    async stop() {
      await stopProcess(proc);
      if (own) rmSync(workDir, { recursive: true, force: true });
    },
  };
}

export interface SentinelSetup {
  masterName: string;
  sentinelAddrs: string[];
  password: string;
  master: RedisInstance;
  replica: RedisInstance;
  /** Runs a command against a sentinel and returns its output. */
  sentinel(...args: string[]): string;
  /** The current master's host:port as the sentinels see it. */
  currentMaster(): string;
  stop(): Promise<void>;
}

/** Master + one replica + three sentinels (quorum 2), all password-protected. */
export async function startSentinelSetup(password: string): Promise<SentinelSetup> {
  const dir = mkdtempSync(join(tmpdir(), 'skep-sentinel-'));
  const masterName = 'skepmaster';
  const auth = ['--requirepass', password, '--masterauth', password];
  const master = await startRedis(auth, dir);
  const replica = await startRedis([...auth, '--replicaof', '127.0.0.1', String(master.port)], dir);
  const sentinels: { port: number; proc: ChildProcess }[] = [];
  const stopAll = async () => {
    await Promise.all(sentinels.map((s) => stopProcess(s.proc)));
    await replica.stop();
    await master.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    // The replica must be in sync before sentinels may fail over to it.
    await waitUntil(
      () => /master_link_status:up/.test(cli(replica.port, password, 'INFO', 'replication')),
      20_000,
    );
    for (let i = 0; i < 3; i++) {
      const port = await freePortWithBus();
      const conf = join(dir, `sentinel-${port}.conf`);
      writeFileSync(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${masterName} 127.0.0.1 ${master.port} 2`,
          `sentinel auth-pass ${masterName} ${password}`,
          `sentinel down-after-milliseconds ${masterName} 2000`,
          `sentinel failover-timeout ${masterName} 10000`,
          `sentinel parallel-syncs ${masterName} 1`,
          '',
        ].join('\n'),
      );
      const log: string[] = [];
      const proc = launch('redis-sentinel', [conf], dir, log);
      sentinels.push({ port, proc });
      await waitForRedis(port, proc, 'redis-sentinel');
    }
    // Sentinels must have discovered the replica (and each other) before a failover can work.
    const first = sentinels[0] as { port: number };
    await waitUntil(() => {
      const out = cli(first.port, undefined, 'SENTINEL', 'replicas', masterName);
      const others = cli(first.port, undefined, 'SENTINEL', 'sentinels', masterName);
      return out.includes(String(replica.port)) && (others.match(/\bname\b/g) ?? []).length >= 2;
    }, 30_000);
  } catch (err) {
    await stopAll();
    throw err;
  }
  const firstPort = (sentinels[0] as { port: number }).port;
  return {
    masterName,
    sentinelAddrs: sentinels.map((s) => `127.0.0.1:${s.port}`),
    password,
    master,
    replica,
    sentinel: (...args) => cli(firstPort, undefined, ...args),
    currentMaster() {
      const out = cli(firstPort, undefined, 'SENTINEL', 'get-master-addr-by-name', masterName)
        .trim()
        .split('\n');
      return `${out[0]}:${out[1]}`;
    },
    stop: stopAll,
  };
}

export interface RedisCluster {
  addr: string;
  nodes: RedisInstance[];
  stop(): Promise<void>;
}

/** Three masters (no replicas) joined with `redis-cli --cluster create`. */
export async function startRedisCluster(password: string): Promise<RedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'skep-cluster-'));
  const nodes: RedisInstance[] = [];
  const stopAll = async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < 3; i++) {
      const port = await freePortWithBus();
      nodes.push(
        await startRedis(
          [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            join(dir, `nodes-${port}.conf`),
            '--cluster-node-timeout',
            '5000',
            '--requirepass',
            password,
            '--masterauth',
            password,
          ],
          dir,
        ).catch((err) => {
          throw err;
        }),
      );
    }
    const create = spawnSync(
      'redis-cli',
      [
        '-a',
        password,
        '--no-auth-warning',
        '--cluster',
        'create',
        ...nodes.map((n) => n.addr),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    if (create.status !== 0)
      throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
    await waitUntil(
      () => nodes.every((n) => /cluster_state:ok/.test(cli(n.port, password, 'CLUSTER', 'INFO'))),
      30_000,
    );
  } catch (err) {
    await stopAll();
    throw err;
  }
  return { addr: (nodes[0] as RedisInstance).addr, nodes, stop: stopAll };
}

/** Runs `redis-cli` against a loopback port and returns stdout. */
export function cli(port: number, password: string | undefined, ...args: string[]): string {
  const auth = password === undefined ? [] : ['-a', password, '--no-auth-warning'];
  const r = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...auth, ...args], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  return `${r.stdout ?? ''}${r.stderr ?? ''}`;
}

export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  stepMs = 200,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, stepMs));
  }
  throw new Error(`condition not met within ${timeoutMs} ms`);
}

/**
 * A throw-away CA and a server certificate for 127.0.0.1 (openssl CLI), in `dir`. The CA is
 * trusted by nobody but the test that passes it.
 */
export function makeTlsFiles(dir: string): RedisTlsFiles {
  const run = (...args: string[]) => {
    const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`openssl ${args[0]} failed: ${r.stderr}`);
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  run(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-subj',
    '/CN=skep test CA',
    '-days',
    '2',
  );
  run('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  run(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '2',
    '-extfile',
    'san.ext',
  );
  return { cert: join(dir, 'server.crt'), key: join(dir, 'server.key'), ca: join(dir, 'ca.crt') };
}
