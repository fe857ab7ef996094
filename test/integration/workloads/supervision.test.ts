/**
 * The runner's supervision loop, run in-process (`runWorkload`) against real server
 * processes, and the manager's bookkeeping that does not need a live runner: group
 * deletion, honest status for a dead runner, resume, and the onChange hook. Here the
 * manager's `spawnRunner` is replaced by one that only records a pid that cannot exist
 * (the runner logic itself runs for real in this process).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { ApiContext } from '../../../src/control/app/index.js';
import type { SkepError } from '../../../src/shared/index.js';
import type { WorkloadChange } from '../../../src/workloads/index.js';
import { childPids, everythingBody, inProcessManager, runInProcess, waitFor } from './helpers.js';

/** Runs the workload's runner in this process until it gives up (3 restarts at most). */
function runToTheEnd(ctx: ApiContext, name: string, delays: { initialDelayMs: number; maxDelayMs: number }) {
  return runInProcess(ctx, name, new AbortController().signal, {
    ...delays,
    healthyAfterMs: 60_000,
    maxRestarts: 3,
  });
}

test(
  'runner: a server that keeps crashing is restarted with backoff, then the runner gives up with status error',
  {
    timeout: 60_000,
  },
  async (t) => {
    const { ctx, manager } = inProcessManager(t);
    await manager.create({
      name: 'crashy',
      image: `cmd://${process.execPath}`,
      cmd_arguments: ['-e', 'process.exit(3)'],
    });
    const code = await runToTheEnd(ctx, 'crashy', { initialDelayMs: 10, maxDelayMs: 40 });
    assert.equal(code, 1);
    const row = manager.rows.get('crashy');
    assert.equal(row?.status, 'error');
    assert.match(row?.statusContext ?? '', /gave up after 3 restarts/);
  },
);

test('runner: a program that is not installed is an error at once, not a restart loop', async (t) => {
  const { ctx, manager } = inProcessManager(t);
  // npx:// is not checked at create (it may run in a container); here the workload's PATH hides it.
  await manager.create({ name: 'no-npx', image: 'npx://some-server', env_vars: { PATH: '/nonexistent' } });
  const started = Date.now();
  const code = await runToTheEnd(ctx, 'no-npx', { initialDelayMs: 5_000, maxDelayMs: 5_000 });
  assert.equal(code, 1);
  assert.ok(Date.now() - started < 5_000, 'no restart delay was waited');
  const row = manager.rows.get('no-npx');
  assert.equal(row?.status, 'error');
  assert.match(row?.statusContext ?? '', /cannot start 'npx': it was not found on PATH/);
});

test(
  'runner: runs a real server behind the proxy and stops it cleanly when aborted',
  {
    timeout: 90_000,
  },
  async (t) => {
    const { ctx, manager } = inProcessManager(t);
    await manager.create(everythingBody('inproc'));
    const controller = new AbortController();
    const done = runInProcess(ctx, 'inproc', controller.signal);
    t.after(() => controller.abort());
    await waitFor('running', () => (manager.rows.get('inproc')?.status === 'running' ? true : undefined));
    const port = manager.rows.get('inproc')?.port as number;
    const health = await fetch(`http://127.0.0.1:${port}/health`);
    assert.ok(health.status < 500, `proxy health answered ${health.status}`);
    const children = childPids(process.pid);
    assert.ok(children.length > 0, 'the server runs as a child process');
    controller.abort();
    assert.equal(await done, 0);
    assert.equal(manager.rows.get('inproc')?.status, 'stopped');
    await assert.rejects(fetch(`http://127.0.0.1:${port}/health`), 'the proxy is closed');
  },
);

test(
  'runner: a stop that comes while the server is still starting stops it once up, without waiting for it to exit',
  { timeout: 60_000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'skep-slow-start-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const pidFile = join(dir, 'pid');
    // Records its pid, listens only after 1.5 s, and never exits on its own.
    const script = `require('fs').writeFileSync(process.argv[1], String(process.pid));
      setTimeout(() => require('http').createServer((q, s) => s.end()).listen(Number(process.env.PORT), '127.0.0.1'), 1500);`;
    const { ctx, manager } = inProcessManager(t);
    await manager.create({
      name: 'slow',
      image: `cmd://${process.execPath}`,
      transport: 'streamable-http',
      cmd_arguments: ['-e', script, pidFile],
      // Unsandboxed: it writes its host pid to the test's directory.
      sandbox: 'off',
    });
    const controller = new AbortController();
    const done = runInProcess(ctx, 'slow', controller.signal);
    t.after(() => controller.abort());
    const pid = await waitFor('the server to be spawned', () =>
      existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) || undefined : undefined,
    );
    assert.equal(manager.rows.get('slow')?.status, 'starting');
    controller.abort();
    assert.equal(await done, 0);
    assert.equal(manager.rows.get('slow')?.status, 'stopped');
    assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' }, 'the server was stopped');
  },
);

test('status is honest about a dead runner; resume starts it again; onChange reports it', async (t) => {
  const { manager } = inProcessManager(t);
  const changes: WorkloadChange[] = [];
  manager.onChange((c) => {
    changes.push(c);
  });
  await manager.create(everythingBody('ghost'));
  assert.deepEqual(
    changes.map((c) => [c.name, c.kind]),
    [['ghost', 'started']],
  );
  manager.rows.setStatus('ghost', { status: 'running', context: '' });
  assert.equal(manager.list().length, 0, 'an unhealthy workload is not listed as running');
  const [listed] = manager.list({ all: true });
  assert.equal(listed?.status, 'unhealthy');
  assert.match(listed?.status_context ?? '', /runner process .* is not running/);
  assert.deepEqual(await manager.reconcile(), ['ghost']);
  assert.equal(manager.rows.get('ghost')?.status, 'starting');
  const token = manager.rows.get('ghost')?.accessToken as string;
  assert.match(token, /^[0-9a-f]{64}$/);
  await manager.deleteNow('ghost');
  assert.deepEqual(
    changes.map((c) => c.kind),
    ['started', 'started', 'removed'],
  );
  // The working URL: it carries the workload's access token.
  assert.equal(changes[2]?.url, `http://127.0.0.1:${changes[2]?.port}/mcp?skep_token=${token}`);
});

test('resume on serve start skips a workload with autostart off (skep run --no-autostart): stopped until started', async (t) => {
  const { manager } = inProcessManager(t);
  await manager.create(everythingBody('resumed'));
  await manager.create(everythingBody('by-hand'));
  assert.equal(manager.rows.get('by-hand')?.autostart, true, 'on by default');
  manager.rows.setAutostart('by-hand', false);
  // Both runners are gone (their pid cannot exist), as after a reboot.
  for (const name of ['resumed', 'by-hand']) manager.rows.setStatus(name, { status: 'running', context: '' });
  assert.deepEqual(await manager.reconcile(), ['resumed']);
  assert.equal(manager.rows.get('resumed')?.status, 'starting');
  assert.equal(manager.rows.get('by-hand')?.status, 'stopped');
  assert.equal(manager.rows.get('by-hand')?.desired, 'stopped');
  // Started by hand, it runs; autostart stays off.
  await manager.restartNow('by-hand');
  assert.equal(manager.rows.get('by-hand')?.status, 'starting');
  assert.equal(manager.rows.get('by-hand')?.autostart, false);
  await manager.deleteNow('resumed');
  await manager.deleteNow('by-hand');
});

test('group delete refuses while the group holds workloads (a virtual one named as such); with-workloads deletes them', async (t) => {
  const { ctx, manager } = inProcessManager(t);
  ctx.groups.create('team');
  ctx.groups.create('empty');
  await manager.create({ ...everythingBody('w1'), group: 'team' });
  await manager.create({ name: 'team-vmcp', group: 'team', vmcp: {} });
  await manager.create({ ...everythingBody('elsewhere') });
  assert.deepEqual(manager.workloadsIn('team'), ['team-vmcp', 'w1']);
  await assert.rejects(ctx.groups.delete('team'), (err: SkepError) => {
    assert.equal(err.code, 'group_not_empty');
    assert.equal(err.status, 409);
    assert.match(
      err.message,
      /^group 'team' still holds 2 workloads: team-vmcp \(virtual MCP server\), w1; nothing was changed/,
    );
    assert.deepEqual(err.details, { workloads: ['team-vmcp', 'w1'], virtual: ['team-vmcp'] });
    return true;
  });
  // Nothing moved: the group, its workloads and the default group are as they were.
  assert.ok(ctx.groups.exists('team'));
  assert.equal(manager.exportConfig('w1').group, 'team');
  assert.equal(manager.exportConfig('team-vmcp').group, 'team');
  assert.deepEqual(manager.workloadsIn('default'), ['elsewhere']);
  await ctx.groups.delete('empty');
  assert.equal(ctx.groups.exists('empty'), false);
  await ctx.groups.delete('team', { withWorkloads: true });
  assert.equal(manager.rows.get('w1'), undefined);
  assert.equal(manager.rows.get('team-vmcp'), undefined);
  assert.equal(ctx.groups.exists('team'), false);
  assert.deepEqual(manager.workloadsIn('default'), ['elsewhere']);
  await manager.deleteNow('elsewhere');
});

test('a bulk request by group covers every workload of the group, stopped ones included', async (t) => {
  const { ctx, manager } = inProcessManager(t);
  ctx.groups.create('g');
  await manager.create({ ...everythingBody('b1'), group: 'g' });
  await manager.create({ ...everythingBody('b2'), group: 'g' });
  await manager.stopNow('b2');
  assert.deepEqual(manager.bulk('delete', { group: 'g' }), ['b1', 'b2']);
  await manager.settled();
  assert.deepEqual(manager.workloadsIn('g'), []);
});

test(
  'runner: stops by itself when its workload record disappears (no orphan runners)',
  {
    timeout: 90_000,
  },
  async (t) => {
    const { ctx, manager } = inProcessManager(t);
    await manager.create(everythingBody('orphan'));
    const controller = new AbortController();
    t.after(() => controller.abort());
    const done = runInProcess(ctx, 'orphan', controller.signal);
    await waitFor('running', () => (manager.rows.get('orphan')?.status === 'running' ? true : undefined));
    manager.rows.delete('orphan');
    assert.equal(await done, 0, 'the runner noticed and stopped cleanly');
  },
);
