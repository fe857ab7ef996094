/**
 * The workloads API's `autostart` (the API side of `skep run --no-autostart`) with real runners:
 * set at create, shown in the list and the detail, honoured when `skep serve` resumes
 * workloads whose runners are gone (a reboot, played by killing the runners), changed by an
 * edit that restarts nothing when it sets only `autostart`, and refused by name when it is
 * not a boolean.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runnerPidOf, waitFor, waitForStatus, workloadApp } from './helpers.js';

/** A small stdio MCP server (the web UI tests' fixture). */
const ECHO_SERVER = fileURLToPath(new URL('../../../bench/fixtures/echo-server.mjs', import.meta.url));

const echoBody = (name: string) => ({
  name,
  image: `cmd://${process.execPath}`,
  cmd_arguments: [ECHO_SERVER],
});

test(
  'autostart: set at create, shown, honoured on serve start, changed by an edit without a restart',
  { timeout: 240_000 },
  async (t) => {
    const { app, ctx } = await workloadApp(t);
    const inject = (method: 'GET' | 'POST' | 'PUT', url: string, payload?: object) =>
      app.inject({ method, url, ...(payload === undefined ? {} : { payload }) });
    const detail = async (name: string) =>
      (await inject('GET', `/api/v1beta/workloads/${name}`)).json<{ autostart: boolean }>();
    const listed = async () =>
      (await inject('GET', '/api/v1beta/workloads?all=true')).json<{
        workloads: { name: string; autostart: boolean; status: string; started_at: string }[];
      }>().workloads;

    // Not a boolean: 400 naming the field, nothing created (the body is never coerced).
    for (const bad of ['false', 0, null]) {
      const res = await inject('POST', '/api/v1beta/workloads', { ...echoBody('bad'), autostart: bad });
      assert.equal(res.statusCode, 400, `autostart: ${JSON.stringify(bad)}`);
      assert.match(res.json<{ message: string }>().message, /autostart/);
    }
    assert.equal(ctx.workloads.rows.get('bad'), undefined);

    const off = await inject('POST', '/api/v1beta/workloads', { ...echoBody('by-hand'), autostart: false });
    assert.equal(off.statusCode, 201, off.body);
    const on = await inject('POST', '/api/v1beta/workloads', echoBody('resumed'));
    assert.equal(on.statusCode, 201, on.body);
    await waitForStatus(ctx, 'by-hand', 'running');
    await waitForStatus(ctx, 'resumed', 'running');
    assert.equal((await detail('by-hand')).autostart, false);
    assert.equal((await detail('resumed')).autostart, true, 'on by default');
    assert.deepEqual(
      (await listed()).map((w) => [w.name, w.autostart]),
      [
        ['by-hand', false],
        ['resumed', true],
      ],
    );

    // A reboot: both runners (and their servers) die without recording anything; `skep serve`
    // starting again reconciles. Only the one with autostart on comes back.
    for (const name of ['by-hand', 'resumed']) {
      const pid = runnerPidOf(ctx, name);
      process.kill(-pid, 'SIGKILL');
      await waitFor(`the runner of ${name} to be gone`, () => {
        try {
          process.kill(pid, 0);
          return false;
        } catch {
          return true;
        }
      });
    }
    assert.deepEqual(await ctx.workloads.reconcile(), ['resumed']);
    await waitForStatus(ctx, 'resumed', 'running');
    assert.equal(ctx.workloads.rows.get('by-hand')?.status, 'stopped');
    assert.equal(ctx.workloads.rows.get('by-hand')?.desired, 'stopped');

    // An edit that sets only autostart restarts nothing: same runner, same start time.
    const pid = runnerPidOf(ctx, 'resumed');
    const startedAt = (await listed()).find((w) => w.name === 'resumed')?.started_at;
    const flipped = await inject('PUT', '/api/v1beta/workloads/resumed', { autostart: false });
    assert.equal(flipped.statusCode, 200, flipped.body);
    assert.equal((await detail('resumed')).autostart, false);
    assert.equal(runnerPidOf(ctx, 'resumed'), pid, 'the runner was not restarted');
    const after = (await listed()).find((w) => w.name === 'resumed');
    assert.equal(after?.status, 'running');
    assert.equal(after?.started_at, startedAt);
    // Not a boolean on edit either: 400 naming it, nothing changed.
    const bad = await inject('POST', '/api/v1beta/workloads/resumed/edit', { autostart: 'yes' });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.json<{ message: string }>().message, /autostart/);
    assert.equal((await detail('resumed')).autostart, false);

    // With configuration fields, both change (and the stopped workload stays stopped).
    const both = await inject('POST', '/api/v1beta/workloads/by-hand/edit', {
      env_vars: { GREETING: 'hi' },
      autostart: true,
    });
    assert.equal(both.statusCode, 200, both.body);
    assert.equal((await detail('by-hand')).autostart, true);
    assert.deepEqual(ctx.workloads.exportConfig('by-hand').env_vars, { GREETING: 'hi' });
    assert.equal(ctx.workloads.rows.get('by-hand')?.status, 'stopped');
    // The export is the run configuration: autostart is the workload's, not in it.
    assert.equal('autostart' in ctx.workloads.exportConfig('by-hand'), false);
  },
);

test('skep run --from-config --no-autostart: the import is created with autostart off from the start', async (t) => {
  const { ctx } = await workloadApp(t);
  // A run configuration (an export's shape): cmd_args, not the API's cmd_arguments.
  const runConfig = (name: string) => ({
    name,
    image: `cmd://${process.execPath}`,
    cmd_args: [ECHO_SERVER],
    transport: 'stdio',
  });
  const created = await ctx.workloads.createFromConfig(runConfig('imported'), { autostart: false });
  assert.equal(ctx.workloads.rows.get(created.name)?.autostart, false);
  const other = await ctx.workloads.createFromConfig(runConfig('imported-2'));
  assert.equal(ctx.workloads.rows.get(other.name)?.autostart, true);
  await waitForStatus(ctx, created.name, 'running');
  await waitForStatus(ctx, other.name, 'running');
});
