/**
 * `npx://` registry packages run from the shared package store (`src/dataplane/runtime/npm-store.ts`),
 * with real parts: two sandboxed workloads of @modelcontextprotocol/server-filesystem (from the
 * npm registry) through the process runtime. The first start installs the package into the
 * store, in a sandbox whose network reaches only the registry; the second finds it there. No
 * npm process stays in a workload's process tree (the server is its package's bin, run by
 * node), the server cannot write into its store entry, and the workload's home holds no npm
 * cache. The same package unsandboxed runs from the store too.
 *
 * Needs bubblewrap and the npm registry: skipped loudly without them, a failure in CI.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { ProcessRuntime, probeBwrap } from '../../../src/dataplane/runtime/index.js';
import { storeKey } from '../../../src/dataplane/runtime/npm-store.js';
import { requireService } from '../../helpers/services.js';
import { stdioProbe } from './probe.js';

const PACKAGE = '@modelcontextprotocol/server-filesystem';

function requireBwrap(t: TestContext): boolean {
  const probe = probeBwrap('bwrap');
  return requireService(t, 'bubblewrap', probe.ok, `${probe.ok ? '' : probe.reason}; apt install bubblewrap`);
}

/** The newest version of PACKAGE, or undefined when the registry cannot be reached. */
function latestVersion(): string | undefined {
  try {
    return JSON.parse(
      execFileSync('npm', ['view', PACKAGE, 'version', '--json'], {
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, npm_config_update_notifier: 'false' },
      }),
    ) as string;
  } catch {
    return undefined;
  }
}

/** Every process below `pid` (Linux `/proc/<pid>/task/<pid>/children`), with its command line. */
function processTree(pid: number): { pid: number; argv: string[] }[] {
  const out: { pid: number; argv: string[] }[] = [];
  const walk = (p: number) => {
    let children: number[];
    try {
      children = readFileSync(`/proc/${p}/task/${p}/children`, 'utf8')
        .trim()
        .split(/\s+/)
        .filter(Boolean)
        .map(Number);
    } catch {
      return;
    }
    for (const child of children) {
      try {
        out.push({
          pid: child,
          argv: readFileSync(`/proc/${child}/cmdline`, 'utf8').split('\0').filter(Boolean),
        });
      } catch {
        continue;
      }
      walk(child);
    }
  };
  walk(pid);
  return out;
}

function duBytes(path: string): number {
  const st = statSync(path);
  if (!st.isDirectory()) return st.size;
  return readdirSync(path).reduce((sum, name) => sum + duBytes(join(path, name)), 0);
}

const isNpm = (argv: string[]) =>
  argv.slice(0, 2).some((a) => /^(npm|npx)(-cli\.js)?$/.test(basename(a))) || argv.includes('exec');

test(
  'npx:// registry packages: installed once into the read-only store, the bin run directly, each workload sandboxed',
  { timeout: 400_000 },
  async (t) => {
    if (!requireBwrap(t)) return;
    const version = latestVersion();
    if (!requireService(t, 'the npm registry', version !== undefined, 'npm view failed; check the network'))
      return;
    const dir = mkdtempSync(join(tmpdir(), 'skep-npm-store-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const paths = {
      configDir: join(dir, 'c'),
      stateDir: join(dir, 's'),
      dataDir: join(dir, 'd'),
      cacheDir: join(dir, 'k'),
    };
    const runtime = new ProcessRuntime({
      logMaxBytes: 1 << 20,
      logFiles: 1,
      sandbox: { setting: 'bwrap', paths },
    });
    const entry = join(paths.cacheDir, 'npm-packages', storeKey(PACKAGE, version as string));
    // The server is given its own store entry as the folder to serve: the sandbox shows it
    // read-only, so a write there must fail however the server tries.
    const start = (name: string) =>
      runtime.start({
        name,
        image: `npx://${PACKAGE}`,
        args: [entry],
        env: {},
        transport: 'stdio',
        logFile: join(dir, `${name}.log`),
        permissionProfile: { network: { mode: 'none' } },
      });

    const first = await start('fs-one');
    t.after(() => first.stop());
    assert.ok(first.stdio);
    const one = stdioProbe(first.stdio);
    assert.match(await one.call('list_allowed_directories'), new RegExp(entry.replace(/[+.]/g, '\\$&')));
    const firstLog = readFileSync(join(dir, 'fs-one.log'), 'utf8');
    assert.match(firstLog, new RegExp(`npm store: installing ${PACKAGE}@${version}`));
    assert.match(firstLog, /sandboxed with bubblewrap \(network: none\)/);
    assert.ok(existsSync(join(entry, 'node_modules', PACKAGE, 'package.json')), 'the entry is in place');
    assert.deepEqual(
      readdirSync(join(paths.cacheDir, 'npm-packages')).filter((n) => n.startsWith('.')),
      [],
      'no staging folder is left',
    );
    assert.ok(!existsSync(join(entry, '.npm-cache')), 'the install’s npm cache is removed');

    const second = await start('fs-two');
    t.after(() => second.stop());
    assert.ok(second.stdio);
    const two = stdioProbe(second.stdio);
    const written = await two.call('write_file', { path: join(entry, 'planted.txt'), content: 'x' });
    assert.match(written, /EROFS|EACCES|read-only/i, written);
    assert.ok(!existsSync(join(entry, 'planted.txt')), 'nothing was written into the store entry');
    const secondLog = readFileSync(join(dir, 'fs-two.log'), 'utf8');
    assert.doesNotMatch(secondLog, /npm store: installing/, 'the second start installs nothing');
    assert.match(secondLog, new RegExp(`npm store: ${PACKAGE}@${version} is installed; no download`));

    for (const handle of [first, second]) {
      const tree = processTree(Number(handle.id));
      assert.ok(tree.length > 0, 'the sandbox has processes');
      assert.deepEqual(
        tree.filter((p) => isNpm(p.argv)),
        [],
        'no npm or npx process in the workload’s tree',
      );
      const server = tree.find((p) => p.argv.some((a) => a.startsWith(join(entry, 'node_modules'))));
      assert.ok(server, `the server runs its bin from the store: ${JSON.stringify(tree)}`);
      const path = readFileSync(`/proc/${server.pid}/environ`, 'utf8')
        .split('\0')
        .find((v) => v.startsWith('PATH='));
      assert.ok(path?.startsWith(`PATH=${join(entry, 'node_modules', '.bin')}:`), `as npx: ${path}`);
    }
    for (const name of ['fs-one', 'fs-two']) {
      const home = join(paths.dataDir, 'sandbox', name, 'home');
      assert.ok(!existsSync(join(home, '.npm')), `${name}'s home holds no npm cache`);
      assert.ok(duBytes(home) < 1 << 20, `${name}'s home stays small`);
    }
  },
);

test(
  'npx:// registry packages unsandboxed: the bin runs from the store, installed once',
  { timeout: 300_000 },
  async (t) => {
    const version = latestVersion();
    if (!requireService(t, 'the npm registry', version !== undefined, 'npm view failed; check the network'))
      return;
    const dir = mkdtempSync(join(tmpdir(), 'skep-npm-store-off-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const served = join(dir, 'served');
    mkdirSync(served);
    const paths = {
      configDir: join(dir, 'c'),
      stateDir: join(dir, 's'),
      dataDir: join(dir, 'd'),
      cacheDir: join(dir, 'k'),
    };
    const runtime = new ProcessRuntime({
      logMaxBytes: 1 << 20,
      logFiles: 1,
      sandbox: { setting: 'off', paths },
    });
    const handle = await runtime.start({
      name: 'fs-plain',
      image: `npx://${PACKAGE}@${version}`,
      args: [served],
      env: {},
      transport: 'stdio',
      logFile: join(dir, 'plain.log'),
    });
    t.after(() => handle.stop());
    assert.ok(handle.stdio);
    assert.match(
      await stdioProbe(handle.stdio).call('list_allowed_directories'),
      new RegExp(basename(served)),
    );
    const log = readFileSync(join(dir, 'plain.log'), 'utf8');
    assert.match(log, /not sandboxed/);
    assert.match(log, new RegExp(`npm store: installing ${PACKAGE}@${version}`));
    const argv = readFileSync(`/proc/${handle.id}/cmdline`, 'utf8').split('\0');
    assert.ok(!isNpm(argv), `the server process is not npm: ${argv.join(' ')}`);
    assert.ok(existsSync(join(paths.cacheDir, 'npm-packages', storeKey(PACKAGE, version as string))));
  },
);
