/**
 * User flow through the real CLI (`skep` from src under tsx, its own processes): run a
 * process workload, list, export, stop, start another from the exported config, remove.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { cliEntry } from '../../src/workloads/index.js';
import { EVERYTHING_ENTRY, waitForStatus, workloadHome } from '../integration/workloads/helpers.js';

const run = promisify(execFile);

test('CLI: run, list, export, stop, run --from-config, rm', { timeout: 300_000 }, async (t) => {
  const { ctx, home } = workloadHome(t);
  const skep = async (...args: string[]) => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', cliEntry(), ...args], {
      env: { ...home.env, SKEP_LOG_LEVEL: 'silent' },
      timeout: 120_000,
    });
    return stdout;
  };

  const started = JSON.parse(
    await skep(
      'run',
      `cmd://${process.execPath}`,
      '--name',
      'cli-one',
      '--no-autostart',
      '--env',
      'X=1',
      '--json',
      '--',
      EVERYTHING_ENTRY,
      'stdio',
    ),
  ) as {
    name: string;
    port: number;
    url: string;
  };
  assert.equal(started.name, 'cli-one');
  // The working URL: the workload answers only its owner, so it carries the access token.
  const token = ctx.workloads.rows.get('cli-one')?.accessToken as string;
  assert.match(token, /^[0-9a-f]{64}$/);
  assert.equal(started.url, `http://127.0.0.1:${started.port}/mcp?skep_token=${token}`);

  await waitForStatus(ctx, 'cli-one', 'running');
  // --no-autostart: it runs now, and `skep serve` will not resume it after a reboot.
  assert.equal(ctx.workloads.rows.get('cli-one')?.autostart, false);

  // The runner's log reads as text (time, level, message, fields); --raw keeps its JSON lines.
  const proxyLog = await skep('logs', '--proxy', 'cli-one');
  assert.match(proxyLog, /^\d{2}:\d{2}:\d{2}\.\d{3} INFO {2}.*proxy listening/m);
  assert.doesNotMatch(proxyLog, /^\{/m);
  const rawLog = (await skep('logs', '--proxy', '--raw', 'cli-one')).split('\n').filter((l) => l !== '');
  assert.ok(rawLog.length > 0);
  for (const l of rawLog) assert.equal(typeof (JSON.parse(l) as { msg?: unknown }).msg, 'string', l);

  const listed = JSON.parse(await skep('list', '--json')) as {
    workloads: { name: string; status: string; url: string }[];
  };
  assert.deepEqual(
    listed.workloads.map((w) => [w.name, w.status, w.url]),
    [['cli-one', 'running', started.url]],
  );

  const exported = JSON.parse(await skep('export', 'cli-one')) as Record<string, unknown>;
  assert.equal(exported['schema_version'], 'v0.1.0');
  assert.deepEqual(exported['env_vars'], { X: '1' });
  assert.deepEqual(exported['cmd_args'], [EVERYTHING_ENTRY, 'stdio']);

  assert.match(await skep('stop', 'cli-one'), /cli-one: stopped/);
  assert.equal(ctx.workloads.status('cli-one').status, 'stopped');
  const all = JSON.parse(await skep('list', '--all', '--json')) as {
    workloads: { name: string; status: string }[];
  };
  assert.deepEqual(
    all.workloads.map((w) => [w.name, w.status]),
    [['cli-one', 'stopped']],
  );

  const file = join(home.dir, 'cli-one.json');
  writeFileSync(file, JSON.stringify(exported));
  const second = JSON.parse(await skep('run', '--from-config', file, '--name', 'cli-two', '--json')) as {
    name: string;
    port: number;
  };
  assert.equal(second.name, 'cli-two');
  assert.notEqual(second.port, started.port, 'a taken port is not reused');
  await waitForStatus(ctx, 'cli-two', 'running');
  assert.deepEqual(ctx.workloads.exportConfig('cli-two').env_vars, { X: '1' });

  assert.match(await skep('rm', 'cli-one', 'cli-two'), /cli-one: removed\ncli-two: removed/);
  assert.deepEqual(ctx.workloads.rows.names(), []);

  // A bare name is looked up in the registry: unknown names are a clear error.
  await assert.rejects(skep('run', 'no-such-server-anywhere'), /is not in the registry/);
  await assert.rejects(skep('stop', 'nope'), /workload not found: nope/);
});

test(
  'CLI: run says started only once the server answers, reports one that fails, and makes local path arguments absolute',
  {
    timeout: 300_000,
  },
  async (t) => {
    const { ctx, home } = workloadHome(t);
    // Run from the folder that holds server-everything, naming its entry by a relative path.
    const cwd = dirname(dirname(EVERYTHING_ENTRY));
    const skep = (...args: string[]) =>
      run(process.execPath, ['--import', 'tsx', cliEntry(), ...args], {
        cwd,
        env: { ...home.env, SKEP_LOG_LEVEL: 'silent' },
        timeout: 120_000,
      });

    const { stdout } = await skep(
      'run',
      `cmd://${process.execPath}`,
      '--name',
      'rel',
      '--',
      'dist/index.js',
      'stdio',
    );
    assert.match(stdout, /^workload rel started: http:\/\/127\.0\.0\.1:\d+\/mcp\?skep_token=[0-9a-f]{64}$/m);
    assert.equal(ctx.workloads.status('rel').status, 'running', '"started" means running');
    assert.deepEqual(ctx.workloads.exportConfig('rel').cmd_args, [EVERYTHING_ENTRY, 'stdio']);

    // A server that exits at once: exit status 1 and the reason; a server that never worked is
    // given up on, not retried for minutes: kept with --keep-on-failure (status error, runner
    // stopped), else removed.
    const crash = await skep(
      'run',
      `cmd://${process.execPath}`,
      '--name',
      'crash',
      '--keep-on-failure',
      '--',
      '-e',
      'process.exit(3)',
    ).then(
      () => assert.fail('skep run of a crashing server must fail'),
      (err: { code: number; stderr: string }) => err,
    );
    assert.equal(crash.code, 1);
    assert.equal(
      // (a slow machine may show `crash: still starting after 5s ...` before it)
      crash.stderr.split('\n').find((l) => l.startsWith('error: ')),
      'error: workload crash failed to start: the server exited before it answered the MCP initialize request',
    );
    assert.match(
      crash.stderr,
      /crash is stopped with status error; .*'skep restart crash'.*'skep logs crash'/,
    );
    assert.deepEqual(ctx.workloads.status('crash'), {
      status: 'error',
      status_context: 'the server exited before it answered the MCP initialize request',
    });
    assert.equal(ctx.workloads.rows.get('crash')?.runnerPid, undefined, 'its runner is stopped');
    const gone = await skep(
      'run',
      `cmd://${process.execPath}`,
      '--name',
      'gone',
      '--',
      '-e',
      'process.exit(3)',
    ).then(
      () => assert.fail('skep run of a crashing server must fail'),
      (err: { code: number; stderr: string }) => err,
    );
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /nothing was kept: gone was removed/);
    assert.equal(ctx.workloads.rows.get('gone'), undefined);

    // A program that is not installed: refused before anything is written.
    const missing = await skep('run', 'cmd://skep-no-such-program').then(
      () => assert.fail('must fail'),
      (err: { code: number; stderr: string }) => err,
    );
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /cannot start 'skep-no-such-program': it was not found on PATH/);
    // A path is a local program (cmd://), never a container image.
    const path = await skep('run', './no-such-server.sh').then(
      () => assert.fail('must fail'),
      (err: { code: number; stderr: string }) => err,
    );
    assert.match(path.stderr, /cannot start '\/.*\/no-such-server\.sh': it was not found/);
    assert.deepEqual(ctx.workloads.rows.names().sort(), ['crash', 'rel']);
  },
);
