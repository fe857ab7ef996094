/** `skep registry ...` through the real CLI process (src/control/cli/main.ts under tsx). */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CLI_ARGS, type CliResult, runCli } from '../../helpers/cli.js';
import { tempHome } from '../../helpers/home.js';
import { generateDocument } from '../../unit/registry/fixtures.js';
import { httpServer } from './helpers.js';

/** Like runCli, but without blocking this process (the test's own HTTP server must answer). */
async function runCliAsync(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  const child = spawn(process.execPath, [...CLI_ARGS, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const [status] = (await once(child, 'exit')) as [number | null];
  return { status, stdout, stderr };
}

test('skep registry list / search / info on the built-in catalog, with --json', (t) => {
  const home = tempHome(t);
  const list = runCli(['registry', 'list', '--json'], home.env);
  assert.equal(list.status, 0, list.stderr);
  const servers = JSON.parse(list.stdout).servers as { name: string }[];
  assert.ok(servers.length >= 30);

  const search = runCli(['registry', 'search', 'CLOUDFLARE', '--json'], home.env);
  const found = JSON.parse(search.stdout).servers as { name: string }[];
  assert.ok(found.length >= 4 && found.every((s) => s.name.startsWith('com.cloudflare/')));

  const info = runCli(['registry', 'info', 'time', '--json'], home.env);
  assert.equal(info.status, 0, info.stderr);
  assert.equal(JSON.parse(info.stdout).server.image, 'mcp/time');

  const table = runCli(['registry', 'info', 'github'], home.env);
  assert.match(table.stdout, /Image:\s+ghcr\.io\/github\/github-mcp-server/);
  assert.match(table.stdout, /Env GITHUB_PERSONAL_ACCESS_TOKEN:.*required, secret/);
  // What it needs to start here, and the command that gives its required variable.
  assert.match(
    table.stdout,
    /^Runs with: +a container engine \(Docker or Podman\); .*systemctl --user start podman\.socket/m,
  );
  assert.match(
    table.stdout,
    /^Run it: +skep run github --secret <secret>,target=GITHUB_PERSONAL_ACCESS_TOKEN$/m,
  );

  const missing = runCli(['registry', 'info', 'no-such-server'], home.env);
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /not in the registry/);
});

test('skep registry set-source: local path, URL with --allow-private-ip, refusal without it, back to built-in', async (t) => {
  const home = tempHome(t);
  const file = join(home.dir, 'team.json');
  writeFileSync(file, JSON.stringify(generateDocument(7)));
  const local = runCli(['registry', 'set-source', '--local-path', file, '--json'], home.env);
  assert.equal(local.status, 0, local.stderr);
  assert.deepEqual(JSON.parse(local.stdout), { type: 'file' });
  assert.equal(JSON.parse(runCli(['registry', 'list', '--json'], home.env).stdout).servers.length, 7);

  const doc = JSON.stringify(generateDocument(9));
  const src = await httpServer(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(doc);
  });
  const refused = await runCliAsync(
    ['registry', 'set-source', '--url', `https://localhost:${src.port}/r.json`],
    home.env,
  );
  assert.equal(refused.status, 1);
  assert.match(refused.stderr, /is a loopback address; set allow_private_ip/);

  const url = await runCliAsync(
    ['registry', 'set-source', '--url', `${src.url}/r.json`, '--allow-private-ip'],
    home.env,
  );
  assert.equal(url.status, 0, url.stderr);
  assert.match(url.stdout, /type url/);
  assert.equal(
    JSON.parse((await runCliAsync(['registry', 'search', 'server', '--json'], home.env)).stdout).servers
      .length,
    9,
  );

  const two = runCli(['registry', 'set-source', '--builtin', '--url', 'https://x.example/r.json'], home.env);
  assert.equal(two.status, 2, "a usage mistake exits 2, like commander's own");
  assert.match(two.stderr, /exactly one of/);

  const builtin = runCli(['registry', 'set-source', '--builtin', '--json'], home.env);
  assert.deepEqual(JSON.parse(builtin.stdout), { type: 'default' });
});
