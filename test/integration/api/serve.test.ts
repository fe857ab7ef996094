import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { startServe } from '../../helpers/cli.js';
import { tempHome } from '../../helpers/home.js';

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
  assert.deepEqual(Object.keys(info).sort(), ['nonce', 'pid', 'started_at', 'url']);
  assert.match(info.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  const res = await fetch(`${serve.url}/health`);
  assert.equal(res.status, 204);
  assert.equal(res.headers.get('x-skep-nonce'), serve.nonce);
  assert.equal(await serve.stop(), 0);
  assert.equal(existsSync(file), false, 'discovery file removed on shutdown');
});

test('skep serve --socket: mode 0660, answers over the socket, removed on shutdown', async (t) => {
  const home = tempHome(t);
  const socketPath = join(home.dir, 'run', 'skep.sock');
  const serve = await startServe(t, home.env, home.config.paths.discoveryFile, [
    '--openapi',
    `--socket=${socketPath}`,
  ]);
  assert.equal(serve.url, `unix://${socketPath}`);
  assert.ok(statSync(socketPath).isSocket());
  assert.equal(statSync(socketPath).mode & 0o777, 0o660);
  const health = await getOverSocket(socketPath, '/health');
  assert.equal(health.status, 204);
  assert.equal(health.headers['x-skep-nonce'], serve.nonce);
  const groups = await getOverSocket(socketPath, '/api/v1beta/groups');
  assert.equal(groups.status, 200);
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
