import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import {
  commitStaging,
  compareVersions,
  isExactVersion,
  isTag,
  NpmStore,
  type NpmRunner,
  parseRegistrySpec,
  parseStoreKey,
  registryDigest,
  selectBin,
  storeKey,
  versionsIn,
} from '../../../src/dataplane/runtime/npm-store.js';
import { bwrapArgs } from '../../../src/dataplane/runtime/sandbox/bwrap-args.js';
import { isSkepError } from '../../../src/shared/index.js';

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'skep-npm-store-unit-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('registry specs: name, name@version|range|tag, @scope/name@…; everything else stays with npx', () => {
  assert.deepEqual(parseRegistrySpec('cowsay'), { name: 'cowsay', range: 'latest' });
  assert.deepEqual(parseRegistrySpec('cowsay@1.6.0'), { name: 'cowsay', range: '1.6.0' });
  assert.deepEqual(parseRegistrySpec('cowsay@^1'), { name: 'cowsay', range: '^1' });
  assert.deepEqual(parseRegistrySpec('cowsay@next'), { name: 'cowsay', range: 'next' });
  assert.deepEqual(parseRegistrySpec('@modelcontextprotocol/server-everything'), {
    name: '@modelcontextprotocol/server-everything',
    range: 'latest',
  });
  assert.deepEqual(parseRegistrySpec('@scope/pkg@>=1.2.0<2'), { name: '@scope/pkg', range: '>=1.2.0<2' });
  for (const other of [
    'file:/tmp/pkg.tgz',
    'file:../pkg',
    'git+https://github.com/a/b.git',
    'github:a/b',
    'a/b',
    'https://example.test/pkg.tgz',
    'alias@npm:pkg@1',
    './pkg',
    '/abs/pkg',
    '~/pkg',
    '@scope',
    '@scope/',
    '@scope/a/b',
    '.hidden',
    '_under',
    'pkg@',
    '../../etc',
  ]) {
    assert.equal(parseRegistrySpec(other), undefined, other);
  }
});

test('exact versions need no lookup; versions order by SemVer precedence', () => {
  assert.ok(isExactVersion('1.2.3'));
  assert.ok(isExactVersion('2025.8.21'));
  assert.ok(isExactVersion('1.0.0-rc.1+build.5'));
  for (const range of ['latest', '^1', '1.x', '1', '1.2', '>=1.0.0', '1.2.3 || 2'])
    assert.ok(!isExactVersion(range), range);
  const sorted = [
    '1.0.0',
    '1.0.0-alpha',
    '1.0.0-alpha.1',
    '1.0.0-beta',
    '1.0.0-alpha.beta',
    '1.0.0-rc.1',
    '0.9.10',
    '1.0.0-beta.11',
    '1.0.0-beta.2',
    '10.0.0',
    '2.0.0',
  ].sort(compareVersions);
  assert.deepEqual(sorted, [
    '0.9.10',
    '1.0.0-alpha',
    '1.0.0-alpha.1',
    '1.0.0-alpha.beta',
    '1.0.0-beta',
    '1.0.0-beta.2',
    '1.0.0-beta.11',
    '1.0.0-rc.1',
    '1.0.0',
    '2.0.0',
    '10.0.0',
  ]);
  assert.deepEqual(versionsIn('{"name":"a","version":"1.2.3"}'), ['1.2.3']);
  assert.deepEqual(versionsIn('[{"name":"a","version":"1.0.0"},{"name":"a","version":"1.1.0"}]'), [
    '1.0.0',
    '1.1.0',
  ]);
  assert.deepEqual(versionsIn('"1.2.3"'), ['1.2.3']);
  assert.deepEqual(versionsIn('not json'), []);
});

test('store keys: a scope is encoded with a character no name holds, and read back; nothing else is accepted', () => {
  assert.equal(storeKey('cowsay', '1.6.0'), 'cowsay@1.6.0');
  assert.equal(storeKey('@scope/pkg', '1.0.0-rc.1'), '@scope+pkg@1.0.0-rc.1');
  assert.deepEqual(parseStoreKey('@scope+pkg@1.0.0-rc.1'), { name: '@scope/pkg', version: '1.0.0-rc.1' });
  assert.deepEqual(parseStoreKey('cowsay@1.6.0'), { name: 'cowsay', version: '1.6.0' });
  for (const key of ['.staging-cowsay@1.6.0-1-ab', 'cowsay@latest', 'cowsay', '@scope+pkg', 'a+b@1.0.0'])
    assert.equal(parseStoreKey(key), undefined, key);
  for (const [name, version] of [
    ['../etc', '1.0.0'],
    ['pkg', '../../1.0.0'],
    ['@a/b/c', '1.0.0'],
    ['pkg', 'latest'],
    ['pkg', '1.0.0/x'],
  ] as const) {
    assert.throws(
      () => storeKey(name, version),
      (err: unknown) => isSkepError(err) && err.code === 'invalid_reference',
      `${name}@${version}`,
    );
  }
});

test('bin selection as npx: the only bin, else the one named like the package, else refused with the list', () => {
  assert.deepEqual(selectBin('@scope/server-x', 'dist/index.js'), { bin: 'server-x', file: 'dist/index.js' });
  assert.deepEqual(selectBin('pkg', { other: 'cli.js' }), { bin: 'other', file: 'cli.js' });
  // Two names for one file count as one bin.
  assert.deepEqual(selectBin('pkg', { a: 'cli.js', b: 'cli.js' }), { bin: 'a', file: 'cli.js' });
  assert.deepEqual(selectBin('@s/pkg', { tool: 't.js', pkg: 'p.js' }), { bin: 'pkg', file: 'p.js' });
  assert.throws(
    () => selectBin('@s/pkg', { a: 'a.js', b: 'b.js' }),
    (err: unknown) =>
      isSkepError(err) &&
      err.code === 'package_not_runnable' &&
      /the package @s\/pkg has several bins \(a, b\) and none is named pkg/.test(err.message),
  );
  assert.throws(
    () => selectBin('pkg', undefined),
    (err: unknown) =>
      isSkepError(err) &&
      err.code === 'package_not_runnable' &&
      /the package pkg has no bin to run/.test(err.message),
  );
});

/** A fake npm: `install --prefix <staging> … <name>@<version>` writes the package's manifest and a cache. */
function fakeInstall(gate: Promise<void>, calls: string[][]): NpmRunner {
  return async (args, writable) => {
    calls.push(args);
    await gate;
    const prefix = args[args.indexOf('--prefix') + 1] as string;
    const spec = args[args.length - 1] as string;
    const at = spec.lastIndexOf('@');
    const name = spec.slice(0, at);
    mkdirSync(join(prefix, 'node_modules', name), { recursive: true });
    writeFileSync(
      join(prefix, 'node_modules', name, 'package.json'),
      JSON.stringify({ name, version: spec.slice(at + 1), bin: 'index.js' }),
    );
    writeFileSync(join(prefix, 'node_modules', name, 'index.js'), '#!/usr/bin/env node\n');
    mkdirSync(join(writable, '.npm-cache'), { recursive: true });
    return { code: 0, stdout: '', stderr: '' };
  };
}

test('two concurrent installs of one version: both start, one install is kept, the other staging folder is removed', async (t) => {
  const dir = tempDir(t);
  let open = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const calls: string[][] = [];
  const run = fakeInstall(gate, calls);
  const lines: string[] = [];
  const a = new NpmStore(dir).ensure('@scope/pkg', '1.0.0', run, (l) => lines.push(l));
  const b = new NpmStore(dir).ensure('@scope/pkg', '1.0.0', run, (l) => lines.push(l));
  // Both are installing (each in its own staging folder) before either finishes.
  while (calls.length < 2) await new Promise((resolve) => setImmediate(resolve));
  const staging = readdirSync(join(dir, 'npm-packages')).filter((n) => n.startsWith('.staging-'));
  assert.equal(staging.length, 2, 'two staging folders');
  open();
  const [x, y] = await Promise.all([a, b]);
  assert.deepEqual([x.installed, y.installed].sort(), [false, true], 'one install wins');
  assert.equal(x.dir, y.dir);
  assert.equal(x.bin, 'pkg');
  assert.deepEqual(readdirSync(join(dir, 'npm-packages')), ['@scope+pkg@1.0.0'], 'no staging folder is left');
  assert.deepEqual(readdirSync(x.dir).sort(), ['node_modules'], 'the install’s cache and home are removed');
  assert.ok(lines.some((l) => /installed by another start meanwhile/.test(l)));
  for (const args of calls) {
    assert.deepEqual(args.slice(0, 1), ['install']);
    assert.ok(args.includes('--no-audit') && args.includes('--no-fund'));
  }
  // A third start finds the entry: no install.
  const third = await new NpmStore(dir).ensure('@scope/pkg', '1.0.0', run, (l) => lines.push(l));
  assert.equal(third.installed, false);
  assert.equal(calls.length, 2, 'nothing installed again');
});

test('commitStaging: the rename onto an existing entry fails and reports the loser', (t) => {
  const dir = tempDir(t);
  mkdirSync(join(dir, 'entry', 'node_modules'), { recursive: true });
  mkdirSync(join(dir, 'staging', 'node_modules'), { recursive: true });
  assert.equal(commitStaging(join(dir, 'staging'), join(dir, 'entry')), false);
  mkdirSync(join(dir, 'staging2', 'node_modules'), { recursive: true });
  assert.equal(commitStaging(join(dir, 'staging2'), join(dir, 'fresh')), true);
});

test('resolve: an exact version needs no registry; the registry unreachable falls back to the newest installed, and says so', async (t) => {
  const dir = tempDir(t);
  const store = new NpmStore(dir);
  let views = 0;
  const offline: NpmRunner = async () => {
    views++;
    return { code: 1, stdout: '', stderr: 'npm error code ENOTFOUND\nnpm error network request failed' };
  };
  assert.equal(await store.resolve({ name: 'pkg', range: '1.2.3' }, offline, () => {}), '1.2.3');
  assert.equal(views, 0);
  await assert.rejects(
    store.resolve({ name: 'pkg', range: 'latest' }, offline, () => {}),
    /cannot resolve npx:\/\/pkg@latest: npm error code ENOTFOUND \| npm error network request failed/,
  );
  for (const v of ['1.9.0', '1.10.0', '2.0.0-rc.1'])
    mkdirSync(join(store.root, storeKey('pkg', v)), { recursive: true });
  mkdirSync(join(store.root, storeKey('pkg-other', '9.0.0')));
  const lines: string[] = [];
  assert.equal(
    await store.resolve({ name: 'pkg', range: 'latest' }, offline, (l) => lines.push(l)),
    '2.0.0-rc.1',
  );
  assert.match(
    lines.join('\n'),
    /cannot resolve pkg@latest .*; using pkg@2\.0\.0-rc\.1, the newest installed/,
  );
  const asked: string[][] = [];
  const online: NpmRunner = async (args) => {
    asked.push(args);
    return {
      code: 0,
      stdout: '[{"name":"pkg","version":"1.9.0"},{"name":"pkg","version":"1.10.0"}]',
      stderr: '',
    };
  };
  assert.equal(await store.resolve({ name: 'pkg', range: '^1' }, online, () => {}), '1.10.0');
  assert.equal(await store.resolve({ name: 'pkg', range: 'latest' }, online, () => {}), '1.10.0');
  assert.deepEqual(asked, [
    ['view', 'pkg@^1', 'name', 'version', '--json'],
    ['view', 'pkg', 'name', 'version', '--json'],
  ]);
  assert.deepEqual(
    readdirSync(store.root).filter((n) => n.startsWith('.')),
    [],
    'npm’s scratch folders are removed',
  );
});

test('bwrap: a store entry is bound read-only after every folder is hidden again, so no rehide covers it', () => {
  const entry = '/home/u/.cache/skep/npm-packages/pkg@1.0.0';
  const args = bwrapArgs(
    {
      hide: ['/home', '/tmp'],
      home: { src: '/home/u/.local/share/skep/sandbox/w/home', dest: '/home/u' },
      programs: [],
      readOnly: [{ src: '/home/u', dest: '/home/u' }],
      readWrite: [],
      rehide: ['/home/u/.cache/skep'],
      cover: [],
      shareNetwork: false,
      store: [{ mount: { src: entry, dest: entry }, writable: false }],
    },
    '/usr/bin/node',
    [`${entry}/node_modules/pkg/index.js`],
  );
  const rehide = args.indexOf('/home/u/.cache/skep');
  const bind = args.indexOf(entry);
  assert.ok(rehide > 0 && bind > rehide, args.join(' '));
  assert.equal(args[bind - 1], '--ro-bind');
  assert.equal(args[bind + 1], entry);
  const staging = bwrapArgs(
    {
      hide: ['/home'],
      home: { src: `${entry}.staging/home`, dest: '/home/u' },
      programs: [],
      readOnly: [],
      readWrite: [],
      rehide: [],
      cover: [],
      shareNetwork: false,
      store: [{ mount: { src: `${entry}.staging`, dest: `${entry}.staging` }, writable: true }],
    },
    'npm',
    ['install'],
  );
  assert.equal(staging[staging.indexOf(`${entry}.staging`) - 1], '--bind');
});

test('sweep: scratch and staging folders of a process that is gone are removed; live ones and entries stay', async (t) => {
  const dir = tempDir(t);
  const store = new NpmStore(dir);
  // A pid that is surely gone: a child that has exited.
  const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
    encoding: 'utf8',
  });
  const dead = Number(gone.stdout);
  const names = [
    `.staging-pkg@1.0.0-${dead}-abcdef`,
    `.view-${dead}-012345`,
    `.staging-pkg@1.0.0-${process.pid}-abcdef`,
    `.view-${process.pid}-012345`,
    'pkg@1.0.0',
  ];
  for (const name of names) mkdirSync(join(store.root, name), { recursive: true });
  store.sweep();
  assert.deepEqual(readdirSync(store.root).sort(), names.slice(2).sort());
});

test('resolve: a tag is answered by the registry lookup when given (npm not run); a range, or no answer, asks npm', async (t) => {
  const store = new NpmStore(tempDir(t));
  const asked: string[][] = [];
  const npm: NpmRunner = async (args) => {
    asked.push(args);
    return { code: 0, stdout: '{"name":"pkg","version":"1.0.0"}', stderr: '' };
  };
  const tags = async (name: string, tag: string) =>
    name === 'pkg' && tag === 'latest' ? '2.0.0' : undefined;
  assert.equal(await store.resolve({ name: 'pkg', range: 'latest' }, npm, () => {}, tags), '2.0.0');
  assert.deepEqual(asked, []);
  assert.equal(await store.resolve({ name: 'pkg', range: 'next' }, npm, () => {}, tags), '1.0.0');
  assert.equal(await store.resolve({ name: 'pkg', range: '^1' }, npm, () => {}, tags), '1.0.0');
  const failing = async (): Promise<string | undefined> => {
    throw new Error('ECONNREFUSED');
  };
  assert.equal(await store.resolve({ name: 'pkg', range: 'latest' }, npm, () => {}, failing), '1.0.0');
  assert.equal(asked.length, 3);
  for (const tag of ['latest', 'next', 'beta-2']) assert.ok(isTag(tag), tag);
  for (const range of ['^1', '1.x', 'x', '*', '>=1', '1.2.3']) assert.ok(!isTag(range), range);
});

test('a workload that names its own registry gets entries of its own: the key carries the registry settings’ digest', () => {
  assert.equal(registryDigest({}), '');
  assert.equal(registryDigest({ npm_config_registry: '' }), '');
  assert.equal(registryDigest({ npm_config_fund: 'false', HOME: '/x' }), '', 'other settings do not count');
  const own = registryDigest({ npm_config_registry: 'https://npm.example/' });
  const scoped = registryDigest({ 'npm_config_@corp:registry': 'https://npm.example/' });
  const userconfig = registryDigest({ NPM_CONFIG_USERCONFIG: '/etc/other-npmrc' });
  for (const d of [own, scoped, userconfig]) assert.match(d, /^[0-9a-f]{12}$/);
  assert.equal(new Set([own, scoped, userconfig]).size, 3);
  const key = storeKey('@scope/pkg', '1.0.0', own);
  assert.equal(key, `@scope+pkg@1.0.0~${own}`);
  assert.deepEqual(parseStoreKey(key), { name: '@scope/pkg', version: '1.0.0', digest: own });
  assert.equal(parseStoreKey('pkg@1.0.0~nothex'), undefined);
  const store = new NpmStore('/nonexistent');
  assert.notEqual(store.entryDir('pkg', '1.0.0', own), store.entryDir('pkg', '1.0.0'));
});
