/**
 * Podman for container tests: a private `podman system service` on a temp unix socket
 * (the Docker Engine API dockerode talks to), and a test image built locally, because
 * nothing can be pulled here: `podman import` of a rootfs tar holding this machine's node
 * binary with its shared libraries, plus the fixture MCP servers bundled by esbuild into
 * single files (`/app/stdio-server.cjs`, `/app/http-server.cjs`). The image tag carries a
 * hash of its inputs, so it is built once and reused by every test file (and kept as a
 * cache between runs); containers, networks and the service are removed by each test.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { hasCommand, requireService } from './services.js';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', 'integration', 'runtime', 'fixtures');

let usable: boolean | undefined;
/** Podman is installed and can run containers (root, runc configured). */
export function podmanUsable(): boolean {
  usable ??=
    hasCommand('podman') && spawnSync('podman', ['info'], { stdio: 'ignore', timeout: 60_000 }).status === 0;
  return usable;
}

/** Skips locally (fails in CI) without Podman. */
export function requirePodman(t: TestContext): boolean {
  return requireService(t, 'podman', podmanUsable(), 'install podman and runc; see .ci/run');
}

export interface PodmanService {
  /** `unix:///.../podman.sock` */
  host: string;
  dir: string;
  /** Stops the service (by its pid); idempotent. Also registered with `t.after`. */
  close(): Promise<void>;
}

/**
 * Starts `podman system service` on a temp socket. node:test runs `t.after` hooks in the
 * order they were registered, so a test that must remove workloads through the engine
 * registers that clean-up before calling this (or calls `close()` itself at the end).
 */
export async function startPodmanService(t: TestContext): Promise<PodmanService> {
  const dir = mkdtempSync(join(tmpdir(), 'skep-podman-'));
  const socket = join(dir, 'podman.sock');
  const child: ChildProcess = spawn('podman', ['system', 'service', '--time=0', `unix://${socket}`], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= stopService();
    return closing;
  };
  const stopService = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  t.after(close);
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (existsSync(socket)) {
      const ok = await fetchPing(socket);
      if (ok) break;
    }
    if (child.exitCode !== null) throw new Error(`podman system service exited: ${stderr}`);
    if (Date.now() > deadline) throw new Error(`podman system service did not answer: ${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { host: `unix://${socket}`, dir, close };
}

async function fetchPing(socket: string): Promise<boolean> {
  const { request } = await import('node:http');
  return new Promise((resolve) => {
    const req = request({ socketPath: socket, path: '/_ping', timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

/** Node binary + the shared libraries `ldd` lists, as rootfs-relative paths. */
function nodeFiles(): string[] {
  const out = execFileSync('ldd', [process.execPath], { encoding: 'utf8' });
  const libs = [...out.matchAll(/(\/[^\s]+)/g)].map((m) => m[1] as string);
  return [process.execPath, ...new Set(libs)];
}

/**
 * The test image (`localhost/skep-test-node:<hash>`): node at /usr/bin/node and the
 * fixtures in /app. Built at most once per content hash.
 */
export async function testImage(): Promise<string> {
  const bundleDir = mkdtempSync(join(tmpdir(), 'skep-fixture-'));
  try {
    for (const name of ['stdio-server', 'http-server']) {
      await build({
        entryPoints: [join(FIXTURES, `${name}.ts`)],
        outfile: join(bundleDir, `${name}.cjs`),
        bundle: true,
        platform: 'node',
        target: 'node20',
        format: 'cjs',
        logLevel: 'error',
      });
    }
    const files = nodeFiles();
    const hash = createHash('sha256');
    for (const f of files) hash.update(f).update(String(readFileSync(f).length));
    hash.update('entrypoint-node-v1');
    for (const name of ['stdio-server', 'http-server'])
      hash.update(readFileSync(join(bundleDir, `${name}.cjs`)));
    const tag = `localhost/skep-test-node:${hash.digest('hex').slice(0, 12)}`;
    if (spawnSync('podman', ['image', 'exists', tag]).status === 0) return tag;

    const root = join(bundleDir, 'root');
    for (const f of files) {
      mkdirSync(join(root, dirname(f)), { recursive: true });
      copyFileSync(f, join(root, f));
    }
    if (process.execPath !== '/usr/bin/node') {
      mkdirSync(join(root, 'usr', 'bin'), { recursive: true });
      copyFileSync(process.execPath, join(root, 'usr', 'bin', 'node'));
    }
    mkdirSync(join(root, 'app'), { recursive: true });
    mkdirSync(join(root, 'tmp'), { recursive: true, mode: 0o1777 });
    mkdirSync(join(root, 'data'), { recursive: true });
    for (const name of ['stdio-server', 'http-server'])
      copyFileSync(join(bundleDir, `${name}.cjs`), join(root, 'app', `${name}.cjs`));
    const tar = join(bundleDir, 'rootfs.tar');
    execFileSync('tar', ['-C', root, '-cf', tar, '.']);
    execFileSync(
      'podman',
      ['import', '--change', 'ENTRYPOINT ["/usr/bin/node"]', '--change', 'ENV PATH=/usr/bin:/bin', tar, tag],
      {
        stdio: 'ignore',
        timeout: 120_000,
      },
    );
    return tag;
  } finally {
    rmSync(bundleDir, { recursive: true, force: true });
  }
}
