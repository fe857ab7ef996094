/**
 * A stored run configuration that this version's checks refuse (written by an older, looser
 * version): the workload still lists, exports and removes; it does not start, its status says
 * why, and the other workloads still resume when `skep serve` starts. The manager's runner
 * spawn only records a pid that cannot exist (`inProcessManager`).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isSkepError } from '../../../src/shared/index.js';
import { everythingBody, inProcessManager } from './helpers.js';

test('a stored configuration this version refuses: listed with the problem, not started, others resume', async (t) => {
  const { ctx, manager } = inProcessManager(t);
  await manager.create(everythingBody('older'));
  await manager.create(everythingBody('fine'));
  // What an older version stored: a telemetry key it kept and ignored (a typo).
  const row = ctx.store.db.prepare('SELECT run_config FROM workloads WHERE name = ?').get('older') as {
    run_config: string;
  };
  const stored = JSON.parse(row.run_config) as Record<string, unknown>;
  stored['telemetry_config'] = { endpoint: 'collector:4318', tracingEnable: true };
  ctx.store.db
    .prepare('UPDATE workloads SET run_config = ? WHERE name = ?')
    .run(JSON.stringify(stored), 'older');

  // Listing every workload still works, and names the problem.
  const names = manager.list({ all: true }).map((w) => w.name);
  assert.deepEqual(names.sort(), ['fine', 'older']);
  assert.match(manager.rows.get('older')?.configProblem ?? '', /telemetry_config.*tracingEnable/);
  assert.equal(manager.rows.get('fine')?.configProblem, undefined);

  // Both runners are gone (a reboot): the good one resumes, the other is an error saying why.
  assert.deepEqual(await manager.reconcile(), ['fine']);
  const older = manager.rows.get('older');
  assert.equal(older?.status, 'error');
  assert.match(older?.statusContext ?? '', /tracingEnable.*skep export older/);
  await assert.rejects(manager.restartNow('older'), (e) => isSkepError(e) && e.code === 'invalid_config');

  // It can still be removed.
  await manager.deleteNow('older');
  assert.equal(manager.rows.get('older'), undefined);
});
