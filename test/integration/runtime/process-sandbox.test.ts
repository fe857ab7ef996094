/**
 * Local servers in the bubblewrap sandbox (docs/sandbox.md), with real parts. The probe fixture
 * (`test/fixtures/mcp/probe-server.mjs`) runs as a workload through the manager, a detached
 * runner and the proxy, driven by the official MCP SDK client; it tries everything its
 * profile does not allow and the tests check that the sandbox refuses it (and that a canary's
 * content never reaches the client), and that everything the profile allows works.
 *
 * Needs bubblewrap (`apt install bubblewrap`): skipped loudly without it, a failure in CI.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { type ApiContext, createContext } from '../../../src/control/app/index.js';
import type { SkepConfig } from '../../../src/config/index.js';
import { ProcessRuntime, probeBwrap } from '../../../src/dataplane/runtime/index.js';
import { relayProgram } from '../../../src/dataplane/runtime/sandbox/forwarder.js';
import { isSkepError } from '../../../src/shared/index.js';
import { tempHome } from '../../helpers/home.js';
import { requireService } from '../../helpers/services.js';
import { waitForStatus } from '../../helpers/wait.js';
import { removeAllWorkloads } from '../workloads/helpers.js';
import { PROBE_SERVER, probeClient, stdioProbe } from './probe.js';

const CANARY = 'canary-7f3a-never-leaves-home';
const ECHO_SERVER = join(PROBE_SERVER, '..', '..', '..', '..', 'bench', 'fixtures', 'echo-server.mjs');
const REPO_NODE_MODULES = join(PROBE_SERVER, '..', '..', '..', '..', 'node_modules');

function requireBwrap(t: TestContext): boolean {
  const probe = probeBwrap('bwrap');
  return requireService(
    t,
    'bubblewrap',
    probe.ok,
    `${probe.ok ? '' : probe.reason}; install it with apt install bubblewrap (see .ci/run)`,
  );
}

/**
 * A Skep home whose runners see `fakeHome` as the user's home (with a canary in `~/.ssh`),
 * and a context on it; the test's end removes every workload.
 */
function sandboxHome(
  t: TestContext,
  sandbox = 'auto',
): { ctx: ApiContext; config: SkepConfig; fakeHome: string } {
  const home = tempHome(t, 'skep-sbx-test-');
  const fakeHome = join(home.dir, 'user-home');
  mkdirSync(join(fakeHome, '.ssh'), { recursive: true });
  writeFileSync(join(fakeHome, '.ssh', 'id_ed25519'), CANARY);
  const savedHome = process.env['HOME'];
  // Runners inherit this process's environment: their user's home is the fake one.
  process.env['HOME'] = fakeHome;
  const config: SkepConfig = { ...home.config, runtime: { ...home.config.runtime, sandbox } };
  const ctx = createContext(config);
  t.after(async () => {
    try {
      await removeAllWorkloads(ctx);
    } finally {
      process.env['HOME'] = savedHome;
      await ctx.close();
    }
  });
  // The state folder holds the store; put a canary there too.
  writeFileSync(join(config.paths.stateDir, 'canary'), CANARY);
  return { ctx, config, fakeHome };
}

/** A process runtime whose Skep folders live in `dir` (the sandbox hides them from servers). */
function sandboxedRuntime(dir: string, setting: 'auto' | 'bwrap') {
  const paths = {
    configDir: join(dir, 'c'),
    stateDir: join(dir, 's'),
    dataDir: join(dir, 'd'),
    cacheDir: join(dir, 'k'),
  };
  return {
    paths,
    runtime: new ProcessRuntime({ logMaxBytes: 1 << 20, logFiles: 1, sandbox: { setting, paths } }),
  };
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port));
  });
}

function probeWorkload(name: string, permission_profile: Record<string, unknown>) {
  return {
    name,
    image: `cmd://${process.execPath}`,
    cmd_arguments: [PROBE_SERVER],
    env_vars: { CONFIGURED: 'yes' },
    permission_profile,
  };
}

test(
  'the user’s home, Skep’s state and /tmp are invisible; read paths are read-only, write paths writable, nothing else',
  { timeout: 180_000 },
  async (t) => {
    if (!requireBwrap(t)) return;
    const { ctx, config, fakeHome } = sandboxHome(t);
    const shared = mkdtempSync(join(tmpdir(), 'skep-sbx-shared-'));
    t.after(() => rmSync(shared, { recursive: true, force: true }));
    const readDir = join(shared, 'read');
    const writeDir = join(shared, 'write');
    mkdirSync(readDir);
    mkdirSync(writeDir);
    writeFileSync(join(readDir, 'doc.txt'), 'readable');
    writeFileSync(join(shared, 'unlisted.txt'), CANARY);

    await ctx.workloads.create(
      probeWorkload('fs-probe', { read: [readDir], write: [writeDir], network: { mode: 'none' } }),
    );
    await waitForStatus(ctx, 'fs-probe', 'running');
    const client = await probeClient(ctx, 'fs-probe');
    t.after(() => client.close());
    const answers: string[] = [];
    const call = async (tool: string, args: Record<string, unknown>) => {
      const answer = await client.call(tool, args);
      answers.push(answer);
      return answer;
    };

    // Nothing of the user's home: the canary is not there, the folder is the sandbox's own.
    assert.match(await call('read_file', { path: join(fakeHome, '.ssh', 'id_ed25519') }), /^error ENOENT/);
    assert.doesNotMatch(await call('list_dir', { path: fakeHome }), /\.ssh/);
    // Skep's own folders are not there at all.
    for (const dir of [config.paths.stateDir, config.paths.dataDir, config.paths.configDir]) {
      assert.match(await call('list_dir', { path: dir }), /^error ENOENT/, dir);
    }
    assert.match(await call('read_file', { path: config.paths.databaseFile }), /^error ENOENT/);
    assert.match(await call('read_file', { path: join(config.paths.stateDir, 'canary') }), /^error ENOENT/);
    // /tmp is private: a file beside the listed folders is not visible.
    assert.match(await call('read_file', { path: join(shared, 'unlisted.txt') }), /^error ENOENT/);
    // `read`: readable, not writable; `write`: writable, and the host sees the file.
    assert.equal(await call('read_file', { path: join(readDir, 'doc.txt') }), 'ok readable');
    assert.match(await call('write_file', { path: join(readDir, 'new.txt'), content: 'x' }), /^error EROFS/);
    assert.equal(await call('write_file', { path: join(writeDir, 'out.txt'), content: 'written' }), 'ok');
    assert.equal(readFileSync(join(writeDir, 'out.txt'), 'utf8'), 'written');
    // Everything else is read-only.
    assert.match(
      await call('write_file', { path: '/etc/skep-sandbox-test', content: 'x' }),
      /^error (EROFS|EACCES)/,
    );
    assert.match(
      await call('write_file', { path: '/usr/skep-sandbox-test', content: 'x' }),
      /^error (EROFS|EACCES)/,
    );
    // Its own home is writable (and kept in Skep's data folder, out of every other server's sight).
    assert.equal(await call('write_file', { path: join(fakeHome, 'note.txt'), content: 'mine' }), 'ok');
    assert.equal(
      readFileSync(join(config.paths.dataDir, 'sandbox', 'fs-probe', 'home', 'note.txt'), 'utf8'),
      'mine',
    );
    // The environment: allow-listed, with the sandbox's home.
    const env = JSON.parse(await call('env', {})) as Record<string, string>;
    assert.equal(env['HOME'], fakeHome);
    assert.equal(env['CONFIGURED'], 'yes');
    assert.ok(!Object.keys(env).some((k) => k.startsWith('SKEP_')), 'no SKEP_* variable');

    for (const answer of answers)
      assert.ok(!answer.includes(CANARY), `the canary reached the client: ${answer}`);

    const detail = ctx.workloads.get('fs-probe');
    assert.equal(detail.sandboxed, true);
    assert.equal(detail.sandbox, 'bwrap');
    const listed = ctx.workloads.list().find((w) => w.name === 'fs-probe');
    assert.equal(listed?.sandbox, 'bwrap');
    assert.match(ctx.workloads.logs('fs-probe'), /sandboxed with bubblewrap \(network: none\)/);
    // Delete removes its home, so a later workload of the same name starts empty.
    await client.close();
    await ctx.workloads.deleteNow('fs-probe');
    assert.equal(existsSync(join(config.paths.dataDir, 'sandbox', 'fs-probe')), false);
  },
);

test(
  'network.mode none connects nowhere; an allow-list reaches the listed loopback server through the filtering proxy and nothing else',
  { timeout: 180_000 },
  async (t) => {
    if (!requireBwrap(t)) return;
    const { ctx } = sandboxHome(t);
    const listed = createServer((_req, res) => res.end('listed-ok'));
    const unlisted = createServer((_req, res) => res.end('unlisted-reached'));
    const listedPort = await listen(listed);
    const unlistedPort = await listen(unlisted);
    t.after(() => {
      listed.close();
      unlisted.close();
    });

    const none = await ctx.workloads.create(probeWorkload('net-none', { network: { mode: 'none' } }));
    const allow = await ctx.workloads.create(
      probeWorkload('net-allow', {
        network: { outbound: { allow_host: ['127.0.0.1'], allow_port: [listedPort] } },
      }),
    );
    await waitForStatus(ctx, 'net-none', 'running');
    await waitForStatus(ctx, 'net-allow', 'running');

    const isolated = await probeClient(ctx, none.name);
    t.after(() => isolated.close());
    // The host's loopback services are not there: the sandbox has a loopback of its own.
    assert.match(
      await isolated.call('connect', { host: '127.0.0.1', port: listedPort }),
      /^error ECONNREFUSED/,
    );
    assert.match(
      await isolated.call('connect', { host: '1.1.1.1', port: 443 }),
      /^error (ENETUNREACH|EHOSTUNREACH)/,
    );
    assert.match(await isolated.call('http_get', { url: `http://127.0.0.1:${listedPort}/` }), /^error/);
    const noneEnv = JSON.parse(await isolated.call('env')) as Record<string, string>;
    assert.equal(noneEnv['HTTP_PROXY'], undefined);

    const filtered = await probeClient(ctx, allow.name);
    t.after(() => filtered.close());
    assert.equal(
      await filtered.call('http_get', { url: `http://127.0.0.1:${listedPort}/` }),
      '200 listed-ok',
    );
    assert.equal(await filtered.call('https_connect', { host: '127.0.0.1', port: listedPort }), '200');
    const refused = await filtered.call('http_get', { url: `http://127.0.0.1:${unlistedPort}/` });
    assert.match(refused, /^403 skep egress/);
    assert.ok(!refused.includes('unlisted-reached'));
    assert.equal(await filtered.call('https_connect', { host: '127.0.0.1', port: unlistedPort }), '403');
    // A listed address under another name is not listed (no DNS name leads into the host).
    assert.match(await filtered.call('http_get', { url: `http://localhost:${listedPort}/` }), /^403/);
    // Around the proxy there is no way out.
    assert.match(
      await filtered.call('connect', { host: '127.0.0.1', port: listedPort }),
      /^error ECONNREFUSED/,
    );
    assert.match(ctx.workloads.logs('net-allow'), /\[egress\] deny 127\.0\.0\.1:\d+/);
    // perl is on PATH (Debian's perl-base is essential): the relay is the Perl script.
    if (relayProgram(process.env).kind === 'perl')
      assert.match(ctx.workloads.logs('net-allow'), /network relay in perl/);
  },
);

test(
  'a profile that asks for isolation is refused when runtime.sandbox points at a missing bwrap, unless the workload opts out',
  { timeout: 120_000 },
  async (t) => {
    const { ctx } = sandboxHome(t, '/nonexistent/skep-test/bwrap');
    await assert.rejects(
      ctx.workloads.create(probeWorkload('must-isolate', { network: { mode: 'none' } })),
      (e) =>
        isSkepError(e) &&
        e.code === 'sandbox_unavailable' &&
        /\/nonexistent\/skep-test\/bwrap does not exist/.test(e.message) &&
        /"sandbox": "off"/.test(e.message),
    );
    assert.equal(ctx.workloads.rows.get('must-isolate'), undefined, 'nothing was written');
    // A forced sandbox refuses even a workload that asks for nothing.
    await assert.rejects(
      ctx.workloads.create(probeWorkload('plain', {})),
      (e) => isSkepError(e) && e.code === 'sandbox_unavailable',
    );
    // The explicit opt-out runs it, unsandboxed, and says so.
    await ctx.workloads.createFromConfig({
      name: 'opted-out',
      image: `cmd://${process.execPath}`,
      cmd_args: [PROBE_SERVER],
      permission_profile: { network: { mode: 'none' } },
      sandbox: 'off',
    });
    // The same opt-out through the create request (API, `skep run --sandbox off`).
    await ctx.workloads.create({
      ...probeWorkload('opted-out-2', { network: { mode: 'none' } }),
      sandbox: 'off',
    });
    assert.equal(ctx.workloads.exportConfig('opted-out-2').sandbox, 'off');
    await waitForStatus(ctx, 'opted-out', 'running');
    const detail = ctx.workloads.get('opted-out');
    assert.equal(detail.sandboxed, false);
    assert.equal(detail.sandbox, 'none');
    assert.match(detail.sandbox_reason, /opts out/);
    const client = await probeClient(ctx, 'opted-out');
    t.after(() => client.close());
    assert.match(await client.call('list_dir', { path: '/' }), /^ok /);
    assert.match(ctx.workloads.logs('opted-out'), /not sandboxed: the workload opts out/);
  },
);

test('the runtime refuses at start too (a record that predates the rule)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skep-sbx-rt-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const paths = { configDir: dir, stateDir: dir, dataDir: dir, cacheDir: dir };
  const runtime = new ProcessRuntime({
    logMaxBytes: 1 << 20,
    logFiles: 1,
    sandbox: { setting: '/nonexistent/skep-test/bwrap', paths },
  });
  await assert.rejects(
    runtime.start({
      name: 'x',
      image: `cmd://${process.execPath}`,
      args: [PROBE_SERVER],
      env: {},
      transport: 'stdio',
      logFile: join(dir, 'x.log'),
      permissionProfile: { network: { mode: 'none' } },
    }),
    (e) => isSkepError(e) && e.code === 'sandbox_unavailable',
  );
  // Without any sandbox configured, a profile that asks for isolation is refused as well.
  await assert.rejects(
    new ProcessRuntime({ logMaxBytes: 1 << 20, logFiles: 1 }).start({
      name: 'y',
      image: `cmd://${process.execPath}`,
      args: [PROBE_SERVER],
      env: {},
      transport: 'stdio',
      logFile: join(dir, 'y.log'),
      permissionProfile: { read: [dir] },
    }),
    (e) => isSkepError(e) && e.code === 'sandbox_unavailable',
  );
});

test(
  'an HTTP server in a network namespace of its own is reached through the inbound relay; stop is graceful',
  { timeout: 120_000 },
  async (t) => {
    if (!requireBwrap(t)) return;
    const dir = mkdtempSync(join(tmpdir(), 'skep-sbx-http-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const { runtime } = sandboxedRuntime(dir, 'auto');
    const probe = createServer();
    const port = await listen(probe);
    await new Promise((r) => probe.close(r));
    const script =
      "process.on('SIGTERM',()=>{process.stderr.write('graceful\\n');process.exit(0)});" +
      "require('http').createServer((q,s)=>s.end('inside '+process.env.MCP_PORT)).listen(Number(process.env.PORT),'127.0.0.1')";
    const handle = await runtime.start({
      name: 'web',
      image: `cmd://${process.execPath}`,
      args: ['-e', script],
      env: {},
      transport: 'streamable-http',
      targetPort: port,
      logFile: join(dir, 'web.log'),
      permissionProfile: { network: { mode: 'none' } },
    });
    t.after(() => handle.stop());
    assert.equal(handle.url, `http://127.0.0.1:${port}/mcp`);
    assert.equal(await (await fetch(`http://127.0.0.1:${port}/`)).text(), `inside ${port}`);
    await handle.stop();
    assert.deepEqual(await handle.exited, { code: 0, signal: null });
    assert.match(readFileSync(join(dir, 'web.log'), 'utf8'), /graceful/);
    // The relay is gone with the server.
    await assert.rejects(fetch(`http://127.0.0.1:${port}/`));
  },
);

test('a stdio server in the sandbox talks over stdio like any other', async (t) => {
  if (!requireBwrap(t)) return;
  const dir = mkdtempSync(join(tmpdir(), 'skep-sbx-stdio-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const { runtime, paths } = sandboxedRuntime(dir, 'bwrap');
  const handle = await runtime.start({
    name: 'io',
    image: `cmd://${process.execPath}`,
    args: [PROBE_SERVER],
    env: {},
    transport: 'stdio',
    logFile: join(dir, 'io.log'),
  });
  t.after(() => handle.stop());
  assert.ok(handle.stdio);
  const probe = stdioProbe(handle.stdio);
  // The default profile (`network`) shares the host's network but still hides the files.
  assert.match(await probe.call('list_dir', { path: paths.dataDir }), /^error ENOENT/);
  const env = JSON.parse(await probe.call('env')) as Record<string, string>;
  assert.equal(env['TMPDIR'], '/tmp');
});

test(
  'without perl on the server’s PATH the relay is a Node process, and the allow-list works the same',
  { timeout: 60_000 },
  async (t) => {
    if (!requireBwrap(t)) return;
    const dir = mkdtempSync(join(tmpdir(), 'skep-sbx-noperl-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    const listed = createServer((_req, res) => res.end('listed-ok'));
    const listedPort = await listen(listed);
    t.after(() => listed.close());
    const { runtime } = sandboxedRuntime(dir, 'bwrap');
    const handle = await runtime.start({
      name: 'noperl',
      image: `cmd://${process.execPath}`,
      args: [PROBE_SERVER],
      // A PATH with no perl on it (the server is named by its full path).
      env: { PATH: bin },
      transport: 'stdio',
      logFile: join(dir, 'noperl.log'),
      permissionProfile: { network: { outbound: { allow_host: ['127.0.0.1'], allow_port: [listedPort] } } },
    });
    t.after(() => handle.stop());
    assert.ok(handle.stdio);
    const probe = stdioProbe(handle.stdio);
    assert.equal(await probe.call('http_get', { url: `http://127.0.0.1:${listedPort}/` }), '200 listed-ok');
    assert.match(await probe.call('connect', { host: '127.0.0.1', port: listedPort }), /^error ECONNREFUSED/);
    assert.match(
      readFileSync(join(dir, 'noperl.log'), 'utf8'),
      /network relay in Node \(no perl on PATH outside the hidden folders: a slower start\)/,
    );
    // Stop ends it by SIGTERM (128 + 15: the probe has no handler); that the relay passes the
    // signal on to the server is shown in sandbox-relay.test.ts.
    await handle.stop();
    assert.deepEqual(await handle.exited, { code: 143, signal: null });
  },
);

test(
  'a cmd:// program under the home runs: its project folder is visible read-only, nothing else of the home',
  { timeout: 60_000 },
  async (t) => {
    if (!requireBwrap(t)) return;
    const dir = mkdtempSync(join(tmpdir(), 'skep-sbx-proj-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const fakeHome = join(dir, 'home');
    const proj = join(fakeHome, 'proj');
    mkdirSync(proj, { recursive: true });
    mkdirSync(join(fakeHome, '.ssh'));
    mkdirSync(join(fakeHome, 'docs'));
    writeFileSync(join(fakeHome, '.ssh', 'id_ed25519'), CANARY);
    writeFileSync(join(proj, 'package.json'), '{"type":"module"}');
    writeFileSync(join(proj, 'server.mjs'), readFileSync(PROBE_SERVER));
    // The project's dependencies, as an install would put them (here: this repository's).
    symlinkSync(REPO_NODE_MODULES, join(proj, 'node_modules'));
    const savedHome = process.env['HOME'];
    process.env['HOME'] = fakeHome;
    t.after(() => {
      process.env['HOME'] = savedHome;
    });
    const { runtime } = sandboxedRuntime(dir, 'auto');
    const handle = await runtime.start({
      name: 'proj',
      image: `cmd://${process.execPath}`,
      // A folder argument is data: not shown (the log says how to show it).
      args: [join(proj, 'server.mjs'), join(fakeHome, 'docs')],
      env: {},
      transport: 'stdio',
      logFile: join(dir, 'proj.log'),
      // The project's dependencies are this repository's (the symlink above); they must be
      // readable wherever the checkout lives, /tmp included, which the sandbox hides.
      permissionProfile: { network: { mode: 'none' }, read: [REPO_NODE_MODULES] },
    });
    t.after(() => handle.stop());
    assert.ok(handle.stdio);
    const probe = stdioProbe(handle.stdio);
    assert.equal(await probe.call('read_file', { path: join(proj, 'package.json') }), 'ok {"type":"module"}');
    assert.match(await probe.call('write_file', { path: join(proj, 'x'), content: 'x' }), /^error EROFS/);
    const canary = await probe.call('read_file', { path: join(fakeHome, '.ssh', 'id_ed25519') });
    assert.match(canary, /^error ENOENT/);
    assert.ok(!canary.includes(CANARY));
    const log = readFileSync(join(dir, 'proj.log'), 'utf8');
    assert.match(log, /proj is visible read-only \(it holds the program\)/);
    assert.match(
      log,
      /docs \(an argument\) is not visible to the server; grant it with skep run --volume \S+docs, or list it in the permission profile's read/,
    );
    assert.match(await probe.call('list_dir', { path: join(fakeHome, 'docs') }), /^error ENOENT/);
  },
);

test(
  'an npx:// package with network none is fetched in the sandbox first, then runs offline',
  { timeout: 180_000 },
  async (t) => {
    if (!requireBwrap(t)) return;
    const dir = mkdtempSync(join(tmpdir(), 'skep-sbx-npx-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const pkg = join(dir, 'pkg');
    mkdirSync(pkg);
    writeFileSync(
      join(pkg, 'package.json'),
      JSON.stringify({ name: 'skep-sbx-echo', version: '1.0.0', bin: { 'skep-sbx-echo': 'server.mjs' } }),
    );
    writeFileSync(join(pkg, 'server.mjs'), readFileSync(ECHO_SERVER), { mode: 0o755 });
    execFileSync('npm', ['pack', '--pack-destination', dir], {
      cwd: pkg,
      stdio: 'ignore',
      env: { ...process.env, npm_config_offline: 'true', npm_config_update_notifier: 'false' },
    });
    const tarball = join(dir, 'skep-sbx-echo-1.0.0.tgz');
    const { runtime, paths } = sandboxedRuntime(dir, 'auto');
    const handle = await runtime.start({
      name: 'npx-echo',
      image: `npx://file:${tarball}`,
      args: [],
      env: {},
      transport: 'stdio',
      logFile: join(dir, 'npx.log'),
      permissionProfile: { network: { mode: 'none' } },
    });
    t.after(() => handle.stop());
    assert.ok(handle.stdio);
    assert.equal(
      await stdioProbe(handle.stdio).call('echo', { message: 'from the sandbox' }),
      'from the sandbox',
    );
    const log = readFileSync(join(dir, 'npx.log'), 'utf8');
    assert.match(log, /sandbox: fetching npx:\/\/file:.*registry\.npmjs\.org only/);
    assert.match(log, /sandboxed with bubblewrap \(network: none\)/);
    // The package landed in the workload's own npm cache, in its sandbox home.
    assert.ok(existsSync(join(paths.dataDir, 'sandbox', 'npx-echo', 'home', '.npm', '_npx')));
  },
);

/**
 * uv cannot be installed on these machines (PyPI is unreachable, Debian 12 has no uv package,
 * no npm package ships its binary), so `uv` and `uvx` here are test doubles: two small Node
 * scripts on the server's PATH. What this shows is Skep's side of a `uvx://` start — the
 * fetch command (`uv tool install <pkg>`) run in the sandbox first, with the package index
 * as its only destination through the relay and the filtering proxy, into the workload's own
 * home; then `uvx <pkg>` with `UV_OFFLINE=1` and the profile's network (none). Not shown: that
 * real uv honours `HTTP(S)_PROXY`, `UV_DEFAULT_INDEX` and `UV_OFFLINE` as documented, or that
 * `uvx` then finds the tool `uv tool install` put there.
 */
test(
  'a uvx:// package with network none is fetched first (uv tool install, the index only), then runs offline (uv and uvx are test doubles)',
  { timeout: 60_000 },
  async (t) => {
    if (!requireBwrap(t)) return;
    const dir = mkdtempSync(join(tmpdir(), 'skep-sbx-uvx-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const requests: string[] = [];
    const index = createServer((req, res) => {
      requests.push(req.url ?? '');
      res.end('<html><a href="skep_uvx_echo-1.0-py3-none-any.whl">wheel</a></html>');
    });
    const indexPort = await listen(index);
    t.after(() => index.close());
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    // uv: only `uv tool install <pkg>`; tries the index through HTTP_PROXY, the index directly,
    // and another host through the proxy; records what it saw in the tool's folder.
    writeFileSync(
      join(bin, 'uv'),
      `#!${process.execPath}
const http = require('node:http');
const net = require('node:net');
const fs = require('node:fs');
const path = require('node:path');
const [cmd, sub, pkg] = process.argv.slice(2);
if (cmd !== 'tool' || sub !== 'install' || !pkg) { process.stderr.write('uv (test double): unexpected ' + process.argv.slice(2).join(' ') + '\\n'); process.exit(2); }
const proxy = new URL(process.env.HTTP_PROXY);
const viaProxy = (url) => new Promise((resolve) => {
  const req = http.request({ host: proxy.hostname, port: Number(proxy.port), path: url }, (res) => {
    let body = '';
    res.setEncoding('utf8').on('data', (s) => (body += s)).on('end', () => resolve(res.statusCode + ' ' + body));
  });
  req.on('error', (e) => resolve('error ' + e.code));
  req.end();
});
const indexUrl = new URL(process.env.UV_DEFAULT_INDEX);
const direct = () => new Promise((resolve) => {
  const s = net.connect(Number(indexUrl.port), indexUrl.hostname, () => { s.destroy(); resolve('connected'); });
  s.on('error', (e) => resolve('error ' + e.code));
});
(async () => {
  const record = {
    argv: process.argv.slice(2),
    index: await viaProxy(process.env.UV_DEFAULT_INDEX + '/' + pkg + '/'),
    direct: await direct(),
    other: (await viaProxy('http://example.com/')).slice(0, 3),
    offline: process.env.UV_OFFLINE ?? null,
  };
  const dir = path.join(process.env.HOME, '.local', 'share', 'uv', 'tools', pkg);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'installed.json'), JSON.stringify(record));
  process.exit(record.index.startsWith('200 ') ? 0 : 1);
})();
`,
      { mode: 0o755 },
    );
    // uvx: runs only an installed tool; a stdio MCP server whose tools answer what the fetch
    // recorded and the environment it runs with.
    writeFileSync(
      join(bin, 'uvx'),
      `#!${process.execPath}
const fs = require('node:fs');
const path = require('node:path');
const pkg = process.argv[2];
const file = path.join(process.env.HOME, '.local', 'share', 'uv', 'tools', pkg, 'installed.json');
if (!fs.existsSync(file)) { process.stderr.write('uvx (test double): ' + pkg + ' is not installed\\n'); process.exit(3); }
const reply = (id, result) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id, result }) + '\\n');
require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
  const msg = JSON.parse(line);
  if (msg.id === undefined) return;
  if (msg.method === 'initialize') return reply(msg.id, { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: pkg, version: '1' } });
  const text = msg.params.name === 'installed' ? fs.readFileSync(file, 'utf8') : JSON.stringify(process.env);
  reply(msg.id, { content: [{ type: 'text', text }] });
});
`,
      { mode: 0o755 },
    );
    const { runtime, paths } = sandboxedRuntime(dir, 'bwrap');
    const handle = await runtime.start({
      name: 'uvx-echo',
      image: 'uvx://skep-uvx-echo',
      args: [],
      env: {
        PATH: `${bin}:${process.env['PATH'] ?? ''}`,
        UV_DEFAULT_INDEX: `http://127.0.0.1:${indexPort}/simple`,
      },
      transport: 'stdio',
      logFile: join(dir, 'uvx.log'),
      permissionProfile: { network: { mode: 'none' } },
    });
    t.after(() => handle.stop());
    assert.ok(handle.stdio);
    const probe = stdioProbe(handle.stdio);
    // The fetch: `uv tool install`, the index reached through the proxy, nothing else.
    assert.deepEqual(JSON.parse(await probe.call('installed')), {
      argv: ['tool', 'install', 'skep-uvx-echo'],
      index: '200 <html><a href="skep_uvx_echo-1.0-py3-none-any.whl">wheel</a></html>',
      direct: 'error ECONNREFUSED',
      other: '403',
      offline: null,
    });
    assert.deepEqual(requests, ['/simple/skep-uvx-echo/']);
    // The run: offline, with no network and no proxy.
    const env = JSON.parse(await probe.call('env')) as Record<string, string>;
    assert.equal(env['UV_OFFLINE'], '1');
    assert.equal(env['HTTP_PROXY'], undefined);
    const log = readFileSync(join(dir, 'uvx.log'), 'utf8');
    assert.match(
      log,
      new RegExp(
        `sandbox: fetching uvx://skep-uvx-echo \\(network: 127\\.0\\.0\\.1, files\\.pythonhosted\\.org only\\)`,
      ),
    );
    assert.match(log, /sandboxed with bubblewrap \(network: none\)/);
    // The tool landed in the workload's own home, kept between starts.
    assert.ok(
      existsSync(
        join(paths.dataDir, 'sandbox', 'uvx-echo', 'home', '.local', 'share', 'uv', 'tools', 'skep-uvx-echo'),
      ),
    );
  },
);
