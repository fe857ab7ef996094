/**
 * The runner's record watch and its teardown list: a busy store keeps the runner serving, a
 * record that is gone stops it, and every closer runs, newest first, even after a failure.
 */
import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import { Closers } from '../../../src/dataplane/runner/closers.js';
import { isStoreBusy, watchRecord } from '../../../src/dataplane/runner/record-watch.js';
import { createLineLogger } from '../../../src/shared/index.js';

function recordingLogger(): {
  logger: ReturnType<typeof createLineLogger>;
  lines: Record<string, unknown>[];
} {
  const lines: Record<string, unknown>[] = [];
  const logger = createLineLogger({
    level: 'debug',
    write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>),
  });
  return { logger, lines };
}

function sqliteError(code: string): Error {
  return Object.assign(new Error(`sqlite says ${code}`), { code });
}

test('sqlite result codes: SQLITE_BUSY, SQLITE_LOCKED and their extended codes are transient', () => {
  assert.equal(isStoreBusy(sqliteError('SQLITE_BUSY')), true);
  assert.equal(isStoreBusy(sqliteError('SQLITE_BUSY_SNAPSHOT')), true);
  assert.equal(isStoreBusy(sqliteError('SQLITE_LOCKED_SHAREDCACHE')), true);
  assert.equal(isStoreBusy(sqliteError('SQLITE_CANTOPEN')), false);
  assert.equal(isStoreBusy(new Error('no code')), false);
  assert.equal(isStoreBusy(undefined), false);
});

test('record watch: a busy store is logged (with the error) and checked again; the runner keeps serving', (t) => {
  mock.timers.enable({ apis: ['setInterval'] });
  t.after(() => mock.timers.reset());
  const { logger, lines } = recordingLogger();
  const reads: (boolean | Error)[] = [sqliteError('SQLITE_BUSY'), sqliteError('SQLITE_BUSY'), true, false];
  let lost = 0;
  const stop = watchRecord({
    workload: 'w',
    isOurs: () => {
      const next = reads.shift();
      if (next instanceof Error) throw next;
      return next ?? true;
    },
    onLost: () => lost++,
    logger,
    intervalMs: 2000,
  });
  t.after(stop);
  mock.timers.tick(2000);
  mock.timers.tick(2000);
  mock.timers.tick(2000);
  assert.equal(lost, 0, 'busy reads and a good read do not stop the runner');
  const busy = lines.filter(
    (l) => l['msg'] === 'the store is busy; checking the workload record again later',
  );
  assert.deepEqual(
    busy.map((l) => l['level']),
    [40, 20],
    'one warning per busy spell, then debug',
  );
  assert.equal((busy[0]?.['err'] as { message?: string }).message, 'sqlite says SQLITE_BUSY');
  assert.match(String((busy[0]?.['err'] as { stack?: string }).stack), /sqlite says SQLITE_BUSY/);
  mock.timers.tick(2000);
  assert.equal(lost, 1, 'a record that names another runner stops it');
  mock.timers.tick(2000);
  assert.equal(lost, 1, 'reported once');
});

test('record watch: any other read error means the store is unusable, and stops the runner', (t) => {
  mock.timers.enable({ apis: ['setInterval'] });
  t.after(() => mock.timers.reset());
  const { logger, lines } = recordingLogger();
  let lost = 0;
  const stop = watchRecord({
    workload: 'w',
    isOurs: () => {
      throw sqliteError('SQLITE_CANTOPEN');
    },
    onLost: () => lost++,
    logger,
    intervalMs: 2000,
  });
  t.after(stop);
  mock.timers.tick(2000);
  assert.equal(lost, 1);
  const logged = lines.find((l) => l['msg'] === 'cannot read the workload record; stopping');
  assert.equal((logged?.['err'] as { code?: string }).code, 'SQLITE_CANTOPEN');
});

test('closers: newest first, every one runs after a failure, each failure logged with its error, once', async () => {
  const { logger, lines } = recordingLogger();
  const closers = new Closers(logger, 'w');
  const order: string[] = [];
  closers.add('watch', () => {
    order.push('watch');
  });
  closers.add('authorization server', async () => {
    order.push('authorization server');
    throw new Error('as close failed');
  });
  closers.add('proxy', () => {
    order.push('proxy');
    throw new Error('proxy close failed');
  });
  await closers.closeAll();
  await closers.closeAll();
  assert.deepEqual(order, ['proxy', 'authorization server', 'watch']);
  const failures = lines.filter((l) => l['level'] === 40);
  assert.deepEqual(
    failures.map((l) => [l['msg'], (l['err'] as { message?: string }).message]),
    [
      ['closing the proxy failed', 'proxy close failed'],
      ['closing the authorization server failed', 'as close failed'],
    ],
  );
});
