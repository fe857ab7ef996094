/**
 * Skep installs like any Node CLI: `npm pack` of the built checkout gives `skep-<version>.tgz`,
 * which `npm install -g` puts into a throw-away prefix, and the installed `skep` works with
 * nothing of the checkout: `skep version`, `skep serve` (healthy), `skep run` of a local stdio
 * server (its runner is the installed dist/runner.mjs), a tool call through the workload's
 * proxy (`skep mcp call`), the web UI's page and script through a one-time login link, and
 * the operator (`skep operator render --offline` of the example resources).
 *
 * Assumes a fresh `npm run build` (fails at once without one). Needs the npm registry: the
 * package's runtime dependencies are resolved and fetched as for any install, from the local
 * npm cache where it holds them (`--prefer-offline`), else from the registry; where the registry
 * cannot be reached the test is skipped loudly (a failure in CI).
 *
 * The native SQLite module goes through better-sqlite3's own install script as with any
 * install: prebuild-install, else node-gyp. prebuild-install fetches the binary from GitHub
 * (which the machine this was written on cannot reach), and compiling SQLite took 2-5 min on
 * two cores here, so the test offers prebuild-install a local prebuild (its `local prebuilds`
 * option) made of the checkout's own build of the same version for the same Node ABI.
 * SKEP_PACK_FROM_SOURCE=1 leaves it out, and the module is then fetched or compiled exactly as
 * on a user's machine.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { requireService } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';
import { cleanupFirst } from '../integration/cli/cleanup.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ECHO_SERVER = join(ROOT, 'bench', 'fixtures', 'echo-server.mjs');
const exec = promisify(execFile);

interface PackResult {
  filename: string;
  files: { path: string }[];
}

/** Reads the live processes' command lines (Linux /proc). */
function commandLines(): string[] {
  const out: string[] = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      out.push(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' '));
    } catch {
      // the process ended meanwhile
    }
  }
  return out;
}

test(
  'npm pack, npm install -g into a throw-away prefix, then serve, run, call, web UI, operator',
  {
    timeout: 900_000,
  },
  async (t) => {
    for (const built of ['dist/skep.mjs', 'dist/runner.mjs', 'dist/ui/index.html'])
      assert.ok(existsSync(join(ROOT, built)), `${built} is missing: run \`npm run build\` before this test`);
    const registryUp = await fetch('https://registry.npmjs.org/-/ping', {
      signal: AbortSignal.timeout(10_000),
    }).then(
      (r) => r.ok,
      () => false,
    );
    if (!requireService(t, 'the npm registry', registryUp, 'npm install fetches the runtime dependencies'))
      return;

    const later = cleanupFirst(t);
    const started = Date.now();
    const phase = (name: string) => t.diagnostic(`${name}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const tmp = mkdtempSync(join(tmpdir(), 'skep-pack-'));
    later(() => rmSync(tmp, { recursive: true, force: true }));
    const own = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

    // npm pack: the bundles, their chunks and the UI; no sources, tests, compiled tree or maps.
    const packed = await exec('npm', ['pack', '--json', '--pack-destination', tmp], {
      cwd: ROOT,
      maxBuffer: 16 * 1024 * 1024,
    });
    const [pack] = JSON.parse(packed.stdout) as [PackResult];
    assert.equal(pack.filename, `skep-${own.version}.tgz`);
    const files = pack.files.map((f) => f.path);
    for (const needed of [
      'package.json',
      'README.md',
      'dist/skep.mjs',
      'dist/runner.mjs',
      'dist/ui/index.html',
    ])
      assert.ok(files.includes(needed), `the package holds ${needed}`);
    assert.ok(
      files.some((f) => f.startsWith('dist/chunks/')),
      'the package holds the bundle chunks',
    );
    assert.ok(
      files.some((f) => /^dist\/ui\/assets\/app-.*\.js$/.test(f)),
      'the package holds the UI script',
    );
    const unwanted = files.filter(
      (f) =>
        f.endsWith('.map') ||
        /^(src|test|bench|scripts|deploy|node_modules)\//.test(f) ||
        /^dist\/(?!chunks\/|ui\/|skep\.mjs$|runner\.mjs$)/.test(f),
    );
    assert.deepEqual(unwanted, [], 'the package holds only what the installed CLI runs');

    phase('packed');

    // The local prebuild offered to better-sqlite3's prebuild-install (see the header).
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env))
      if (!/^(SKEP_|XDG_|npm_|NODE_OPTIONS$)/.test(k)) env[k] = v;
    const sqlite = join(ROOT, 'node_modules', 'better-sqlite3');
    const binary = join(sqlite, 'build', 'Release', 'better_sqlite3.node');
    if (process.env['SKEP_PACK_FROM_SOURCE'] !== '1' && existsSync(binary)) {
      const { version } = JSON.parse(readFileSync(join(sqlite, 'package.json'), 'utf8')) as {
        version: string;
      };
      const stage = join(tmp, 'prebuild-stage');
      mkdirSync(join(stage, 'build', 'Release'), { recursive: true });
      copyFileSync(binary, join(stage, 'build', 'Release', 'better_sqlite3.node'));
      const prebuilds = join(tmp, 'prebuilds');
      mkdirSync(prebuilds);
      const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
      await exec('tar', ['-czf', join(prebuilds, name), '-C', stage, 'build']);
      env['npm_config_better_sqlite3_local_prebuilds'] = prebuilds;
    }

    // npm install -g into a throw-away prefix, from a folder outside the checkout.
    const prefix = join(tmp, 'prefix');
    const installed = await exec(
      'npm',
      [
        'install',
        '-g',
        '--prefix',
        prefix,
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        join(tmp, pack.filename),
      ],
      { cwd: tmp, env, maxBuffer: 64 * 1024 * 1024, timeout: 720_000 },
    );
    phase('installed');
    const pkgDir = join(prefix, 'lib', 'node_modules', 'skep');
    const deps = readdirSync(join(pkgDir, 'node_modules'));
    for (const dev of ['typescript', 'esbuild', 'fastify', 'tsx', 'preact'])
      assert.ok(!deps.includes(dev), `${dev} (bundled or a dev tool) is not installed`);
    assert.ok(
      existsSync(join(pkgDir, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node')),
      `better-sqlite3's native module was built or fetched: ${installed.stderr}`,
    );
    assert.doesNotMatch(installed.stderr, /EBADENGINE/, 'every installed package supports this Node');

    // The installed CLI, with a throw-away home and nothing of the checkout on PATH.
    const skepBin = join(prefix, 'bin', 'skep');
    const home = join(tmp, 'home');
    mkdirSync(home);
    Object.assign(env, {
      HOME: home,
      SKEP_HOME: join(home, 'skep'),
      PATH: `${join(prefix, 'bin')}:${dirname(process.execPath)}:/usr/bin:/bin`,
    });
    const skep = async (...args: string[]): Promise<string> => {
      const r = await exec(skepBin, args, { cwd: home, env, timeout: 120_000 }).catch(
        (err: { stdout?: string; stderr?: string; message: string }) => {
          assert.fail(`skep ${args.join(' ')} failed: ${err.stderr ?? err.message}`);
        },
      );
      return r.stdout;
    };

    assert.equal(await skep('version'), `skep ${own.version}\n`);
    assert.match(await skep('operator', '--help'), /^Usage: skep operator /);
    const resources = join(home, 'workloads.yaml');
    copyFileSync(join(ROOT, 'deploy', 'examples', 'workloads.yaml'), resources);
    assert.match(await skep('operator', 'render', '--offline', '-f', resources), /^kind: Deployment$/m);

    const serve: ChildProcess = spawn(skepBin, ['serve', '--port', '0'], {
      cwd: home,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let serveLog = '';
    serve.stderr?.setEncoding('utf8').on('data', (d: string) => {
      serveLog += d;
    });
    const serveExit = once(serve, 'exit');
    later(async () => {
      if (serve.exitCode === null && serve.signalCode === null) {
        serve.kill('SIGKILL');
        await serveExit;
      }
    });
    const discovery = join(home, 'skep', 'state', 'server', 'server.json');
    const api = await waitFor('skep serve to write its discovery file', () => {
      if (serve.exitCode !== null) return 'exited';
      const info = JSON.parse(readFileSync(discovery, 'utf8')) as { url: string; pid: number };
      return info.pid === serve.pid ? info.url : undefined;
    });
    assert.notEqual(api, 'exited', `skep serve exited: ${serveLog}`);
    assert.equal((await fetch(`${api}/health`)).status, 204);
    phase('serving');

    // A local stdio server, copied out of the checkout; its runner is the installed one.
    const server = join(home, 'echo-server.mjs');
    copyFileSync(ECHO_SERVER, server);
    later(() => exec(skepBin, ['rm', 'echo'], { cwd: home, env, timeout: 60_000 }).catch(() => undefined));
    assert.match(
      await skep('run', `cmd://${process.execPath}`, '--name', 'echo', '--', server),
      /^workload echo started: /,
    );
    const runner = join(pkgDir, 'dist', 'runner.mjs');
    if (existsSync('/proc/self/cmdline'))
      assert.ok(
        commandLines().some((line) => line.includes(`${runner} `) || line.endsWith(runner)),
        `a runner runs from ${runner}`,
      );
    assert.equal(await skep('mcp', 'call', 'echo', 'echo', '--arg', 'message=hi'), 'hi\n');

    // The web UI: a one-time login link, then the page and its script with the session cookie
    // (a browser's fetch metadata: the link is opened directly, the page loads from its origin).
    const link = (await skep('ui', '--print')).trim();
    assert.ok(link.startsWith(`${api}/`), link);
    const login = await fetch(link, { headers: { 'sec-fetch-site': 'none' }, redirect: 'manual' });
    assert.equal(login.status, 200);
    const cookie = /skep_session=[^;]+/.exec(login.headers.get('set-cookie') ?? '')?.[0];
    assert.ok(cookie, 'the login link sets the session cookie');
    const fromPage = { cookie, 'sec-fetch-site': 'same-origin' };
    const index = await fetch(`${api}/`, { headers: fromPage });
    assert.equal(index.status, 200);
    const html = await index.text();
    const script = /<script type="module" src="(\/assets\/app-[^"]+\.js)">/.exec(html)?.[1];
    assert.ok(script, `the UI's index names its script: ${html}`);
    const asset = await fetch(`${api}${script}`, { headers: fromPage });
    assert.equal(asset.status, 200);
    assert.ok((await asset.text()).length > 1000, 'the UI script is served');

    phase('ran, called and logged in');
    assert.equal(await skep('rm', 'echo'), 'echo: removed\n');
    serve.kill('SIGTERM');
    const [code] = (await serveExit) as [number | null];
    assert.equal(code, 0, serveLog);
  },
);
