/**
 * Podman for container tests: a private `podman system service` on a temp unix socket
 * (the Docker Engine API dockerode talks to), and a test image built locally, because
 * nothing can be pulled here: `podman import` of a rootfs tar holding this machine's node
 * binary with its shared libraries, plus the fixture MCP servers bundled by esbuild into
 * single files (`/app/stdio-server.cjs`, `/app/http-server.cjs`). For `npx://` workloads
 * the image also holds npm (copied from this Node installation, with `npx`, `/bin/sh` and
 * `/usr/bin/env`, which npm needs to run a package's bin) and a packed fixture package,
 * `NPX_FIXTURE_TARBALL`, that `npx -y file:<tarball>` installs with no registry (npm runs
 * offline in the image; a bare path would be executed by npx, not installed). The image
 * tag carries a hash of its inputs, so it is built once and reused by every test file (and
 * kept as a cache between runs); containers, networks and the service are removed by each
 * test.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
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

/** The shared libraries `ldd` lists for `binaries`, as absolute host paths. */
function sharedLibraries(binaries: string[]): string[] {
  const libs = new Set<string>();
  for (const binary of binaries) {
    const out = execFileSync('ldd', [binary], { encoding: 'utf8' });
    for (const m of out.matchAll(/(\/[^\s]+)/g)) libs.add(m[1] as string);
  }
  return [...libs];
}

/** The npm package of this Node installation (`<prefix>/lib/node_modules/npm`). */
function npmDir(): string {
  const candidates = [
    join(dirname(realpathSync(process.execPath)), '..', 'lib', 'node_modules', 'npm'),
    '/usr/lib/node_modules/npm',
    '/usr/local/lib/node_modules/npm',
  ];
  const found = candidates.find((dir) => existsSync(join(dir, 'bin', 'npx-cli.js')));
  if (found === undefined) throw new Error(`npm not found next to node (tried ${candidates.join(', ')})`);
  return found;
}

const NPX_PACKAGE = 'skep-fixture-npx-server';
/** Where the packed fixture package sits in the test image: `npx://file:` + this path runs it. */
export const NPX_FIXTURE_TARBALL = `/pkgs/${NPX_PACKAGE}-1.0.0.tgz`;

/** Bundles the npx fixture server into its package and packs it into `outDir`; returns the tarball path. */
async function packNpxFixture(workDir: string, outDir: string, npm: string): Promise<string> {
  const pkg = join(workDir, 'npx-package');
  mkdirSync(pkg, { recursive: true });
  copyFileSync(join(FIXTURES, 'npx-package', 'package.json'), join(pkg, 'package.json'));
  await build({
    entryPoints: [join(FIXTURES, 'npx-server.ts')],
    outfile: join(pkg, 'server.cjs'),
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    banner: { js: '#!/usr/bin/env node' },
    logLevel: 'error',
  });
  execFileSync(process.execPath, [join(npm, 'bin', 'npm-cli.js'), 'pack', '--pack-destination', outDir], {
    cwd: pkg,
    stdio: 'ignore',
    timeout: 120_000,
    env: { ...process.env, npm_config_offline: 'true', npm_config_update_notifier: 'false' },
  });
  const tarball = join(outDir, NPX_FIXTURE_TARBALL.split('/').pop() as string);
  if (!existsSync(tarball)) throw new Error(`npm pack did not write ${tarball}`);
  return tarball;
}

/**
 * The test image (`localhost/skep-test-node:<hash>`): node at /usr/bin/node, the fixtures
 * in /app, npm/npx in /usr/bin (with /bin/sh and /usr/bin/env) and the npx fixture package
 * at `NPX_FIXTURE_TARBALL`. Built at most once per content hash.
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
    const npm = npmDir();
    const shell = realpathSync('/bin/sh');
    const env = realpathSync('/usr/bin/env');
    const libs = sharedLibraries([process.execPath, shell, env]);
    const pkgs = join(bundleDir, 'pkgs');
    mkdirSync(pkgs);
    const tarball = await packNpxFixture(bundleDir, pkgs, npm);

    const hash = createHash('sha256');
    for (const f of [process.execPath, shell, env, ...libs])
      hash.update(f).update(String(readFileSync(f).length));
    hash.update('entrypoint-node-v2-npx');
    hash.update(readFileSync(join(npm, 'package.json')));
    for (const name of ['stdio-server', 'http-server'])
      hash.update(readFileSync(join(bundleDir, `${name}.cjs`)));
    // The package's contents, not the tarball's bytes (which need not be reproducible).
    hash.update(readFileSync(join(bundleDir, 'npx-package', 'package.json')));
    hash.update(readFileSync(join(bundleDir, 'npx-package', 'server.cjs')));
    const tag = `localhost/skep-test-node:${hash.digest('hex').slice(0, 12)}`;
    if (spawnSync('podman', ['image', 'exists', tag]).status === 0) return tag;

    const root = join(bundleDir, 'root');
    const put = (from: string, to: string) => {
      mkdirSync(join(root, dirname(to)), { recursive: true });
      copyFileSync(from, join(root, to));
    };
    for (const f of [process.execPath, ...libs]) put(f, f);
    put(process.execPath, '/usr/bin/node');
    put(shell, '/bin/sh');
    put(env, '/usr/bin/env');
    cpSync(npm, join(root, 'usr', 'lib', 'node_modules', 'npm'), { recursive: true, verbatimSymlinks: true });
    symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(root, 'usr', 'bin', 'npm'));
    symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', join(root, 'usr', 'bin', 'npx'));
    put(tarball, NPX_FIXTURE_TARBALL);
    mkdirSync(join(root, 'app'), { recursive: true });
    mkdirSync(join(root, 'tmp'), { recursive: true, mode: 0o1777 });
    mkdirSync(join(root, 'data'), { recursive: true });
    mkdirSync(join(root, 'root'), { recursive: true, mode: 0o700 });
    for (const name of ['stdio-server', 'http-server'])
      copyFileSync(join(bundleDir, `${name}.cjs`), join(root, 'app', `${name}.cjs`));
    const rootfs = join(bundleDir, 'rootfs.tar');
    execFileSync('tar', ['-C', root, '-cf', rootfs, '.']);
    const changes = [
      'ENTRYPOINT ["/usr/bin/node"]',
      'ENV PATH=/usr/bin:/bin',
      'ENV HOME=/root',
      // No registry is reachable from a test container: npm must never try one.
      'ENV npm_config_offline=true',
      'ENV npm_config_update_notifier=false',
      'ENV npm_config_audit=false',
      'ENV npm_config_fund=false',
    ].flatMap((change) => ['--change', change]);
    execFileSync('podman', ['import', ...changes, rootfs, tag], { stdio: 'ignore', timeout: 180_000 });
    return tag;
  } finally {
    rmSync(bundleDir, { recursive: true, force: true });
  }
}
