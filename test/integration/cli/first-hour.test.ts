/**
 * The first hour with the CLI, as real `skep` processes on a
 * temporary home: `skep run` waits until the server answers or has clearly failed and says
 * why on its first line (npm's E404, a program that exits or is not an MCP server, a remote
 * URL that refuses or does not resolve), exits non-zero, and gives up on a start that never
 * worked and removes it (unless --keep-on-failure); names come from the catalog entry, and
 * running the same entry again is refused, not numbered; invalid input is refused before anything is
 * created; `skep restart` waits like `skep run`; user errors have no stack trace; output into
 * a closed pipe ends quietly.
 */
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { CLI_ARGS } from '../../helpers/cli.js';
import { tempHome } from '../../helpers/home.js';
import { requireService } from '../../helpers/services.js';
import { startRemoteMcp } from '../auth/harness.js';
import { cleanupFirst } from './cleanup.js';
import { EVERYTHING_ENTRY } from '../workloads/helpers.js';

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
  /**
   * The first line of the error (`error: ...`; without one, of stderr). Lines before it may
   * only be progress (`<name>: still starting after 5s ...`: a slow machine shows them).
   */
  first: string;
  ms: number;
}

/**
 * A temporary Skep home and a `skep` that runs there (asynchronously: a test's own loopback
 * server must keep answering meanwhile); every workload is removed at the end.
 */
function cliHome(t: TestContext) {
  const later = cleanupFirst(t);
  const home = tempHome(t, 'skep-first-hour-');
  const env = { ...home.env, SKEP_LOG_LEVEL: 'silent' };
  const skep = (...args: string[]): Promise<Run> => {
    const started = Date.now();
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        [...CLI_ARGS, ...args],
        { env, encoding: 'utf8', timeout: 150_000 },
        (err, stdout, stderr) => {
          const code = (err as { code?: unknown } | null)?.code;
          resolve({
            status: err === null ? 0 : typeof code === 'number' ? code : null,
            stdout,
            stderr,
            first: firstErrorLine(stderr),
            ms: Date.now() - started,
          });
        },
      );
    });
  };
  const workloads = async () =>
    (
      JSON.parse((await skep('list', '--all', '--json')).stdout) as {
        workloads: { name: string; status: string }[];
      }
    ).workloads.map((w) => [w.name, w.status]);
  later(async () => {
    const names = (await workloads()).map(([name]) => name as string);
    if (names.length > 0) await skep('rm', ...names);
  });
  return { home, env, skep, workloads };
}

function firstErrorLine(stderr: string): string {
  const lines = stderr.split('\n');
  const at = lines.findIndex((l) => l.startsWith('error: '));
  if (at < 0) return lines[0] ?? '';
  for (const line of lines.slice(0, at))
    assert.match(line, /^[\w.-]+: /, `only progress before the error: ${stderr}`);
  return lines[at] as string;
}

function assertNoStack(r: Run): void {
  assert.doesNotMatch(r.stderr, /\n\s+at .+:\d+:\d+/, 'no stack trace');
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const NODE = `cmd://${process.execPath}`;

test(
  'skep run: an npx package that does not exist fails with npm’s E404',
  { timeout: 180_000 },
  async (t) => {
    const registry = await fetch('https://registry.npmjs.org/-/ping', {
      signal: AbortSignal.timeout(10_000),
    }).then(
      (r) => r.ok,
      () => false,
    );
    if (!requireService(t, 'the npm registry', registry, 'needs network access to registry.npmjs.org'))
      return;
    const { skep, workloads } = cliHome(t);
    const pkg = `@skep-test-nonexistent/no-such-server-${process.pid}`;
    const r = await skep('run', `npx://${pkg}`);
    assert.equal(r.status, 1, r.stderr);
    assert.equal(
      r.first,
      `error: workload no-such-server-${process.pid} failed to start: npm error E404: package '${pkg}' is not in the npm registry`,
    );
    assert.match(r.stderr, /npm error 404 Not Found - GET https:\/\/registry\.npmjs\.org\//);
    assert.match(r.stderr, /check the package name after npx:\/\//);
    assertNoStack(r);
    // Given up on, not retried for minutes, and nothing left behind.
    assert.match(r.stderr, new RegExp(`nothing was kept: no-such-server-${process.pid} was removed`));
    assert.deepEqual(await workloads(), []);
  },
);

test(
  'skep run: a program that exits at once, or is not an MCP server, or never answers',
  { timeout: 240_000 },
  async (t) => {
    const { skep, workloads } = cliHome(t);

    const crash = await skep(
      'run',
      NODE,
      '--name',
      'crash',
      '--keep-on-failure',
      '--',
      '-e',
      "console.error('Error: cannot open /etc/my-server/config.json'); process.exit(2)",
    );
    assert.equal(crash.status, 1);
    assert.equal(
      crash.first,
      'error: workload crash failed to start: the server exited before it answered the MCP initialize request: ' +
        'Error: cannot open /etc/my-server/config.json',
    );
    assert.match(
      crash.stderr,
      /the server's log ends with:\n {4}Error: cannot open \/etc\/my-server\/config\.json\n/,
    );
    assert.match(
      crash.stderr,
      /crash is stopped with status error; fix the cause, then 'skep restart crash'/,
    );

    // `cat` echoes the proxy's initialize request back instead of answering it.
    const cat = await skep('run', 'cmd://cat');
    assert.equal(cat.status, 1);
    assert.equal(
      cat.first,
      'error: workload cat failed to start: the program is not an MCP server: it sent the MCP initialize request back instead of answering it',
    );
    assert.match(cat.stderr, /run an MCP server here: a program that speaks MCP on stdin\/stdout/);
    // Without --keep-on-failure a failed first start leaves nothing behind: repeating it fails
    // the same way (no `cat-2`), and the end says so.
    assert.match(
      cat.stderr,
      /\n {2}nothing was kept: cat was removed; fix the cause and run it again \(--keep-on-failure keeps a failed workload for 'skep logs cat'\)\n$/,
    );
    const catAgain = await skep('run', 'cmd://cat');
    assert.equal(catAgain.first, cat.first);

    // Silent forever: the wait is bounded (--wait), the exit non-zero, and the message says
    // the workload keeps starting in the background.
    const silent = await skep('run', 'cmd:///bin/sleep', '--name', 'silent', '--wait', '2', '--', '600');
    assert.equal(silent.status, 1);
    assert.equal(silent.first, 'error: workload silent did not answer within 2s');
    assert.match(silent.stderr, /it keeps starting in the background: 'skep list --all' shows its status/);
    assert.ok(silent.ms < 60_000, `bounded: ${silent.ms} ms`);

    assert.deepEqual(await workloads(), [
      ['crash', 'error'],
      ['silent', 'starting'],
    ]);
    // A kept workload's name is taken: running it again says so, and how to go on.
    const crashAgain = await skep('run', NODE, '--name', 'crash', '--', '-e', 'process.exit(2)');
    assert.equal(crashAgain.status, 1);
    assert.equal(
      crashAgain.first,
      "error: workload crash already exists and has status error; 'skep restart crash' starts it again, " +
        "'skep rm crash' removes it, or add --name <another-name> to run a second one ('skep list --all' lists them)",
    );

    // `skep restart` of a server that never worked fails the same way and gives up again.
    const again = await skep('restart', 'crash');
    assert.equal(again.status, 1);
    assert.equal(again.first, crash.first);
    assert.equal(again.stdout, '');

    // A server that worked before and fails after a restart: reported, exit 1, and its runner
    // keeps trying (only such a server is worth retrying).
    // Not sandboxed: the sandbox hides the temporary folders this flag file lives in.
    const flag = join(tempHome(t, 'skep-flag-').dir, 'broken');
    const flaky = await skep(
      'run',
      NODE,
      '--name',
      'flaky',
      '--sandbox',
      'off',
      '--',
      '-e',
      `if (require('fs').existsSync(${JSON.stringify(flag)})) process.exit(3); process.argv.splice(1, 0, ${JSON.stringify(EVERYTHING_ENTRY)}); import(${JSON.stringify(EVERYTHING_ENTRY)})`,
      'stdio',
    );
    assert.equal(flaky.status, 0, flaky.stderr);
    writeFileSync(flag, '');
    const broken = await skep('restart', 'flaky');
    assert.equal(broken.status, 1);
    assert.equal(
      broken.first,
      'error: workload flaky failed to start: the server exited before it answered the MCP initialize request',
    );
    assert.match(broken.stderr, /it ran before, so its runner keeps trying; 'skep logs flaky' shows the log/);
    assert.deepEqual(
      (await workloads()).find(([name]) => name === 'flaky'),
      ['flaky', 'starting'],
    );
  },
);

test(
  'skep run: a remote URL that refuses connections, or whose name does not resolve',
  { timeout: 120_000 },
  async (t) => {
    const { skep, workloads } = cliHome(t);
    const port = await closedPort();
    const refused = await skep('run', `http://127.0.0.1:${port}/mcp`);
    assert.equal(refused.status, 1);
    assert.equal(
      refused.first,
      `error: workload mcp failed to start: the remote server is unreachable: nothing accepts connections at 127.0.0.1:${port} (ECONNREFUSED); check the URL and that the server is running`,
    );
    assert.match(refused.stderr, /'skep logs --proxy mcp'/);
    assert.ok(refused.ms < 30_000, `no 20 s wait: ${refused.ms} ms`);

    const unresolved = await skep('run', 'http://skep-test.invalid/sse', '--transport', 'sse');
    assert.equal(unresolved.status, 1);
    // Without any DNS server the resolver answers "try again" instead of "no such name".
    const expected = [
      "the host name 'skep-test.invalid' does not resolve (DNS: ENOTFOUND); check the URL",
      "the host name 'skep-test.invalid' cannot be resolved right now (DNS: EAI_AGAIN); check the network connection and DNS settings",
    ].map((why) => `error: workload sse failed to start: the remote server is unreachable: ${why}`);
    assert.ok(expected.includes(unresolved.first), unresolved.first);
    assertNoStack(unresolved);
    assert.deepEqual(await workloads(), []);
  },
);

test(
  'names: catalog entries name their workloads; empty npx://, uvx://, cmd:// are refused before anything is created; restart waits',
  { timeout: 180_000 },
  async (t) => {
    const { home, skep, workloads } = cliHome(t);
    for (const [image, what] of [
      ['npx://', 'a package: npx://<package>, e.g. npx://@modelcontextprotocol/server-everything'],
      ['uvx://', 'a package: uvx://<package>, e.g. uvx://mcp-server-fetch'],
      ['cmd://', 'a program: cmd://<executable>, e.g. cmd:///usr/local/bin/my-server'],
    ] as const) {
      const r = await skep('run', image);
      assert.equal(r.status, 1);
      assert.equal(r.first, `error: image '${image}' names nothing to run; add ${what}`);
    }
    assert.deepEqual(await workloads(), [], 'nothing was created');

    const remote = await startRemoteMcp(t);
    const file = join(home.dir, 'registry.json');
    writeFileSync(
      file,
      JSON.stringify({
        version: '1.0.0',
        meta: { last_updated: '2026-11-24T00:00:00Z' },
        data: {
          servers: [
            {
              name: 'io.example/everything-local',
              description: 'server-everything as a local process',
              version: '1.0.0',
              packages: [
                {
                  registryType: 'oci',
                  identifier: NODE,
                  transport: { type: 'stdio' },
                  packageArguments: [
                    { type: 'positional', value: EVERYTHING_ENTRY },
                    { type: 'positional', value: 'stdio' },
                  ],
                },
              ],
            },
            {
              name: 'io.example/needs-key',
              description: 'A local server that needs a key',
              version: '1.0.0',
              packages: [
                {
                  registryType: 'oci',
                  identifier: NODE,
                  transport: { type: 'stdio' },
                  packageArguments: [
                    { type: 'positional', value: '-e' },
                    { type: 'positional', value: 'process.exit(4)' },
                  ],
                  environmentVariables: [
                    { name: 'NEEDS_KEY', description: 'The key', isRequired: true, isSecret: true },
                    { name: 'OPTIONAL_KEY', isRequired: false },
                  ],
                },
              ],
            },
            {
              name: 'io.example/remote-echo',
              description: 'A remote MCP server on loopback, at a URL ending in /mcp',
              version: '1.0.0',
              remotes: [{ type: 'streamable-http', url: remote.url }],
            },
          ],
        },
      }),
    );
    assert.equal((await skep('registry', 'set-source', '--local-path', file)).status, 0);

    // A required variable left out is refused at create, naming it and how to give it.
    const needs = await skep('run', 'needs-key');
    assert.equal(needs.status, 1);
    assert.equal(
      needs.first,
      "error: registry server 'needs-key' needs NEEDS_KEY (secret: The key); nothing was created. " +
        'Give it as an environment variable (env_vars; skep run -e NEEDS_KEY=VALUE) or a secret reference ' +
        '(secrets with target NEEDS_KEY; skep run --secret <secret>,target=NEEDS_KEY)',
    );
    assert.deepEqual(await workloads(), []);
    // Given, it passes create (and this server then exits, so the start fails and is removed).
    const given = await skep('run', 'needs-key', '-e', 'NEEDS_KEY=x');
    assert.match(given.first, /^error: workload needs-key failed to start: the server exited/);

    const local = await skep('run', 'everything-local', '--json');
    assert.equal(local.status, 0, local.stderr);
    assert.equal(JSON.parse(local.stdout).name, 'everything-local', 'not "node", the executable');
    // The same command again finds the workload it made: refused, not `everything-local-2`.
    const repeated = await skep('run', 'everything-local');
    assert.equal(repeated.status, 1);
    assert.equal(
      repeated.first,
      "error: workload everything-local already exists and is running; 'skep restart everything-local' restarts it, " +
        "'skep rm everything-local' removes it, or add --name <another-name> to run a second one ('skep list --all' lists them)",
    );
    assert.deepEqual(await workloads(), [['everything-local', 'running']]);
    const rem = await skep('run', 'remote-echo');
    assert.equal(rem.status, 0, rem.stderr);
    // The working URL: it carries the workload's access token.
    assert.match(
      rem.stdout,
      /^workload remote-echo started: http:\/\/127\.0\.0\.1:\d+\/mcp\?skep_token=[0-9a-f]{64}\n$/,
    );

    // Restart answers once each server serves again: a list right after shows them running.
    const restarted = await skep('restart', 'everything-local', 'remote-echo');
    assert.equal(restarted.status, 0, restarted.stderr);
    assert.equal(restarted.stdout, 'everything-local: restarted\nremote-echo: restarted\n');
    assert.deepEqual(await workloads(), [
      ['everything-local', 'running'],
      ['remote-echo', 'running'],
    ]);
  },
);

test(
  'user errors: exit status and first line, no stack trace; piping into head ends quietly',
  { timeout: 120_000 },
  async (t) => {
    const { home, env, skep } = cliHome(t);
    const cases: [string[], number, string][] = [
      [
        ['serve', '--port', '99999'],
        2,
        "error: option '--port <port>' argument '99999' is invalid. Use a port number from 0 to 65535.",
      ],
      [['list', '--bogus'], 2, "error: unknown option '--bogus'"],
      [
        ['run', NODE, '--proxy-port', '70000'],
        2,
        "error: option '--proxy-port <port>' argument '70000' is invalid. Use a port number from 1 to 65535.",
      ],
      [
        ['stop'],
        2,
        "error: name the workloads to stop (skep stop <name>...), or give --group <group>; 'skep list --all' lists them",
      ],
      [
        ['restart'],
        2,
        "error: name the workloads to restart (skep restart <name>...), or give --group <group>; 'skep list --all' lists them",
      ],
      [['rm', 'ghost'], 1, 'error: workload not found: ghost; nothing was changed'],
      // Usage mistakes in `skep run` exit 2, like commander's own, before anything is created.
      [['run'], 2, 'error: name a server to run, or use --from-config <file>'],
      [['run', NODE, '--env', 'NOVALUE'], 2, "error: invalid --env 'NOVALUE': use KEY=VALUE"],
      [
        ['run', NODE, '--transport', 'udp'],
        2,
        "error: invalid --transport 'udp': use stdio, sse or streamable-http",
      ],
      // A uvx:// server without uvx (here: not on the server's PATH) is refused at create.
      [
        ['run', 'uvx://mcp-server-fetch', '-e', 'PATH=/nonexistent-bin'],
        1,
        "error: cannot start 'uvx://mcp-server-fetch': uvx is not on PATH. uvx comes with uv: install it " +
          '(https://docs.astral.sh/uv/getting-started/installation/, e.g. `pipx install uv`), ' +
          'or set runtime.uvx_image to run uvx:// servers in a container',
      ],
      // One name rule (the API's) with one message, in the CLI, the API and the web UI.
      [
        ['run', NODE, '--name', 'a..b'],
        1,
        "error: invalid workload name 'a..b': contains '..' (path traversal)",
      ],
    ];
    const bad = join(home.dir, 'bad.json');
    const badText = '{"name": "x",';
    writeFileSync(bad, badText);
    let syntax = '';
    try {
      JSON.parse(badText);
    } catch (err) {
      syntax = (err as Error).message;
    }
    cases.push([
      ['run', '--from-config', bad],
      1,
      `error: ${bad} is not valid JSON (${syntax}); 'skep export <name> <file>' writes a run configuration`,
    ]);
    const missing = join(home.dir, 'missing.json');
    cases.push([
      ['run', '--from-config', missing],
      1,
      `error: cannot read ${missing}: ENOENT: no such file or directory, open '${missing}'`,
    ]);
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise((resolve) => taken.close(resolve)));
    const takenPort = (taken.address() as { port: number }).port;
    cases.push([
      ['serve', '--port', String(takenPort)],
      1,
      `error: address already in use: 127.0.0.1:${takenPort}; another program (another skep serve?) listens there: stop it, or choose another port with --port`,
    ]);
    for (const [args, status, first] of cases) {
      const r = await skep(...args);
      assert.equal(r.status, status, `skep ${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.first, first, `skep ${args.join(' ')}`);
      assertNoStack(r);
    }
    assert.equal(existsSync(missing), false);

    // `| head -2` as in the issue, and `| true`, whose reader is gone before skep writes (EPIPE
    // every time). The shell reports skep's own exit status.
    const cli = [process.execPath, ...CLI_ARGS].map((a) => `'${a}'`).join(' ');
    for (const reader of ['head -2', 'true']) {
      const r = spawnSync(
        'bash',
        ['-c', `${cli} registry list | ${reader}; echo "skep=\${PIPESTATUS[0]}" >&2`],
        {
          env,
          encoding: 'utf8',
          timeout: 60_000,
        },
      );
      assert.equal(r.stderr, 'skep=0\n', `| ${reader}`);
      if (reader === 'head -2') assert.match(r.stdout, /^NAME +KIND +TRANSPORT +DESCRIPTION\n\S+ .*\n$/);
    }
  },
);
