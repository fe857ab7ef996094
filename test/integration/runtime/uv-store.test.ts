/**
 * `uvx://` packages through the uv store (`src/dataplane/runtime/uv-store.ts`) in the process
 * runtime, sandboxed with bubblewrap. uv cannot be installed on the machines this project
 * tests on (its registry is not reachable), so the `uv` beside `uvx` is a stand-in shell
 * script that leaves what `uv tool install` leaves: a tool environment whose `bin/python`
 * is the machine's /usr/bin/python3, and an entry point (a small stdio MCP server in Python)
 * in UV_TOOL_BIN_DIR. `uvx` is a script that fails loudly: it must never run. Everything
 * else is real: two workloads start the entry point directly, it is installed once, and the
 * sandbox shows the entry read-only, so a server cannot change another workload's package.
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
import { ProcessRuntime, probeBwrap } from '../../../src/dataplane/runtime/index.js';
import { requireService } from '../../helpers/services.js';
import { stdioProbe } from './probe.js';

const PYTHON = '/usr/bin/python3';

/** A stdio MCP server with one tool, `write`, that tries to write `path` and says what happened. */
const SERVER = `
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "uv-fixture", "version": "1.0.0"}}
    elif msg["method"] == "tools/call":
        path = msg["params"]["arguments"]["path"]
        try:
            with open(path, "w") as f:
                f.write("planted")
            text = "written"
        except OSError as err:
            text = "refused: " + err.strerror
        result = {"content": [{"type": "text", "text": text + " by " + sys.executable}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\\n")
    sys.stdout.flush()
`;

function standIns(dir: string): string {
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(dir, 'server.py'), SERVER);
  writeFileSync(
    join(bin, 'uv'),
    `#!/bin/sh
set -e
echo "$*" >> "${dir}/uv-calls"
[ "$1" = tool ] || exit 1
for last; do :; done
name=\${last%%==*}
# A package with only a source distribution: no install with --no-build; uvx's own install
# in the sandbox (into uv's folders in the workload's home: no UV_TOOL_DIR) succeeds.
case "$name" in sdist-*) case " $* " in *" --no-build "*) echo "error: $last has no wheel, and building is disabled" >&2; exit 2 ;; esac ;; esac
[ -n "\${UV_TOOL_DIR:-}" ] || exit 0
mkdir -p "$UV_TOOL_DIR/$name/bin" "$UV_TOOL_BIN_DIR"
ln -s ${PYTHON} "$UV_TOOL_DIR/$name/bin/python"
{ echo "#!$UV_TOOL_DIR/$name/bin/python"; cat "${dir}/server.py"; } > "$UV_TOOL_DIR/$name/bin/$name"
chmod +x "$UV_TOOL_DIR/$name/bin/$name"
ln -s "$UV_TOOL_DIR/$name/bin/$name" "$UV_TOOL_BIN_DIR/$name"
echo "Installed 1 executable: $name" >&2
`,
  );
  writeFileSync(join(bin, 'uvx'), `#!/bin/sh\necho "uvx ran: $*" >&2\nexit 3\n`);
  chmodSync(join(bin, 'uv'), 0o755);
  chmodSync(join(bin, 'uvx'), 0o755);
  return bin;
}

test('uvx:// packages: installed once into the uv store, the entry point run directly and read-only in each sandbox', async (t: TestContext) => {
  const probe = probeBwrap('bwrap');
  if (!requireService(t, 'bubblewrap', probe.ok, `${probe.ok ? '' : probe.reason}; apt install bubblewrap`))
    return;
  if (!requireService(t, PYTHON, existsSync(PYTHON), 'apt install python3')) return;
  const dir = mkdtempSync(join(tmpdir(), 'skep-uv-store-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const bin = standIns(dir);
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
  const entry = join(paths.cacheDir, 'uv-packages', 'uv-fixture==1.0.0');
  const progress: string[] = [];
  const start = (name: string) =>
    runtime.start({
      name,
      onProgress: (message) => progress.push(`${name}: ${message}`),
      image: 'uvx://uv-fixture@1.0.0',
      args: [],
      env: { PATH: `${bin}:/usr/bin:/bin` },
      transport: 'stdio',
      logFile: join(dir, `${name}.log`),
      permissionProfile: { network: { mode: 'none' } },
    });

  const first = await start('uv-one');
  t.after(() => first.stop());
  assert.ok(first.stdio);
  const one = stdioProbe(first.stdio);
  const inHome = await one.call('write', { path: '/tmp/x' });
  assert.match(
    inHome,
    /by .*uv-fixture==1\.0\.0\/tools\/uv-fixture\/bin\/python/,
    'the entry’s Python runs it',
  );
  const firstLog = readFileSync(join(dir, 'uv-one.log'), 'utf8');
  assert.match(firstLog, /uv store: installing uv-fixture==1\.0\.0/);
  assert.match(firstLog, /Installed 1 executable: uv-fixture/, 'what uv prints is in the log');
  assert.match(
    firstLog,
    /running uv-fixture==1\.0\.0's entry point uv-fixture directly from the package store/,
  );
  assert.match(firstLog, /sandboxed with bubblewrap \(network: none\)/);
  assert.doesNotMatch(firstLog, /uvx ran/);

  const second = await start('uv-two');
  t.after(() => second.stop());
  assert.ok(second.stdio);
  const two = stdioProbe(second.stdio);
  const planted = await two.call('write', { path: join(entry, 'bin', 'uv-fixture') });
  assert.match(planted, /^refused: Read-only file system/, planted);
  const secondLog = readFileSync(join(dir, 'uv-two.log'), 'utf8');
  assert.match(secondLog, /uv-fixture==1\.0\.0 is installed; no download/);
  assert.doesNotMatch(secondLog, /uvx ran/);
  assert.equal(readFileSync(join(dir, 'uv-calls'), 'utf8').trim().split('\n').length, 1, 'uv ran once');
  assert.match(
    readFileSync(join(dir, 'uv-calls'), 'utf8'),
    /^tool install --no-config --no-build uv-fixture==1\.0\.0$/m,
  );
  assert.ok(
    readFileSync(join(entry, 'bin', 'uv-fixture'), 'utf8').endsWith(SERVER),
    'the entry point is unchanged',
  );
  assert.deepEqual(
    readdirSync(join(paths.cacheDir, 'uv-packages')),
    ['uv-fixture==1.0.0'],
    'no lock or uv cache is left',
  );
  assert.deepEqual(
    progress,
    ['uv-one: uv store: installing uv-fixture==1.0.0'],
    'the install shows in the status',
  );
  const ref = JSON.parse(
    readFileSync(join(paths.cacheDir, 'package-refs', 'uv-two.json'), 'utf8'),
  ) as unknown;
  assert.deepEqual(ref, { store: 'uv', key: 'uv-fixture==1.0.0' }, 'the start recorded its entry');
});

test('a sandboxed server whose package has no wheel runs through uvx in the sandbox, and its log says why', async (t: TestContext) => {
  const probe = probeBwrap('bwrap');
  if (!requireService(t, 'bubblewrap', probe.ok, `${probe.ok ? '' : probe.reason}; apt install bubblewrap`))
    return;
  const dir = mkdtempSync(join(tmpdir(), 'skep-uv-store-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const bin = standIns(dir);
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
  const handle = await runtime.start({
    name: 'sdist',
    image: 'uvx://sdist-fixture@1.0.0',
    args: [],
    env: { PATH: `${bin}:/usr/bin:/bin` },
    transport: 'stdio',
    logFile: join(dir, 'sdist.log'),
    permissionProfile: { network: { mode: 'none' } },
  });
  t.after(() => handle.stop());
  const exit = await handle.exited;
  assert.equal(exit.code, 3, 'the stand-in uvx ran (and failed as it always does)');
  const log = readFileSync(join(dir, 'sdist.log'), 'utf8');
  assert.match(log, /has no wheel, and building is disabled; uvx installs it inside the sandbox instead/);
  assert.match(log, /uvx ran: sdist-fixture@1\.0\.0/);
  assert.deepEqual(readdirSync(join(paths.cacheDir, 'uv-packages')), [], 'no entry is left');
});
