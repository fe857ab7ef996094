/**
 * `npm start` (scripts/start.mjs) on the build `.ci/run` made: it says the build is up to date,
 * rebuilds nothing, runs `skep serve` with the options after `--`, and a SIGTERM sent to npm
 * itself reaches `skep serve`, which stops cleanly. npm passes the signal to the script's
 * shell, and a shell that is not the script dies without passing it on (leaving `skep serve`
 * running, orphaned), so the script `exec`s node.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { BUILD_STAMP, BUILT, staleReason } from '../../scripts/build-freshness.mjs';
import { tempHome } from '../helpers/home.js';
import { freePort } from '../helpers/net.js';
import { requireService } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

test('npm start reuses an up-to-date build and serves on the port given after --', async (t) => {
  if (
    !requireService(t, 'dist/skep.mjs', existsSync(join(ROOT, 'dist/skep.mjs')), 'run `npm run build` first')
  )
    return;
  assert.equal(staleReason(ROOT), undefined, 'the build is fresh (npm run build ran last)');
  const files = [...BUILT, BUILD_STAMP];
  const before = files.map((f) => statSync(join(ROOT, f)).mtimeMs);
  const home = tempHome(t);
  const port = await freePort();
  const child = spawn('npm', ['start', '--', '--port', String(port)], {
    cwd: ROOT,
    env: { ...home.env, SKEP_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    // A `skep serve` that outlived npm (the failure this test looks for) holds our stderr pipe.
    spawnSync('pkill', ['-f', `dist/skep.mjs serve --port ${port}$`]);
    child.stderr.destroy();
  });
  await waitFor(
    'skep serve to answer /health',
    async () =>
      (await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined))?.status === 204 || undefined,
    60_000,
  );
  assert.match(stderr, /npm start: the build in dist\/ is up to date/);
  assert.deepEqual(
    files.map((f) => statSync(join(ROOT, f)).mtimeMs),
    before,
    'nothing was rebuilt',
  );
  child.kill('SIGTERM'); // to npm
  await exited;
  await waitFor(
    'skep serve to stop after npm got SIGTERM',
    async () =>
      (await fetch(`http://127.0.0.1:${port}/health`).catch(() => 'closed')) === 'closed' || undefined,
    20_000,
  );
});
