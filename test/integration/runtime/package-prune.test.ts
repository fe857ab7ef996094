/**
 * Pruning the package stores (`src/dataplane/runtime/package-refs.ts`) with real parts: npm
 * installs two packages (three versions) into the npm store from local tarballs made by
 * `npm pack` (no network), workloads are created through a real WorkloadManager (its runners
 * are not started), and `skep cache prune` runs as the real CLI. An entry a workload pins or
 * last ran stays; `skep rm` of the last workload using one removes it.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import {
  nodeToolsBeside,
  NpmStore,
  type NpmRunner,
  plainNpmRunner,
  registryDigest,
} from '../../../src/dataplane/runtime/npm-store.js';
import { recordPackageRef } from '../../../src/dataplane/runtime/package-refs.js';
import { COMPLETE_FILE } from '../../../src/dataplane/runtime/uv-store.js';
import { findExecutable } from '../../../src/shared/index.js';
import { runCli } from '../../helpers/cli.js';
import { tempHome } from '../../helpers/home.js';
import { inProcessManager } from '../workloads/helpers.js';

/** `npm pack` of a one-bin package `name@version` into `dir`; returns the tarball. */
function packFixture(dir: string, name: string, version: string): string {
  const src = join(dir, `${name}-${version}-src`);
  mkdirSync(src, { recursive: true });
  writeFileSync(join(src, 'package.json'), JSON.stringify({ name, version, bin: 'index.js' }));
  writeFileSync(join(src, 'index.js'), `#!/usr/bin/env node\nconsole.log(${JSON.stringify(version)});\n`);
  const file = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], {
    cwd: src,
    encoding: 'utf8',
    env: { ...process.env, npm_config_update_notifier: 'false' },
  }).trim();
  return join(dir, file);
}

/** The real npm, with `name@version` (the last argument of an install) read from its local tarball. */
function tarballRunner(tarballs: Map<string, string>): NpmRunner {
  const npx = findExecutable('npx', process.env);
  assert.ok(npx !== undefined, 'npx is on PATH');
  const env = Object.fromEntries(
    Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined),
  );
  const real = plainNpmRunner(nodeToolsBeside(npx).npm, { ...env, npm_config_offline: 'true' }, () => {});
  return (args, writable) => {
    const spec = args[args.length - 1] ?? '';
    const tarball = tarballs.get(spec);
    assert.ok(tarball !== undefined, `a tarball for ${spec}`);
    return real([...args.slice(0, -1), tarball], writable);
  };
}

function entries(root: string): string[] {
  try {
    return readdirSync(root)
      .filter((n) => !n.startsWith('.'))
      .sort();
  } catch {
    return [];
  }
}

test('skep cache prune and skep rm remove only the store entries no workload pins or last ran', async (t: TestContext) => {
  const home = tempHome(t, 'skep-prune-');
  const cacheDir = home.config.paths.cacheDir;
  const packs = mkdtempSync(join(tmpdir(), 'skep-prune-packs-'));
  t.after(() => rmSync(packs, { recursive: true, force: true }));
  const tarballs = new Map<string, string>();
  for (const [name, version] of [
    ['skep-prune-fixture', '1.0.0'],
    ['skep-prune-fixture', '2.0.0'],
    ['skep-prune-other', '1.0.0'],
  ] as const)
    tarballs.set(`${name}@${version}`, packFixture(packs, name, version));
  const run = tarballRunner(tarballs);
  const store = new NpmStore(cacheDir);
  for (const spec of tarballs.keys()) {
    const at = spec.lastIndexOf('@');
    const entry = await store.ensure(spec.slice(0, at), spec.slice(at + 1), run, () => {});
    assert.equal(entry.installed, true, `${spec} installed by npm`);
  }
  assert.deepEqual(entries(store.root), [
    'skep-prune-fixture@1.0.0',
    'skep-prune-fixture@2.0.0',
    'skep-prune-other@1.0.0',
  ]);
  // A uv entry nobody uses, as `uv-store.ts` leaves one (uv itself is not needed to prune it).
  const uvEntry = join(cacheDir, 'uv-packages', 'mcp-server-time==1.0.0');
  mkdirSync(join(uvEntry, 'bin'), { recursive: true });
  writeFileSync(join(uvEntry, COMPLETE_FILE), '');

  const { manager } = inProcessManager(t, home);
  // `pinned` names its version; `floating` ran skep-prune-other@1.0.0 (as its start records it).
  await manager.create({ name: 'pinned', image: 'npx://skep-prune-fixture@1.0.0' });
  await manager.create({ name: 'floating', image: 'npx://skep-prune-other' });
  recordPackageRef(cacheDir, 'floating', { store: 'npm', key: 'skep-prune-other@1.0.0' });
  // A record of a workload that no longer exists keeps nothing.
  recordPackageRef(cacheDir, 'gone', { store: 'npm', key: 'skep-prune-fixture@2.0.0' });

  const dry = runCli(['cache', 'prune', '--dry-run', '--json'], home.env);
  assert.equal(dry.status, 0, dry.stderr);
  const planned = JSON.parse(dry.stdout) as {
    dry_run: boolean;
    removed: unknown[];
    would_remove: { entry: string }[];
  };
  assert.equal(planned.dry_run, true);
  assert.deepEqual(planned.removed, []);
  assert.deepEqual(planned.would_remove.map((e) => e.entry).sort(), [
    'mcp-server-time==1.0.0',
    'skep-prune-fixture@2.0.0',
  ]);
  assert.equal(entries(store.root).length, 3, 'a dry run removes nothing');
  assert.ok(existsSync(uvEntry));

  const pruned = runCli(['cache', 'prune'], home.env);
  assert.equal(pruned.status, 0, pruned.stderr);
  assert.match(pruned.stdout, /removed 2 unused packages/);
  assert.deepEqual(entries(store.root), ['skep-prune-fixture@1.0.0', 'skep-prune-other@1.0.0']);
  assert.ok(!existsSync(uvEntry), 'the unused uv entry is gone');
  assert.ok(!existsSync(join(cacheDir, 'package-refs', 'gone.json')), 'a removed workload’s record is gone');
  assert.deepEqual(
    readdirSync(store.root).filter((n) => n.startsWith('.')),
    [],
    'nothing half-removed is left beside the entries',
  );

  // skep rm of the last workload using an entry removes it; the other workload's stays.
  await manager.deleteNow('pinned');
  assert.deepEqual(entries(store.root), ['skep-prune-other@1.0.0']);
  const again = runCli(['cache', 'prune'], home.env);
  assert.equal(again.status, 0, again.stderr);
  assert.match(again.stdout, /nothing to remove/);
  assert.deepEqual(entries(store.root), ['skep-prune-other@1.0.0'], 'the entry floating last ran stays');
  await manager.deleteNow('floating');
  assert.deepEqual(entries(store.root), []);
  assert.deepEqual(readdirSync(join(cacheDir, 'package-refs')), []);
});

test('a workload of a package that has no record yet keeps every installed version of it', async (t: TestContext) => {
  const home = tempHome(t, 'skep-prune-');
  const cacheDir = home.config.paths.cacheDir;
  const root = join(cacheDir, 'npm-packages');
  for (const key of ['skep-prune-fixture@1.0.0', 'skep-prune-fixture@2.0.0', 'skep-prune-other@1.0.0'])
    mkdirSync(join(root, key, 'node_modules'), { recursive: true });
  const { prunePackageStores } = await import('../../../src/dataplane/runtime/package-refs.js');
  const users = [{ name: 'new', image: 'npx://skep-prune-fixture@latest' }];
  const planned = prunePackageStores(cacheDir, users, { dryRun: true });
  assert.deepEqual(
    planned.map((e) => e.key),
    ['skep-prune-other@1.0.0'],
  );
  // The same package from another registry is another entry: a workload of the default one keeps none of it.
  const other = registryDigest({ npm_config_registry: 'https://npm.example/' });
  mkdirSync(join(root, `skep-prune-fixture@2.0.0~${other}`, 'node_modules'), { recursive: true });
  assert.deepEqual(
    prunePackageStores(cacheDir, users, { dryRun: true }).map((e) => e.key),
    [`skep-prune-fixture@2.0.0~${other}`, 'skep-prune-other@1.0.0'],
  );
  recordPackageRef(cacheDir, 'new', { store: 'npm', key: 'skep-prune-fixture@2.0.0' });
  const removed = prunePackageStores(cacheDir, users);
  assert.deepEqual(removed.map((e) => e.key).sort(), [
    'skep-prune-fixture@1.0.0',
    `skep-prune-fixture@2.0.0~${other}`,
    'skep-prune-other@1.0.0',
  ]);
  assert.deepEqual(entries(root), ['skep-prune-fixture@2.0.0']);
});
