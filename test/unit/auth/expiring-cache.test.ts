import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ExpiringCache } from '../../../src/dataplane/middleware/auth/index.js';

test('expiring cache: served until its deadline, then reloaded (frozen clock)', async () => {
  let now = 1_000;
  const cache = new ExpiringCache<string>({ maxEntries: 10, now: () => now });
  let loads = 0;
  const load = async () => ({ value: `v${++loads}`, expiresAt: now + 100 });
  assert.equal(await cache.getOrLoad('k', load), 'v1');
  now += 99;
  assert.equal(await cache.getOrLoad('k', load), 'v1');
  now += 1;
  assert.equal(await cache.getOrLoad('k', load), 'v2');
});

test('expiring cache: concurrent misses share one load; a failed load is not cached', async () => {
  const cache = new ExpiringCache<string>({ maxEntries: 10, now: () => 0 });
  let loads = 0;
  const slow = () =>
    new Promise<{ value: string; expiresAt: number }>((resolve) =>
      setImmediate(() => resolve({ value: `v${++loads}`, expiresAt: 10 })),
    );
  const results = await Promise.all([
    cache.getOrLoad('k', slow),
    cache.getOrLoad('k', slow),
    cache.getOrLoad('k', slow),
  ]);
  assert.deepEqual(results, ['v1', 'v1', 'v1']);
  assert.equal(loads, 1);
  await assert.rejects(cache.getOrLoad('bad', async () => Promise.reject(new Error('boom'))));
  assert.equal(await cache.getOrLoad('bad', async () => ({ value: 'ok', expiresAt: 10 })), 'ok');
});

test('expiring cache: already-expired values are not stored; the oldest entry makes room', () => {
  let now = 0;
  const cache = new ExpiringCache<number>({ maxEntries: 2, now: () => now });
  cache.set('past', 1, 0);
  assert.equal(cache.size, 0);
  cache.set('a', 1, 100);
  cache.set('b', 2, 100);
  cache.set('c', 3, 100);
  assert.equal(cache.get('a'), undefined);
  assert.equal(cache.get('b'), 2);
  assert.equal(cache.get('c'), 3);
  now = 100;
  assert.equal(cache.get('b'), undefined);
});
