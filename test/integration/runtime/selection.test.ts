/**
 * Runtime selection at the API: `/health` says which runtime is in use and answers 503 when
 * the forced container engine is unusable; an image workload without an engine is a clear
 * 400 at create (nothing is stored); privileged profiles are refused unless allowed. With
 * Podman: an image present locally is not pulled, and a failed pull is a clear error.
 */
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createContext } from '../../../src/control/app/index.js';
import { buildTestApp } from '../../helpers/api.js';
import type { SkepConfig } from '../../../src/config/index.js';
import { DockerRuntime } from '../../../src/dataplane/runtime/docker/docker-runtime.js';
import { isSkepError } from '../../../src/shared/index.js';
import { tempHome } from '../../helpers/home.js';
import { requirePodman, startPodmanService, testImage } from '../../helpers/podman.js';

async function appWith(t: import('node:test').TestContext, runtime: SkepConfig['runtime']) {
  const home = tempHome(t);
  const ctx = createContext({ ...home.config, runtime }, { env: home.env });
  const app = await buildTestApp(ctx);
  t.after(async () => {
    await app.close();
    await ctx.close();
  });
  return { app, ctx, home };
}

test('forced docker runtime without an engine: /health 503 naming the runtime; image create → 400 runtime_unavailable', async (t) => {
  const { app, ctx } = await appWith(t, {
    type: 'docker',
    docker_host: `unix://${join(tmpdir(), 'skep-no-engine.sock')}`,
    allow_privileged: false,
  });
  const health = await app.inject({ method: 'GET', url: '/health' });
  assert.equal(health.statusCode, 503);
  assert.equal(health.headers['x-skep-runtime'], 'docker');
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1beta/workloads',
    payload: { name: 'img', image: 'ghcr.io/example/server:1' },
  });
  assert.equal(created.statusCode, 400, created.body);
  assert.equal(created.json<{ code: string }>().code, 'runtime_unavailable');
  assert.match(created.json<{ message: string }>().message, /needs a container engine/);
  assert.equal(ctx.workloads.rows.get('img'), undefined, 'nothing was stored');
});

test('auto runtime without an engine: /health 204 with X-Skep-Runtime process', async (t) => {
  const { app } = await appWith(t, {
    type: 'auto',
    docker_host: `unix://${join(tmpdir(), 'skep-no-engine.sock')}`,
    allow_privileged: false,
  });
  const health = await app.inject({ method: 'GET', url: '/health' });
  assert.equal(health.statusCode, 204);
  assert.equal(health.headers['x-skep-runtime'], 'process');
});

test('PermissionProfile privileged: refused with 403 unless runtime.allow_privileged', async (t) => {
  const { app } = await appWith(t, { type: 'process', allow_privileged: false });
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1beta/workloads',
    payload: { name: 'priv', image: `cmd://${process.execPath}`, permission_profile: { privileged: true } },
  });
  assert.equal(res.statusCode, 403, res.body);
  assert.equal(res.json<{ code: string }>().code, 'privileged_not_allowed');
});

test(
  'podman: a local image is used without a pull; a failed pull is a clear error',
  {
    timeout: 300_000,
  },
  async (t) => {
    if (!requirePodman(t)) return;
    const image = await testImage();
    const engine = await startPodmanService(t);
    const runtime = new DockerRuntime({
      host: engine.host,
      instance: 'seltest1',
      logMaxBytes: 1 << 20,
      logFiles: 1,
      allowPrivileged: false,
    });
    const progress: string[] = [];
    assert.equal(await runtime.ensureImage(image, (m) => progress.push(m)), 'present');
    assert.equal(progress.length, 0, 'no pull progress for a present image');
    const pulling: string[] = [];
    await assert.rejects(
      runtime.ensureImage('127.0.0.1:1/skep/missing:1', (m) => pulling.push(m)),
      (e) =>
        isSkepError(e) &&
        e.code === 'bad_gateway' &&
        /cannot pull image 127\.0\.0\.1:1\/skep\/missing:1/.test(e.message),
    );
    assert.equal(pulling[0], 'pulling image 127.0.0.1:1/skep/missing:1: 0%');
    const health = await runtime.health();
    assert.ok(health.ok && /podman/.test(health.detail ?? ''), JSON.stringify(health));
  },
);
