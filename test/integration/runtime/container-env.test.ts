/**
 * No secret of Skep's environment reaches a container server: the container runtime builds a
 * container's environment from the server spec alone (the run configuration's variables and
 * secrets, plus `PORT`/`MCP_PORT` for HTTP servers and the egress proxy variables), never from
 * Skep's own environment. Checked on a real container (Podman): what the engine recorded as
 * the container's environment, and what the server process inside reports.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { DockerRuntime } from '../../../src/dataplane/runtime/docker/docker-runtime.js';
import { tempHome } from '../../helpers/home.js';
import { requirePodman, startPodmanService, testImage } from '../../helpers/podman.js';
import { waitFor } from '../../helpers/wait.js';

const SKEP_SECRETS = {
  SKEP_SECRETS_PASSWORD: 'master-password-f4',
  SKEP_API_TOKEN: 'api-token-f4',
  AWS_SECRET_ACCESS_KEY: 'aws-secret-f4',
  GITHUB_TOKEN: 'ghp-f4',
};

test(
  'a container server gets the run configuration’s variables (+ PORT), nothing of Skep’s environment',
  { timeout: 600_000 },
  async (t) => {
    if (!requirePodman(t)) return;
    const saved = Object.fromEntries(Object.keys(SKEP_SECRETS).map((k) => [k, process.env[k]]));
    Object.assign(process.env, SKEP_SECRETS);
    t.after(() => {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    });
    // node:test runs after-hooks in the order they were added: this one, added before the
    // engine's own, stops and removes the container while the engine still answers.
    const made: { runtime?: DockerRuntime; handle?: Awaited<ReturnType<DockerRuntime['start']>> } = {};
    t.after(async () => {
      // stop() waits on unref'd timers (a runner's proxy keeps its loop alive); here nothing
      // else would, and node:test would cancel the hook.
      const keepAlive = setInterval(() => undefined, 1000);
      try {
        await made.handle?.stop();
        await made.runtime?.removeWorkload('env-ctr').catch(() => undefined);
      } finally {
        clearInterval(keepAlive);
      }
    });
    const image = await testImage();
    const home = tempHome(t);
    const engine = await startPodmanService(t);
    const runtime = (made.runtime = new DockerRuntime({
      host: engine.host,
      instance: 'envtest1',
      logMaxBytes: 1 << 20,
      logFiles: 1,
      allowPrivileged: false,
    }));
    const logFile = join(home.dir, 'env-ctr.log');
    // The server prints its environment to stderr (the log) and then stays up.
    const handle = (made.handle = await runtime.start({
      name: 'env-ctr',
      image,
      args: [
        '-e',
        'process.stderr.write("ENV " + JSON.stringify(process.env) + "\\n"); setInterval(() => {}, 1e6)',
      ],
      env: { CONFIGURED: 'from-run-config' },
      transport: 'stdio',
      logFile,
      permissionProfile: { network: { outbound: { insecure_allow_all: true } } },
    }));
    const recorded =
      ((await runtime.docker.getContainer(handle.id).inspect()) as { Config: { Env?: string[] } }).Config
        .Env ?? [];
    const names = recorded.map((e) => e.slice(0, e.indexOf('=')));
    assert.ok(recorded.includes('CONFIGURED=from-run-config'), 'the configured variable is set');
    for (const name of Object.keys(SKEP_SECRETS))
      assert.ok(!names.includes(name), `${name} was given to the container`);
    assert.ok(!names.some((n) => n.startsWith('SKEP_')), 'a SKEP_* variable was given to the container');

    const line = await waitFor('the server to print its environment', () =>
      readFileSync(logFile, 'utf8')
        .split('\n')
        .find((l) => l.startsWith('ENV ')),
    );
    const seen = JSON.parse(line.slice(4)) as Record<string, string>;
    assert.equal(seen['CONFIGURED'], 'from-run-config');
    for (const [name, value] of Object.entries(SKEP_SECRETS)) {
      assert.equal(seen[name], undefined, `${name} reached the server`);
      assert.ok(!Object.values(seen).includes(value), `the value of ${name} reached the server`);
    }
  },
);
