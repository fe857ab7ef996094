/**
 * The README's quick start and first server (the first CLI run, a server given a folder, a
 * registered client), then the recipe of docs/virtual-mcp.md, executed as written, by bash,
 * with HOME a fresh temporary folder and none of Skep's or XDG's variables set: what a new user
 * on a clean account gets. The commands are read from README.md, so the test follows the text.
 * Where a line cannot run here as written, the translation is in `QUICK_START` and says why:
 * `npm ci` and `npm test` are what produced this test run (the checkout is installed), `npm
 * start` is `npm run build` (done before the tests, as in `.ci/run`) plus `node dist/skep.mjs
 * serve`, and port 8080 becomes a free port (other tests share this machine). `skep` is the
 * bundle on PATH, as `npm link` would put it.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { requireService } from '../helpers/services.js';
import { cleanupFirst } from '../integration/cli/cleanup.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BUNDLE = join(ROOT, 'dist', 'skep.mjs');

/** The ```sh blocks of the README section that starts with `heading`, first `count` of them. */
function shellBlocks(readme: string, heading: string, count: number): string[][] {
  const start = readme.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `README has the section ${heading}`);
  const blocks: string[][] = [];
  const fence = /```sh\n([\s\S]*?)```/g;
  fence.lastIndex = start;
  for (let m = fence.exec(readme); m !== null && blocks.length < count; m = fence.exec(readme))
    blocks.push((m[1] as string).split('\n').filter((l) => l.trim() !== ''));
  return blocks;
}

/** Until `skep list --json` reports the workload's tools (its runner lists them once it runs). */
async function waitForTools(list: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const w = (JSON.parse(list()) as { workloads: { name: string; tools: string[] }[] }).workloads.find(
      (x) => x.name === 'everything',
    );
    if ((w?.tools.length ?? 0) > 0) return;
    if (Date.now() > deadline) throw new Error('the workload reported no tools within 30 s');
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A README line without its trailing `# comment`. */
const command = (line: string) => line.replace(/\s+#.*$/, '').trim();

/** Resolves once `pattern` appears in what `stream` sends (rejects when it ends first). */
function waitFor(stream: Readable, pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString('utf8');
      if (pattern.test(text)) {
        stream.off('data', onData);
        resolve(text);
      }
    };
    stream.on('data', onData);
    stream.once('end', () => reject(new Error(`ended before ${pattern}: ${text}`)));
  });
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function background(later: (fn: () => unknown) => void, line: string, env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn('bash', ['-c', `exec ${line}`], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = once(child, 'exit');
  later(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  return child;
}

test('README quick start and first server, as written, on a clean HOME', { timeout: 900_000 }, async (t) => {
  if (!requireService(t, 'dist/skep.mjs', existsSync(BUNDLE), 'run `npm run build` first')) return;
  const npmUp = await fetch('https://registry.npmjs.org/-/ping', {
    signal: AbortSignal.timeout(10_000),
  }).then(
    (r) => r.ok,
    () => false,
  );
  if (!requireService(t, 'the npm registry', npmUp, 'npx fetches server-everything from registry.npmjs.org'))
    return;
  if (!requireService(t, 'curl', spawnSync('curl', ['--version']).status === 0, 'apt-get install curl'))
    return;

  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const [install, api] = shellBlocks(readme, '## Quick start', 2) as [string[], string[]];
  const [firstRun, folder, client] = shellBlocks(readme, '## Your first server', 3) as [
    string[],
    string[],
    string[],
  ];

  // Clean-up newest first: the workload, then the processes, then the home.
  const later = cleanupFirst(t);
  const home = mkdtempSync(join(tmpdir(), 'skep-readme-home-'));
  later(() => rmSync(home, { recursive: true, force: true }));
  const bin = join(home, '.local', 'bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'skep'), `#!/bin/sh\nexec '${process.execPath}' '${BUNDLE}' "$@"\n`);
  chmodSync(join(bin, 'skep'), 0o755);
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!/^(SKEP_|XDG_|npm_|NODE_OPTIONS$|CI$)/.test(k)) env[k] = v;
  Object.assign(env, {
    HOME: home,
    PATH: `${bin}:${dirname(process.execPath)}:${process.env['PATH'] ?? '/usr/bin:/bin'}`,
  });
  const port = await freePort();
  const local = (line: string) => line.replaceAll('8080', String(port));
  const sh = (line: string) => {
    const r = spawnSync('bash', ['-c', line], { cwd: ROOT, env, encoding: 'utf8', timeout: 240_000 });
    assert.equal(r.status, 0, `${line}\n${r.stderr}`);
    return r.stdout;
  };

  // Quick start, block 1: `npm ci && npm start`, `npm test`; the rest of the block is comments:
  // the alternatives (another port, the offline build of better-sqlite3), not run here.
  assert.deepEqual(
    install.map(command).filter((l) => !l.startsWith('#')),
    ['npm ci && npm start', 'npm test'],
  );
  assert.ok(install.includes('# npm_config_nodedir=/usr npm ci'), 'the offline fallback is in the block');
  assert.ok(
    install.includes('# Another port: npm start -- --port 8081'),
    'the block says how to pass --port',
  );
  const serve = background(later, `node dist/skep.mjs serve --port ${port}`, env);
  await waitFor(serve.stderr as Readable, /skep serve is listening/);

  // The sentence between the blocks: /health answers 204.
  assert.match(readme, /`curl -i http:\/\/127\.0\.0\.1:8080\/health` answers `204`/);
  assert.match(sh(local('curl -si http://127.0.0.1:8080/health')), /^HTTP\/1\.1 204 /);

  // Block 2: the version with the token from the state folder of a clean HOME, and a login link.
  assert.equal(api.length, 2);
  const version = JSON.parse(sh(local(command(api[0] as string)))) as { version: string };
  assert.match(version.version, /^\d+\.\d+\.\d+/);
  assert.ok(
    existsSync(join(home, '.local', 'state', 'skep', 'api-token')),
    'the token is where the README says',
  );
  assert.equal(command(api[1] as string), 'node dist/skep.mjs ui');
  assert.match(
    sh('node dist/skep.mjs ui'),
    new RegExp(`^http://127\\.0\\.0\\.1:${port}/auth/login\\?ticket=\\S+\\n$`),
  );

  // The first CLI run.
  assert.deepEqual(firstRun.map(command), [
    'skep run npx://@modelcontextprotocol/server-everything --name everything',
    'skep list',
    'skep mcp list tools everything',
    'skep mcp call everything echo --arg message=hi',
    'skep logs -f everything',
    'skep rm everything',
  ]);
  later(() => spawnSync('bash', ['-c', 'skep rm everything'], { env, timeout: 60_000 }));
  // `skep run` prints the working URL (with the access token); `skep list` shows it without.
  assert.match(
    sh(command(firstRun[0] as string)),
    /^workload everything started: http:\/\/127\.0\.0\.1:\d+\/mcp\?skep_token=[0-9a-f]{64}\n$/,
  );
  const listed = sh('skep list');
  assert.match(
    listed,
    /^NAME .* CALLERS .*\neverything +npx:\/\/@modelcontextprotocol\/server-everything +running +http:\/\/127\.0\.0\.1:\d+\/mcp .* owner /,
  );
  assert.doesNotMatch(listed, /skep_token/);
  // The tools it offers, and a call of one, through its proxy with its own token.
  await waitForTools(() => sh('skep list --json'));
  assert.match(sh(command(firstRun[2] as string)), /^echo\b/m);
  assert.equal(sh(command(firstRun[3] as string)).trim(), 'Echo: hi');
  const logs = background(later, 'skep logs -f everything', env);
  await waitFor(logs.stdout as Readable, /\[skep\] /);
  logs.kill('SIGINT');
  // Ctrl-C ends it: cleanly once it follows, by the signal if it comes sooner.
  const [logsCode, logsSignal] = (await once(logs, 'exit')) as [number | null, string | null];
  assert.ok(logsCode === 0 || logsSignal === 'SIGINT', `logs -f ended with ${logsCode ?? logsSignal}`);
  assert.equal(sh('skep rm everything'), 'everything: removed\n');

  // The comment's alternative: the catalog entry, named as the README says.
  assert.match(firstRun[0] as string, /# or: skep run everything \(from the catalog\)$/);
  assert.match(
    sh('skep run everything'),
    /^workload everything started: http:\/\/127\.0\.0\.1:\d+\/mcp\?skep_token=[0-9a-f]{64}\n$/,
  );
  assert.equal(sh('skep rm everything'), 'everything: removed\n');

  // Giving a server a folder: the filesystem server on ~/notes, as written (a folder of the
  // clean HOME here), sees the file the user keeps there.
  assert.deepEqual(folder.map(command), [
    'skep run npx://@modelcontextprotocol/server-filesystem --name files --volume ~/notes -- ~/notes',
  ]);
  mkdirSync(join(home, 'notes'));
  writeFileSync(join(home, 'notes', 'hello.txt'), 'hi\n');
  later(() => spawnSync('bash', ['-c', 'skep rm files'], { env, timeout: 60_000 }));
  assert.match(sh(command(folder[0] as string)), /^workload files started: /);
  assert.match(sh(`skep mcp call files list_directory --arg path=${join(home, 'notes')}`), /hello\.txt/);

  // Your IDE: the client block registers Cursor, whose config then holds the running server.
  assert.deepEqual(client.map(command), ['skep client register cursor']);
  sh(command(client[0] as string));
  const cursorConfig = JSON.parse(readFileSync(join(home, '.cursor', 'mcp.json'), 'utf8')) as {
    mcpServers: Record<string, unknown>;
  };
  assert.ok('files' in cursorConfig.mcpServers, JSON.stringify(cursorConfig));
  assert.equal(sh('skep rm files'), 'files: removed\n');

  // The virtual MCP recipe of docs/virtual-mcp.md, as written: two npx servers in a group, one
  // endpoint for both, and Cursor registered for the group gets that endpoint alone.
  const vmcpPage = `\n${readFileSync(join(ROOT, 'docs', 'virtual-mcp.md'), 'utf8')}`;
  const [recipe] = shellBlocks(vmcpPage, '# Virtual MCP', 1) as [string[]];
  assert.deepEqual(recipe.map(command), [
    'skep group create team',
    'skep run npx://@modelcontextprotocol/server-memory --name memory --group team',
    'skep run npx://@modelcontextprotocol/server-everything --name everything --group team',
    'skep vmcp team --name team-hub',
    'skep client register cursor --group team',
  ]);
  later(() => spawnSync('bash', ['-c', 'skep rm team-hub memory everything'], { env, timeout: 60_000 }));
  for (const line of recipe) sh(command(line));
  const hubTools = sh('skep mcp list tools team-hub');
  assert.match(hubTools, /^memory_read_graph\b/m);
  assert.match(hubTools, /^everything_echo\b/m);
  const teamConfig = JSON.parse(readFileSync(join(home, '.cursor', 'mcp.json'), 'utf8')) as {
    mcpServers: Record<string, unknown>;
  };
  assert.deepEqual(Object.keys(teamConfig.mcpServers), ['team-hub']);
  assert.equal(
    sh('skep rm team-hub memory everything'),
    'team-hub: removed\nmemory: removed\neverything: removed\n',
  );

  serve.kill('SIGTERM');
  const [serveCode] = (await once(serve, 'exit')) as [number | null];
  assert.equal(serveCode, 0);
});
