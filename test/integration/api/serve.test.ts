import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, request } from 'node:http';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { execFile } from 'node:child_process';
import { CLI_ARGS, type CliResult, runCli, startServe } from '../../helpers/cli.js';
import { tempHome } from '../../helpers/home.js';
import { recordingOpener } from '../../helpers/opener.js';

function getOverSocket(
  socketPath: string,
  path: string,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, method: 'GET', host: 'localhost' }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('skep serve on TCP: discovery file, /health 204 with its nonce, graceful SIGTERM removes the file', async (t) => {
  const home = tempHome(t);
  const file = home.config.paths.discoveryFile;
  const serve = await startServe(t, home.env, file);
  const info = JSON.parse(readFileSync(file, 'utf8'));
  assert.deepEqual(Object.keys(info).sort(), ['nonce', 'pid', 'proof_key', 'started_at', 'url']);
  assert.match(info.proof_key, /^[A-Za-z0-9_-]{43}$/);
  assert.match(info.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  const res = await fetch(`${serve.url}/health`);
  assert.equal(res.status, 204);
  assert.equal(res.headers.get('x-skep-nonce'), serve.nonce);
  assert.equal(await serve.stop(), 0);
  assert.equal(existsSync(file), false, 'discovery file removed on shutdown');
});

test('F1: skep serve generates the API token file (0600), logs its path and never the token; no token → 401', async (t) => {
  const home = tempHome(t);
  const env: NodeJS.ProcessEnv = { ...home.env, SKEP_LOG_LEVEL: 'info' };
  delete env['SKEP_API_TOKEN'];
  const serve = await startServe(t, env, home.config.paths.discoveryFile);
  const tokenFile = home.config.paths.apiTokenFile;
  assert.equal(statSync(tokenFile).mode & 0o777, 0o600);
  assert.equal(`${serve.token}\n`, readFileSync(tokenFile, 'utf8'));
  const without = await fetch(`${serve.url}/api/v1beta/groups`);
  assert.equal(without.status, 401);
  assert.equal(without.headers.get('www-authenticate'), 'Bearer realm="skep"');
  assert.equal(((await without.json()) as { code: string }).code, 'unauthorized');
  const wrong = await fetch(`${serve.url}/api/v1beta/groups`, {
    headers: { authorization: `Bearer ${'x'.repeat(43)}` },
  });
  assert.equal(wrong.status, 401);
  const right = await fetch(`${serve.url}/api/v1beta/groups`, { headers: serve.auth });
  assert.equal(right.status, 200);
  assert.equal(await serve.stop(), 0);
  const log = serve.stderr();
  assert.match(log, /skep serve is listening/);
  assert.ok(log.includes(tokenFile), 'the log names the token file');
  assert.ok(!log.includes(serve.token ?? '<none>'), 'the log never holds the token');
});

test("F1: SKEP_API_TOKEN in skep serve's environment is the token; no file is written and the log names the variable", async (t) => {
  const home = tempHome(t);
  const token = `env-token-${'z'.repeat(40)}`;
  const env = { ...home.env, SKEP_LOG_LEVEL: 'info', SKEP_API_TOKEN: token };
  const serve = await startServe(t, env, home.config.paths.discoveryFile);
  assert.equal(serve.token, token);
  assert.equal(existsSync(home.config.paths.apiTokenFile), false);
  assert.equal((await fetch(`${serve.url}/api/v1beta/version`, { headers: serve.auth })).status, 200);
  assert.equal(await serve.stop(), 0);
  assert.match(serve.stderr(), /"api_token":"\$SKEP_API_TOKEN"/);
  assert.ok(!serve.stderr().includes(token));
});

test('a token file others can read stops skep serve with a clear message (no stack trace)', async (t) => {
  const home = tempHome(t);
  mkdirSync(dirname(home.config.paths.apiTokenFile), { recursive: true });
  writeFileSync(home.config.paths.apiTokenFile, `${'k'.repeat(43)}\n`, { mode: 0o644 });
  const res = runCli(['serve', '--port', '0'], home.env);
  assert.equal(res.status, 1);
  assert.match(res.stderr, /api-token can be read by other users \(mode 644\)/);
  assert.doesNotMatch(res.stderr, /\n\s+at /);
  assert.equal(existsSync(home.config.paths.discoveryFile), false);
});

test('skep serve --socket: mode 0660 in a 0700 directory, answers without a token, removed on shutdown', async (t) => {
  const home = tempHome(t);
  const socketPath = join(home.dir, 'run', 'skep.sock');
  const serve = await startServe(t, home.env, home.config.paths.discoveryFile, [
    '--openapi',
    `--socket=${socketPath}`,
  ]);
  assert.equal(serve.url, `unix://${socketPath}`);
  assert.ok(statSync(socketPath).isSocket());
  assert.equal(statSync(socketPath).mode & 0o777, 0o660);
  assert.equal(statSync(dirname(socketPath)).mode & 0o777, 0o700, 'the directory skep created is private');
  const health = await getOverSocket(socketPath, '/health');
  assert.equal(health.status, 204);
  assert.equal(health.headers['x-skep-nonce'], serve.nonce);
  // No token over the socket: its file mode decides who connects (ToolHive Studio works unchanged).
  const groups = await getOverSocket(socketPath, '/api/v1beta/groups');
  assert.equal(groups.status, 200);
  assert.equal(existsSync(home.config.paths.apiTokenFile), false, 'a socket-only server needs no token');
  assert.deepEqual(JSON.parse(groups.body).groups[0].name, 'default');
  assert.equal(await serve.stop(), 0);
  assert.equal(existsSync(socketPath), false, 'socket removed on shutdown');
});

test('a second skep serve refuses to start while a healthy one runs', async (t) => {
  const home = tempHome(t);
  const file = home.config.paths.discoveryFile;
  const first = await startServe(t, home.env, file);
  await assert.rejects(startServe(t, home.env, file), /another skep server is already running/);
  // The first one is untouched.
  assert.equal(JSON.parse(readFileSync(file, 'utf8')).pid, first.child.pid);
  assert.equal((await fetch(`${first.url}/health`)).status, 204);
  await first.stop();
});

test('a stale discovery file (dead pid) is replaced', async (t) => {
  const home = tempHome(t);
  const file = home.config.paths.discoveryFile;
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(
    file,
    JSON.stringify({
      url: 'http://127.0.0.1:1',
      pid: 2 ** 22 + 12345,
      nonce: 'dead',
      started_at: new Date(0).toISOString(),
    }),
  );
  const serve = await startServe(t, home.env, file);
  assert.equal(JSON.parse(readFileSync(file, 'utf8')).pid, serve.child.pid);
  await serve.stop();
});

test('skep ui --print: a one-time login URL from the running server, with the token read like the server does', async (t) => {
  const home = tempHome(t);
  const none = runCli(['ui', '--print'], home.env);
  assert.equal(none.status, 1);
  assert.match(none.stderr, /no skep serve is running/);

  const serve = await startServe(t, home.env, home.config.paths.discoveryFile);
  const printed = runCli(['ui', '--print'], home.env);
  assert.equal(printed.status, 0, printed.stderr);
  const url = new URL(printed.stdout.trim());
  assert.equal(url.origin, serve.url);
  assert.equal(url.pathname, '/auth/login');
  assert.match(url.searchParams.get('ticket') ?? '', /^[A-Za-z0-9_-]{43}$/);

  const login = await fetch(url, { redirect: 'manual' });
  assert.equal(login.status, 200);
  const csrf = /#skep-csrf=([A-Za-z0-9_-]{43})"/.exec(await login.text())?.[1] ?? '';
  const cookie = login.headers.get('set-cookie') ?? '';
  assert.match(cookie, /^skep_session=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=\/$/);
  const session = cookie.split(';')[0] ?? '';
  const me = await fetch(`${serve.url}/api/v1beta/version`, {
    headers: { cookie: session, 'sec-fetch-site': 'same-origin', 'x-skep-csrf': csrf },
  });
  assert.equal(me.status, 200, "the session works from the server's own pages, with its CSRF token");
  assert.equal((await fetch(url, { redirect: 'manual' })).status, 401, 'the link works once');

  // Without --print and without a display it still prints the URL (nothing to open).
  const env = { ...home.env };
  delete env['DISPLAY'];
  delete env['WAYLAND_DISPLAY'];
  const plain = runCli(['ui'], env);
  assert.equal(plain.status, 0, plain.stderr);
  assert.match(plain.stdout, /^http:\/\/127\.0\.0\.1:\d+\/auth\/login\?ticket=/);

  const wrong = runCli(['ui', '--print'], { ...home.env, SKEP_API_TOKEN: 'w'.repeat(43) });
  assert.equal(wrong.status, 1);
  assert.match(wrong.stderr, /refused the API token from SKEP_API_TOKEN/);
  await serve.stop();
});

test("skep ui opens the login URL through a 0600 page: the opener's command line holds no ticket", async (t) => {
  const home = tempHome(t);
  const serve = await startServe(t, home.env, home.config.paths.discoveryFile);
  const opener = recordingOpener(t);
  const res = runCli(['ui'], { ...home.env, ...opener.env });
  assert.equal(res.status, 0, res.stderr);
  const printed = res.stdout.trim();
  const call = await opener.waitForCall();
  assert.equal(call.argv.length, 1);
  const page = fileURLToPath(call.argv[0] ?? '');
  assert.equal(dirname(page), join(home.config.paths.stateDir, 'open'));
  assert.equal(statSync(dirname(page)).mode & 0o777, 0o700);
  assert.equal(call.mode, 0o600, 'only the user reads the page');
  assert.ok(!call.argv.join(' ').includes('ticket'), call.argv.join(' '));
  const ticket = new URL(printed).searchParams.get('ticket') ?? '';
  assert.ok(!call.argv.join(' ').includes(ticket));
  assert.equal(opener.forwardsTo(call), printed, 'the page forwards to the login URL');
  await serve.stop();
});

/** The CLI without blocking this process (the impostor below answers from here). */
function runCliAsync(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [...CLI_ARGS, ...args], { env, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = (err as { code?: unknown } | null)?.code;
      resolve({ status: err === null ? 0 : typeof code === 'number' ? code : null, stdout, stderr });
    });
  });
}

test('skep ui: a stale discovery file naming an impostor\'s port gets no token; the CLI stops with "the discovery file is stale"', async (t) => {
  const home = tempHome(t);
  const file = home.config.paths.discoveryFile;
  const serve = await startServe(t, home.env, file);
  const stale = readFileSync(file, 'utf8');
  const port = Number(new URL(serve.url).port);
  assert.equal(await serve.stop(), 0);

  // Another account takes the freed port and answers like skep serve would, as far as it can.
  const seen: { method: string; url: string; headers: IncomingHttpHeaders }[] = [];
  const impostor = createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    req.resume();
    const body =
      req.url?.startsWith('/auth/challenge') === true
        ? { proof: 'A'.repeat(43) }
        : { url: `http://127.0.0.1:${port}/auth/login?ticket=x` };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve, reject) => {
    impostor.once('error', reject);
    impostor.listen(port, '127.0.0.1', resolve);
  });
  t.after(() => new Promise<void>((resolve) => impostor.close(() => resolve())));
  // The file a crash would have left behind.
  writeFileSync(file, stale, { mode: 0o600 });
  const opener = recordingOpener(t);
  const res = await runCliAsync(['ui'], { ...home.env, ...opener.env });
  assert.equal(res.status, 1, res.stdout);
  assert.match(
    res.stderr,
    /the discovery file is stale \(the program at http:\/\/127\.0\.0\.1:\d+ cannot prove/,
  );
  assert.equal(res.stdout, '', 'no URL printed');
  assert.deepEqual(
    seen.map((r) => `${r.method} ${r.url.split('?')[0]}`),
    ['GET /auth/challenge'],
    'only the challenge reached it',
  );
  assert.ok(
    seen.every((r) => r.headers.authorization === undefined),
    'no Authorization header',
  );
  assert.deepEqual(opener.calls(), [], 'nothing opened');

  // A discovery file without a proof key (another version) is stale too, and nothing is sent.
  const { proof_key: _dropped, ...old } = JSON.parse(stale) as Record<string, unknown>;
  writeFileSync(file, JSON.stringify(old), { mode: 0o600 });
  const before = seen.length;
  const again = await runCliAsync(['ui', '--print'], home.env);
  assert.equal(again.status, 1);
  assert.match(again.stderr, /the discovery file is stale \(.*holds no proof key/);
  assert.equal(seen.length, before, 'no request at all');
});
