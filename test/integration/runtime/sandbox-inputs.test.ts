/**
 * The sandbox holds against its own inputs: a hostile server in Skep's bubblewrap sandbox, and
 * whoever writes its permission profile, try to reach what the sandbox hides — Skep's folders
 * through other spellings of a profile path (a symlink to an ancestor, `/proc/self/root`, a
 * symlink into them), a Skep folder that does not exist yet, the management API's unix socket
 * wherever `skep serve --socket` puts it, a descriptor `skep serve` inherited, and the
 * filtering proxy's address checks with other spellings of loopback. Real bubblewrap, runners
 * and `skep serve` (the probe fixture is the server); skipped loudly without bubblewrap, a
 * failure in CI.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, type StdioOptions } from 'node:child_process';
import { once } from 'node:events';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer as createHttpServer, request } from 'node:http';
import { createServer as createNetServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createContext } from '../../../src/control/app/index.js';
import type { SkepConfig } from '../../../src/config/index.js';
import { ProcessRuntime, probeBwrap, type ServerSpec } from '../../../src/dataplane/runtime/index.js';
import { startEgressProxy } from '../../../src/dataplane/runtime/sandbox/egress-proxy.js';
import { isSkepError } from '../../../src/shared/index.js';
import { CLI_ARGS } from '../../helpers/cli.js';
import { tempHome } from '../../helpers/home.js';
import { requireService } from '../../helpers/services.js';
import { waitFor, waitForStatus } from '../../helpers/wait.js';
import { removeAllWorkloads } from '../workloads/helpers.js';
import { PROBE_SERVER, stdioProbe } from './probe.js';

const CANARY = 'canary-5d1e-never-leaves-skep';
const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

function requireBwrap(t: TestContext): boolean {
  const probe = probeBwrap('bwrap');
  return requireService(t, 'bubblewrap', probe.ok, probe.ok ? '' : `${probe.reason}; apt install bubblewrap`);
}

/** A real temporary folder (the sandbox compares real paths), removed when the test ends. */
function tempDir(t: TestContext, prefix: string, parent = tmpdir()): string {
  mkdirSync(parent, { recursive: true });
  const dir = realpathSync(mkdtempSync(join(parent, prefix)));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Runners inherit this process's environment: their user's home is `home` until the test ends. */
function useHome(t: TestContext, home: string): void {
  const saved = process.env['HOME'];
  process.env['HOME'] = home;
  t.after(() => {
    process.env['HOME'] = saved;
  });
}

/** The probe's tools through a workload's proxy, at the URL the API gives (it carries the owner's token). */
async function probeAt(
  t: TestContext,
  url: string,
): Promise<{ call(name: string, args?: Record<string, unknown>): Promise<string> }> {
  const client = new Client({ name: 'skep-inputs-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  t.after(() => client.close());
  return {
    async call(name, args = {}) {
      const result = (await client.callTool({ name, arguments: args })) as { content: { text?: string }[] };
      return result.content.map((c) => c.text ?? '').join('');
    },
  };
}

function probeWorkload(name: string, permission_profile: Record<string, unknown>) {
  return { name, image: `cmd://${process.execPath}`, cmd_arguments: [PROBE_SERVER], permission_profile };
}

function stdioSpec(
  dir: string,
  name: string,
  permissionProfile: ServerSpec['permissionProfile'],
): ServerSpec {
  return {
    name,
    image: `cmd://${process.execPath}`,
    args: [PROBE_SERVER],
    env: {},
    transport: 'stdio',
    logFile: join(dir, `${name}.log`),
    ...(permissionProfile === undefined ? {} : { permissionProfile }),
  };
}

/** Skep's folders with a canary where the API token and the secrets password file live. */
function seedCanaries(config: SkepConfig): void {
  for (const dir of [config.paths.stateDir, config.paths.configDir]) mkdirSync(dir, { recursive: true });
  writeFileSync(config.paths.apiTokenFile, CANARY);
  writeFileSync(join(config.paths.configDir, 'secrets-password'), CANARY);
}

test(
  'profile paths are resolved once: a symlink to an ancestor of Skep’s folders shows the ancestor, never Skep’s folders, in both spellings; a Skep folder that does not exist yet does not break the start',
  { timeout: 180_000 },
  async (t) => {
    if (!requireBwrap(t)) return;
    const home = tempHome(t, 'skep-inputs-');
    const skepHome = realpathSync(home.dir);
    const config: SkepConfig = { ...home.config, runtime: { ...home.config.runtime, sandbox: 'bwrap' } };
    const outer = tempDir(t, 'skep-inputs-outer-');
    const userHome = join(outer, 'user-home');
    mkdirSync(userHome);
    useHome(t, userHome);
    seedCanaries(config);
    writeFileSync(join(skepHome, 'notes.txt'), 'visible');
    // As on Fedora Silverblue (`/home -> /var/home`): the path written leads to an ancestor.
    symlinkSync(skepHome, join(outer, 'link'));
    const ctx = createContext(config);
    t.after(async () => {
      try {
        await removeAllWorkloads(ctx);
      } finally {
        await ctx.close();
      }
    });
    // The cache folder does not exist yet; bwrap could not hide it inside a read-only bind.
    rmSync(config.paths.cacheDir, { recursive: true, force: true });
    assert.equal(existsSync(config.paths.cacheDir), false);

    await ctx.workloads.create(probeWorkload('via-link', { read: [join(outer, 'link')] }));
    await ctx.workloads.create(probeWorkload('direct', { read: [skepHome], network: { mode: 'none' } }));
    await waitForStatus(ctx, 'via-link', 'running');
    await waitForStatus(ctx, 'direct', 'running');
    assert.equal(statSync(config.paths.cacheDir).mode & 0o777, 0o700, 'made private before the start');

    for (const name of ['via-link', 'direct']) {
      const listed = ctx.workloads.list({ all: true }).find((w) => w.name === name);
      const client = await probeAt(t, listed?.url ?? '');
      const answers: string[] = [];
      const call = async (tool: string, args: Record<string, unknown>) => {
        const answer = await client.call(tool, args);
        answers.push(answer);
        return answer;
      };
      // The ancestor is there, by its real path and (for the symlink) as written.
      assert.equal(await call('read_file', { path: join(skepHome, 'notes.txt') }), 'ok visible');
      if (name === 'via-link')
        assert.equal(await call('read_file', { path: join(outer, 'link', 'notes.txt') }), 'ok visible');
      // Skep's folders in it are empty, in every spelling.
      for (const base of [skepHome, join(outer, 'link')]) {
        const state = join(base, 'state');
        assert.match(await call('read_file', { path: join(state, 'api-token') }), /^error ENOENT/, state);
        assert.match(
          await call('read_file', { path: join(base, 'config', 'secrets-password') }),
          /^error ENOENT/,
        );
        assert.match(await call('list_dir', { path: join(base, 'data') }), /^(ok $|error ENOENT)/);
        assert.match(await call('list_dir', { path: join(base, 'cache') }), /^(ok $|error ENOENT)/);
      }
      for (const answer of answers)
        assert.ok(!answer.includes(CANARY), `the canary reached the client: ${answer}`);
    }
  },
);

test(
  'profile paths into Skep’s folders are refused at create (400) and again at start: /proc/self/root, a symlink into them, a path that does not exist yet behind one',
  { timeout: 60_000 },
  async (t) => {
    if (!requireBwrap(t)) return;
    const home = tempHome(t, 'skep-inputs-refuse-');
    const config: SkepConfig = { ...home.config, runtime: { ...home.config.runtime, sandbox: 'bwrap' } };
    seedCanaries(config);
    const outer = tempDir(t, 'skep-inputs-outer-');
    symlinkSync(config.paths.stateDir, join(outer, 'token-dir'));
    const ctx = createContext(config);
    t.after(() => ctx.close());
    const profiles: Record<string, unknown>[] = [
      { read: [`/proc/self/root${config.paths.stateDir}`] },
      { read: [`/proc/self/root${realpathSync(home.dir)}`] },
      { read: [join(outer, 'token-dir')] },
      { write: [join(outer, 'token-dir', 'not-yet', 'there')] },
      { read: [`${outer}/token-dir/../config`] },
      { read: [config.paths.apiTokenFile] },
    ];
    for (const [i, profile] of profiles.entries()) {
      await assert.rejects(
        ctx.workloads.create(probeWorkload(`refused-${i}`, profile)),
        (e) =>
          isSkepError(e) &&
          e.code === 'invalid_config' &&
          /permission_profile: .*(Skep's own folder|\/proc or \/sys)/.test(e.message),
        JSON.stringify(profile),
      );
      assert.equal(ctx.workloads.rows.get(`refused-${i}`), undefined, 'nothing was written');
    }
    // The runner checks again at start: a record written before the rule, or a path changed since.
    const runtime = new ProcessRuntime({
      logMaxBytes: 1 << 20,
      logFiles: 1,
      sandbox: { setting: 'bwrap', paths: config.paths },
    });
    for (const profile of profiles) {
      await assert.rejects(
        runtime.start(stdioSpec(outer, 'at-start', profile)),
        (e) => isSkepError(e) && e.code === 'invalid_config',
        JSON.stringify(profile),
      );
    }
  },
);

test(
  'programs the server names are not shown from inside Skep’s folders: a PATH entry or a program file there stays hidden, a PATH entry above them shows the rest',
  { timeout: 60_000 },
  async (t) => {
    if (!requireBwrap(t)) return;
    const home = tempHome(t, 'skep-inputs-path-');
    seedCanaries(home.config);
    const { stateDir } = home.config.paths;
    writeFileSync(join(stateDir, 'tool.js'), '');
    writeFileSync(join(home.dir, 'above.txt'), 'above');
    const runtime = new ProcessRuntime({
      logMaxBytes: 1 << 20,
      logFiles: 1,
      sandbox: { setting: 'bwrap', paths: home.config.paths },
    });
    const spec = stdioSpec(home.dir, 'path-probe', { network: { mode: 'none' } });
    const handle = await runtime.start({
      ...spec,
      // Whoever writes the run configuration (a registry entry's env) chooses PATH.
      env: { PATH: `${stateDir}:${realpathSync(home.dir)}:/usr/bin:/bin` },
      args: [PROBE_SERVER, join(stateDir, 'tool.js')],
    });
    t.after(() => handle.stop());
    assert.ok(handle.stdio);
    const probe = stdioProbe(handle.stdio);
    assert.match(await probe.call('read_file', { path: home.config.paths.apiTokenFile }), /^error ENOENT/);
    assert.match(await probe.call('read_file', { path: join(stateDir, 'tool.js') }), /^error ENOENT/);
    assert.equal(await probe.call('read_file', { path: join(home.dir, 'above.txt') }), 'ok above');
    assert.match(readFileSync(spec.logFile, 'utf8'), /is not shown: it is inside Skep's own folders/);
  },
);

/** An HTTP request to `skep serve` over its unix socket. */
function overSocket(
  socket: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        socketPath: socket,
        method,
        path,
        headers: { 'content-type': 'application/json', host: 'localhost' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** A folder under the repository's `.tmp`: outside every folder the sandbox hides, unless the checkout is. */
function visibleDir(t: TestContext): { dir: string; visible: boolean } {
  const dir = tempDir(t, 'skep-sock-', join(REPO, '.tmp'));
  const hidden = ['/home', '/root', '/tmp', '/var/tmp', '/run', '/mnt', '/media', realpathSync(tmpdir())];
  return { dir, visible: !hidden.some((h) => dir === h || dir.startsWith(`${h}/`)) };
}

test(
  'skep serve --socket outside Skep’s folders, started with an extra inherited directory descriptor: no sandboxed server (network none) reaches the socket or the descriptor',
  { timeout: 180_000 },
  async (t) => {
    if (!requireBwrap(t)) return;
    const home = tempHome(t, 'skep-inputs-serve-');
    const userHome = tempDir(t, 'skep-inputs-user-');
    mkdirSync(join(userHome, '.ssh'));
    writeFileSync(join(userHome, '.ssh', 'id_ed25519'), CANARY);
    const { dir: sockRoot, visible } = visibleDir(t);
    const socket = join(sockRoot, 'api', 'api.sock');
    // A descriptor above Node's start-up sweep (libuv marks 0..15 and on up to the first
    // gap close-on-exec): `skep serve` passes it on to every runner it spawns.
    const INHERITED_FD = 40;
    const dirFd = openSync(userHome, 'r');
    const stdio: StdioOptions = ['ignore', 'ignore', 'pipe'];
    while (stdio.length < INHERITED_FD) stdio.push('ignore');
    stdio.push(dirFd);
    const env = { ...home.env, HOME: userHome, SKEP_LOG_LEVEL: 'info' };
    const serve: ChildProcess = spawn(process.execPath, [...CLI_ARGS, 'serve', '--socket', socket], {
      env,
      stdio,
    });
    closeSync(dirFd);
    let stderr = '';
    serve.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = once(serve, 'exit');
    t.after(async () => {
      // The API first (its runners are detached), then every workload from here.
      if (serve.exitCode === null && serve.signalCode === null) {
        serve.kill('SIGTERM');
        await exited;
      }
      const ctx = createContext(home.config);
      try {
        await removeAllWorkloads(ctx);
      } finally {
        await ctx.close();
      }
    });
    await waitFor(`skep serve on ${socket}: ${stderr}`, async () => {
      if (serve.exitCode !== null) throw new Error(`skep serve exited: ${stderr}`);
      if (!existsSync(home.config.paths.discoveryFile)) return undefined;
      return (await overSocket(socket, 'GET', '/health')).status === 204 ? true : undefined;
    });

    const create = async (name: string, profile: Record<string, unknown>) => {
      const res = await overSocket(socket, 'POST', '/api/v1beta/workloads', probeWorkload(name, profile));
      assert.equal(res.status, 201, res.body);
      return name;
    };
    const running = (name: string) =>
      waitFor(`${name} running`, async () => {
        const res = await overSocket(socket, 'GET', `/api/v1beta/workloads/${name}/status`);
        const status = (JSON.parse(res.body) as { status?: string; status_context?: string }).status;
        if (status === 'error') throw new Error(res.body);
        return status === 'running' ? true : undefined;
      });
    const alone = await create('no-paths', { network: { mode: 'none' } });
    // A profile that shows the folder that holds the socket's folder.
    const shown = await create('shows-parent', { network: { mode: 'none' }, read: [sockRoot] });
    await running('no-paths');
    await running('shows-parent');

    for (const name of [alone, shown]) {
      const list = await overSocket(socket, 'GET', '/api/v1beta/workloads');
      const { workloads } = JSON.parse(list.body) as { workloads: { name: string; url: string }[] };
      const client = await probeAt(t, workloads.find((w) => w.name === name)?.url ?? '');
      assert.match(await client.call('connect_unix', { path: socket }), /^error (ENOENT|ECONNREFUSED)/);
      if (visible || name === shown) {
        // The place is visible (so nothing but the hiding stands in the way); the socket's folder is empty.
        assert.equal(await client.call('list_dir', { path: sockRoot }), 'ok api');
        assert.equal(await client.call('list_dir', { path: join(sockRoot, 'api') }), 'ok ');
      }
      const fds = JSON.parse(await client.call('fds')) as [number, string][];
      assert.ok(!fds.some(([fd]) => fd === INHERITED_FD), `descriptor ${INHERITED_FD} reached the server`);
      assert.ok(!fds.some(([, to]) => to === userHome), JSON.stringify(fds));
      const escape = await client.call('read_file', {
        path: `/proc/self/fd/${INHERITED_FD}/.ssh/id_ed25519`,
      });
      assert.match(escape, /^error/);
      assert.ok(!escape.includes(CANARY));
    }
  },
);

test(
  'the API socket beside other files is covered alone, wherever a sandbox would see it; alone in its folder, the folder stays hidden when the socket is made again',
  { timeout: 60_000 },
  async (t) => {
    if (!requireBwrap(t)) return;
    const dir = tempDir(t, 'skep-inputs-sock-');
    const { dir: shared, visible } = visibleDir(t);
    const paths = {
      configDir: join(dir, 'c'),
      stateDir: join(dir, 's'),
      dataDir: join(dir, 'd'),
      cacheDir: join(dir, 'k'),
      discoveryFile: join(dir, 'server.json'),
    };
    const listenOn = async (path: string): Promise<Server> => {
      const server = createNetServer((c) => c.end('api'));
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(path, resolve);
      });
      t.after(() => server.close());
      return server;
    };
    const runtime = new ProcessRuntime({
      logMaxBytes: 1 << 20,
      logFiles: 1,
      sandbox: { setting: 'bwrap', paths },
    });
    const start = async (name: string, profile: ServerSpec['permissionProfile']) => {
      const handle = await runtime.start(stdioSpec(dir, name, profile));
      t.after(() => handle.stop());
      assert.ok(handle.stdio);
      return stdioProbe(handle.stdio);
    };

    // Beside a file the server may read (a group-shared folder, say).
    const socket = join(shared, 'api.sock');
    writeFileSync(join(shared, 'notes.txt'), 'shared');
    await listenOn(socket);
    writeFileSync(paths.discoveryFile, JSON.stringify({ url: `unix://${socket}` }));
    const listed = await start('lists-folder', { network: { mode: 'none' }, read: [shared] });
    assert.equal(await listed.call('read_file', { path: join(shared, 'notes.txt') }), 'ok shared');
    assert.match(await listed.call('connect_unix', { path: socket }), /^error (ECONNREFUSED|ENOENT)/);
    if (visible) {
      // Visible without any profile path: covered where it is.
      const plain = await start('plain', { network: { mode: 'none' } });
      assert.equal(await plain.call('read_file', { path: join(shared, 'notes.txt') }), 'ok shared');
      assert.match(await plain.call('connect_unix', { path: socket }), /^error (ECONNREFUSED|ENOENT)/);
    }

    // Alone in its folder: the folder is hidden; a restarted API makes the socket again.
    const own = join(shared, 'api');
    mkdirSync(own);
    const ownSocket = join(own, 'api.sock');
    const first = await listenOn(ownSocket);
    writeFileSync(paths.discoveryFile, JSON.stringify({ url: `unix://${ownSocket}` }));
    const server = await start('own-folder', { network: { mode: 'none' }, read: [shared] });
    assert.match(await server.call('connect_unix', { path: ownSocket }), /^error (ENOENT|ECONNREFUSED)/);
    await new Promise((resolve) => first.close(resolve));
    await listenOn(ownSocket);
    assert.match(await server.call('connect_unix', { path: ownSocket }), /^error (ENOENT|ECONNREFUSED)/);
    assert.equal(await server.call('list_dir', { path: own }), 'ok ');
  },
);

test(
  'the filtering proxy refuses every spelling of the host’s loopback with a port-only allow-list; a listed loopback address passes in its own spelling only',
  { timeout: 30_000 },
  async (t) => {
    const seen: string[] = [];
    const listener = createHttpServer((req, res) => {
      seen.push(req.url ?? '');
      res.end('loopback-reached');
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    t.after(() => listener.close());
    const port = (listener.address() as { port: number }).port;
    const dir = tempDir(t, 'skep-inputs-egress-');
    const lines: string[] = [];
    const proxy = async (hosts: string[]) => {
      const path = join(dir, `egress-${hosts.length}.sock`);
      const p = await startEgressProxy(path, { hosts, ports: [port] }, (line) => lines.push(line));
      t.after(() => p.close());
      return path;
    };
    const get = (socketPath: string, url: string) =>
      new Promise<string>((resolve, reject) => {
        const req = request({ socketPath, method: 'GET', path: url }, (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (d: string) => (body += d));
          res.on('end', () => resolve(`${res.statusCode} ${body.trim()}`));
        });
        req.on('error', reject);
        req.end();
      });
    const tunnel = (socketPath: string, target: string) =>
      new Promise<string>((resolve, reject) => {
        const req = request({ socketPath, method: 'CONNECT', path: target });
        req.on('connect', (res, socket) => {
          socket.destroy();
          resolve(String(res.statusCode));
        });
        req.on('response', (res) => {
          res.resume();
          resolve(String(res.statusCode));
        });
        req.on('error', reject);
        req.end();
      });

    const portOnly = await proxy([]);
    const spellings = [
      '127.0.0.1',
      '[::ffff:7f00:1]',
      '[0:0:0:0:0:ffff:7f00:1]',
      '[::ffff:127.0.0.1]',
      '[::127.0.0.1]',
      '127.1',
      '0x7f000001',
      '0.0.0.0',
    ];
    for (const host of spellings) {
      assert.match(await get(portOnly, `http://${host}:${port}/${host}`), /^403 skep egress/, host);
      assert.equal(await tunnel(portOnly, `${host}:${port}`), '403', host);
    }
    assert.deepEqual(seen, [], 'the loopback listener saw no request');
    assert.ok(
      lines.some((l) => /deny CONNECT \[0:0:0:0:0:ffff:7f00:1\]/.test(l)),
      lines.join('\n'),
    );

    const listed = await proxy(['127.0.0.1']);
    assert.equal(await get(listed, `http://127.0.0.1:${port}/listed`), '200 loopback-reached');
    assert.equal(await tunnel(listed, `127.0.0.1:${port}`), '200');
    assert.match(await get(listed, `http://[::ffff:7f00:1]:${port}/mapped`), /^403/);
    assert.deepEqual(seen, ['/listed']);
  },
);
