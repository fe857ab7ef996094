/**
 * The uv store (`src/dataplane/runtime/uv-store.ts`). uv is not installed on the machines
 * this project tests on (its registry is not reachable), so the installs here run a stand-in
 * `uv` program through the store's real runner: a shell script that does what `uv tool
 * install` and `uv pip compile` leave behind (a tool environment whose `bin/python` is the
 * machine's python3, an entry point in UV_TOOL_BIN_DIR, a pinned requirement) and logs how it
 * was called. What is tested is the store: keys, locking, completion, what uv is asked.
 */
import assert from 'node:assert/strict';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import {
  COMPLETE_FILE,
  compareUvVersions,
  indexDigest,
  normalizeName,
  parseUvSpec,
  parseUvStoreKey,
  plainUvRunner,
  selectScript,
  UvStore,
  uvStoreKey,
} from '../../../src/dataplane/runtime/uv-store.js';
import { isSkepError } from '../../../src/shared/index.js';

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'skep-uv-store-unit-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('specs: a name, or a name at an exact version; everything else stays with uvx', () => {
  assert.deepEqual(parseUvSpec('mcp-server-fetch'), { name: 'mcp-server-fetch' });
  assert.deepEqual(parseUvSpec('mcp-server-fetch@2025.4.7'), {
    name: 'mcp-server-fetch',
    version: '2025.4.7',
  });
  assert.deepEqual(parseUvSpec('Pkg_Name@1.0.0rc1'), { name: 'Pkg_Name', version: '1.0.0rc1' });
  for (const spec of [
    'pkg@latest',
    'pkg@>=1',
    'pkg[extra]',
    'git+https://x/y',
    './local',
    '/abs',
    'pkg@',
    '-x',
    'a b',
  ])
    assert.equal(parseUvSpec(spec), undefined, spec);
});

test('keys: the normalized name and version; a workload index adds its digest, so indexes never share an entry', () => {
  assert.equal(normalizeName('Mcp_Server..Fetch'), 'mcp-server-fetch');
  assert.equal(uvStoreKey('Mcp_Server.Fetch', '1.2.3'), 'mcp-server-fetch==1.2.3');
  assert.equal(indexDigest({}), '');
  assert.equal(indexDigest({ UV_INDEX_URL: '' }), '');
  const a = indexDigest({ UV_INDEX_URL: 'https://a.example/simple' });
  const b = indexDigest({ UV_INDEX_URL: 'https://b.example/simple' });
  assert.match(a, /^[0-9a-f]{12}$/);
  assert.notEqual(a, b);
  assert.match(indexDigest({ UV_PYTHON: '3.12' }), /^[0-9a-f]{12}$/, 'another Python is another entry');
  assert.equal(indexDigest({ UV_NATIVE_TLS: '1' }), '', 'how uv downloads does not change the entry');
  assert.equal(
    indexDigest({ UV_INDEX_URL: 'https://a.example/simple', HOME: '/x' }),
    a,
    'other variables do not count',
  );
  const key = uvStoreKey('pkg', '1.0.0', a);
  assert.equal(key, `pkg==1.0.0~${a}`);
  assert.deepEqual(parseUvStoreKey(key), { name: 'pkg', version: '1.0.0', digest: a });
  assert.deepEqual(parseUvStoreKey('pkg==1.0.0'), { name: 'pkg', version: '1.0.0', digest: '' });
  for (const bad of ['pkg@1.0.0', '.lock-pkg==1.0.0', 'Pkg==1.0.0', 'pkg==latest', 'pkg==1.0.0~zz'])
    assert.equal(parseUvStoreKey(bad), undefined, bad);
  assert.throws(
    () => uvStoreKey('pkg', 'latest'),
    (err) => isSkepError(err) && err.code === 'invalid_reference',
  );
});

test('versions order by release number; a final release ranks above its pre-release', () => {
  assert.equal(compareUvVersions('1.10.0', '1.9.0'), 1);
  assert.equal(compareUvVersions('1.0', '1.0.0'), 0);
  assert.equal(compareUvVersions('1.0.0', '1.0.0rc1'), 1);
  assert.equal(compareUvVersions('1.0.0a1', '1.0.0b1'), -1);
});

test('entry point: the one named like the package, else the only one, else refused with the list', () => {
  assert.equal(selectScript('mcp-server-time', ['mcp-server-time', 'helper']), 'mcp-server-time');
  assert.equal(selectScript('Mcp_Server_Time', ['mcp-server-time', 'helper']), 'mcp-server-time');
  assert.equal(selectScript('pkg', ['only']), 'only');
  assert.throws(
    () => selectScript('pkg', ['a', 'b']),
    (err) =>
      isSkepError(err) &&
      err.code === 'package_not_runnable' &&
      /several entry points \(a, b\)/.test(err.message),
  );
  assert.throws(
    () => selectScript('pkg', []),
    (err) => isSkepError(err) && /no entry point/.test(err.message),
  );
});

/**
 * The stand-in uv: `tool install … <name>==<version>` waits for `$dir/gate` (when it exists),
 * then writes the tool environment; `pip compile requirements.in` pins the name at 3.1.4.
 * Every call (its arguments and uv variables) is appended to `$dir/calls`.
 */
function standInUv(dir: string): string {
  const file = join(dir, 'uv');
  writeFileSync(
    file,
    `#!/bin/sh
set -e
echo "$* | UV_INDEX_URL=\${UV_INDEX_URL:-} UV_SECRET_OF_SKEP=\${UV_SECRET_OF_SKEP:-}" >> "${dir}/calls"
if [ "$1" = tool ]; then
  while [ -e "${dir}/gate" ]; do sleep 0.05; done
  for last; do :; done
  case "$last" in fail==*) echo "error: no wheel for $last" >&2; exit 2 ;; esac
  name=\${last%%==*}
  mkdir -p "$UV_TOOL_DIR/$name/bin" "$UV_TOOL_BIN_DIR" "$UV_CACHE_DIR"
  ln -s "$(command -v python3)" "$UV_TOOL_DIR/$name/bin/python"
  printf '#!%s\\nprint("hello")\\n' "$UV_TOOL_DIR/$name/bin/python" > "$UV_TOOL_DIR/$name/bin/$name"
  chmod +x "$UV_TOOL_DIR/$name/bin/$name"
  ln -s "$UV_TOOL_DIR/$name/bin/$name" "$UV_TOOL_BIN_DIR/$name"
  exit 0
fi
if [ "$1" = pip ]; then
  read name < requirements.in
  echo "$name==3.1.4"
  echo "anyio==4.0.0"
  exit 0
fi
exit 1
`,
  );
  chmodSync(file, 0o755);
  return file;
}

function calls(dir: string): string[] {
  try {
    return readFileSync(join(dir, 'calls'), 'utf8').trim().split('\n');
  } catch {
    return [];
  }
}

test('two concurrent starts of one version: one installs under the lock, the other waits and uses it', async (t) => {
  const dir = tempDir(t);
  const uv = standInUv(dir);
  writeFileSync(join(dir, 'gate'), '');
  const lines: string[] = [];
  const run = plainUvRunner(
    uv,
    { ...process.env, UV_SECRET_OF_SKEP: 'x' },
    { UV_INDEX_URL: 'https://idx.example/simple' },
    (l) => lines.push(l),
  );
  const cache = join(dir, 'cache');
  const digest = indexDigest({ UV_INDEX_URL: 'https://idx.example/simple' });
  const options = { wheelsOnly: true, digest };
  const a = new UvStore(cache).ensure('mcp-server-time', '1.0.0', run, (l) => lines.push(l), options);
  const b = new UvStore(cache).ensure('mcp-server-time', '1.0.0', run, (l) => lines.push(l), options);
  // Both have started: one holds the lock and runs uv (held at the gate), the other waits.
  while (!lines.some((l) => /waiting for it/.test(l)) || calls(dir).length === 0)
    await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(calls(dir).length, 1, 'only the lock holder runs uv');
  rmSync(join(dir, 'gate'));
  const [x, y] = await Promise.all([a, b]);
  assert.deepEqual([x.installed, y.installed].sort(), [false, true]);
  assert.equal(x.file, y.file);
  assert.equal(x.bin, 'mcp-server-time');
  assert.equal(x.dir, join(cache, 'uv-packages', `mcp-server-time==1.0.0~${digest}`));
  assert.ok(existsSync(join(x.dir, COMPLETE_FILE)));
  assert.deepEqual(
    readdirSync(join(cache, 'uv-packages')),
    [`mcp-server-time==1.0.0~${digest}`],
    'no lock or uv cache is left',
  );
  const [call] = calls(dir);
  assert.match(call ?? '', /^tool install --no-config --no-build mcp-server-time==1\.0\.0 \| /);
  assert.match(call ?? '', /UV_INDEX_URL=https:\/\/idx\.example\/simple /, 'the workload’s index reaches uv');
  assert.match(call ?? '', /UV_SECRET_OF_SKEP=$/, 'Skep’s own UV_ variables do not');
  assert.ok(lines.some((l) => /installed by another start meanwhile/.test(l)));
  // A third start finds the entry: uv is not run.
  const third = await new UvStore(cache).ensure('mcp-server-time', '1.0.0', run, () => {}, options);
  assert.equal(third.installed, false);
  assert.equal(calls(dir).length, 1);
});

test('a lock left by a start that died is taken over and its half-made entry replaced; a failed install leaves nothing', async (t) => {
  const dir = tempDir(t);
  const run = plainUvRunner(standInUv(dir), process.env, {}, () => {});
  const cache = join(dir, 'cache');
  const root = join(cache, 'uv-packages');
  mkdirSync(join(root, '.lock-pkg==2.0.0'), { recursive: true });
  writeFileSync(join(root, '.lock-pkg==2.0.0', 'pid'), '99999999');
  mkdirSync(join(root, 'pkg==2.0.0', 'half'), { recursive: true });
  const entry = await new UvStore(cache).ensure('pkg', '2.0.0', run, () => {}, {
    wheelsOnly: false,
    digest: '',
  });
  assert.equal(entry.installed, true);
  assert.deepEqual(readdirSync(entry.dir).sort(), [COMPLETE_FILE, 'bin', 'tools']);
  assert.doesNotMatch(calls(dir)[0] ?? '', /--no-build/, 'an unsandboxed server’s package may be built');
  await assert.rejects(
    new UvStore(cache).ensure('fail', '1.0.0', run, () => {}, { wheelsOnly: true, digest: '' }),
    (err) => isSkepError(err) && err.code === 'bad_gateway' && /no wheel for fail==1\.0\.0/.test(err.message),
  );
  assert.deepEqual(readdirSync(root), ['pkg==2.0.0']);
});

test('resolve: a pin needs no uv; a bare name runs the newest complete entry, else uv pip compile pins it', async (t) => {
  const dir = tempDir(t);
  const run = plainUvRunner(standInUv(dir), process.env, {}, () => {});
  const store = new UvStore(join(dir, 'cache'));
  const lines: string[] = [];
  assert.equal(await store.resolve({ name: 'pkg', version: '1.0.0' }, run, () => {}), '1.0.0');
  assert.equal(await store.resolve({ name: 'Pkg' }, run, () => {}), '3.1.4');
  assert.equal(calls(dir).length, 1);
  assert.match(calls(dir)[0] ?? '', /^pip compile requirements\.in /);
  for (const v of ['1.9.0', '1.10.0']) {
    mkdirSync(join(store.root, `pkg==${v}`), { recursive: true });
    writeFileSync(join(store.root, `pkg==${v}`, COMPLETE_FILE), '');
  }
  mkdirSync(join(store.root, 'pkg==9.0.0'), { recursive: true }); // unfinished: not used
  assert.equal(await store.resolve({ name: 'pkg' }, run, (l) => lines.push(l)), '1.10.0');
  assert.equal(calls(dir).length, 1, 'no uv run');
  assert.ok(lines.some((l) => /installed at 1\.10\.0/.test(l)));
  assert.equal(store.installedVersions('pkg', 'abcdefabcdef').length, 0, 'another index has none');
});
