/**
 * `skep run` of a container image that cannot be pulled: the pull error
 * on the error's first line after the first attempt, exit 1, the workload given up on and
 * removed — not ten retries over three minutes. A private Podman service; the image
 * names a registry on a closed loopback port, so nothing leaves the machine.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { CLI_ARGS } from '../../helpers/cli.js';
import { tempHome } from '../../helpers/home.js';
import { requirePodman, startPodmanService } from '../../helpers/podman.js';
import { cleanupFirst } from './cleanup.js';

const exec = promisify(execFile);

test(
  'skep run: an image pull that fails is reported at once, with the engine’s reason',
  { timeout: 180_000 },
  async (t) => {
    if (!requirePodman(t)) return;
    // The workload is removed first, then the engine stops, then the home goes.
    const later = cleanupFirst(t);
    const home = tempHome(t, 'skep-pull-');
    const env = { ...home.env, SKEP_LOG_LEVEL: 'silent' };
    const skep = (...args: string[]) =>
      exec(process.execPath, [...CLI_ARGS, ...args], { env, timeout: 150_000 }).then(
        (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
        (err: { code: number; stdout: string; stderr: string }) => err,
      );
    const engine = await startPodmanService(t);
    later(() => engine.close());
    later(() => skep('rm', 'none'));
    mkdirSync(dirname(home.config.paths.configFile), { recursive: true });
    writeFileSync(home.config.paths.configFile, `runtime:\n  type: docker\n  docker_host: ${engine.host}\n`);

    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as { port: number };
    await new Promise((resolve) => probe.close(resolve));
    const image = `127.0.0.1:${port}/skep/none:1`;

    const started = Date.now();
    const r = await skep('run', image);
    const ms = Date.now() - started;
    assert.equal(r.code, 1, r.stderr);
    const lines = r.stderr.split('\n');
    const error = lines.find((l) => l.startsWith('error: ')) ?? '';
    assert.ok(
      error.startsWith(`error: workload none failed to start: cannot pull image ${image}: `),
      `first line of the error: ${error}`,
    );
    assert.match(error, /connection refused/);
    // Anything before it is progress: the pull's bar as the runner reported it, or, on a
    // loaded machine where the runner has reported nothing yet after 5 s, the slow note.
    for (const line of lines.slice(0, lines.indexOf(error)))
      assert.match(line, /^none: (pulling |still starting after \d+s )/);
    assert.ok(ms < 60_000, `reported after the first attempt, not after ten: ${ms} ms`);
    assert.match(r.stderr, /nothing was kept: none was removed/);
    const listed = JSON.parse((await skep('list', '--all', '--json')).stdout) as {
      workloads: { name: string; status: string }[];
    };
    assert.deepEqual(listed.workloads, [], 'a failed first start leaves nothing behind');
  },
);
