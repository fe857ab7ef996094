/**
 * `npm start` runs the esbuild bundle `dist/skep.mjs`, not the sources: check that the
 * bundle starts and serves every domain (a dependency that cannot be bundled shows up here).
 * `.ci/run` builds before testing; locally, run `npm run build` first.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { apiTokenFor } from '../helpers/api.js';
import { tempHome } from '../helpers/home.js';
import { requireService } from '../helpers/services.js';

const BUNDLE = fileURLToPath(new URL('../../dist/skep.mjs', import.meta.url));
const ECHO = fileURLToPath(new URL('../../bench/fixtures/echo-server.mjs', import.meta.url));

test('the bundled CLI starts skep serve and answers on every domain', async (t) => {
  if (!requireService(t, 'dist/skep.mjs', existsSync(BUNDLE), 'run `npm run build` first')) return;
  const home = tempHome(t);
  const version = spawnSync(process.execPath, [BUNDLE, 'version', '--json'], {
    env: home.env,
    encoding: 'utf8',
  });
  assert.equal(version.status, 0, version.stderr);
  assert.match(JSON.parse(version.stdout).version, /^\d+\.\d+\.\d+/);

  const child = spawn(process.execPath, [BUNDLE, 'serve', '--port', '0'], { env: home.env, stdio: 'ignore' });
  const exited = once(child, 'exit');
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  let url: string | undefined;
  for (let i = 0; i < 300 && url === undefined; i++) {
    try {
      const info = JSON.parse(readFileSync(home.config.paths.discoveryFile, 'utf8')) as {
        url: string;
        pid: number;
      };
      if (info.pid === child.pid) url = info.url;
    } catch {
      await sleep(100);
    }
  }
  assert.ok(url, 'serve wrote its discovery file');
  assert.equal((await fetch(`${url}/health`)).status, 204);
  // Every other route needs the API token, read from where the bundle put it.
  const headers = { authorization: `Bearer ${apiTokenFor(home.env)}` };
  assert.equal((await fetch(`${url}/api/v1beta/version`)).status, 401);
  for (const path of [
    '/api/v1beta/version',
    '/api/v1beta/groups',
    '/api/v1beta/workloads?all=true',
    '/api/v1beta/registry',
    '/registry/default/v0.1/servers?limit=1',
    '/api/v1beta/discovery/clients',
    '/api/v1beta/skills',
    '/api/openapi.json',
    '/metrics',
  ]) {
    const res = await fetch(`${url}${path}`, { headers });
    assert.equal(res.status, 200, `${path} → ${res.status}`);
  }
  // A workload started through the bundle runs under the bundled runner (dist/runner.mjs).
  const created = await fetch(`${url}/api/v1beta/workloads`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ name: 'bundled-echo', image: `cmd://${process.execPath}`, cmd_arguments: [ECHO] }),
  });
  assert.equal(created.status, 201, await created.clone().text());
  let status = '';
  for (let i = 0; i < 300 && status !== 'running'; i++) {
    const res = await fetch(`${url}/api/v1beta/workloads/bundled-echo/status`, { headers });
    status = ((await res.json()) as { status: string }).status;
    if (status !== 'running') await sleep(100);
  }
  assert.equal(status, 'running');
  const removed = await fetch(`${url}/api/v1beta/workloads/bundled-echo`, { method: 'DELETE', headers });
  assert.equal(removed.status, 202);
  for (let i = 0; i < 300; i++) {
    const res = await fetch(`${url}/api/v1beta/workloads/bundled-echo/status`, { headers });
    if (res.status === 404) break;
    await sleep(100);
  }
  assert.equal((await fetch(`${url}/api/v1beta/workloads/bundled-echo/status`, { headers })).status, 404);

  child.kill('SIGTERM');
  const [code] = await exited;
  assert.equal(code, 0);
});
