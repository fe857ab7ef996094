/**
 * The shared cache of backend lists (src/dataplane/vmcp/list-cache.ts), pure: one load per (backend,
 * URL, viewer) shared by concurrent callers; viewers do not share entries; an invalidation
 * while a load runs keeps that (possibly older) result out of the cache; a failed load is not
 * cached; the number of entries is bounded; pruning drops backends that left or moved; sessions are told once per turn of the
 * event loop however many times a backend is invalidated in it. (Through a real virtual server
 * and real backends: test/integration/vmcp/list-cache.test.ts.)
 */
import assert from 'node:assert/strict';
import { setImmediate as tick } from 'node:timers/promises';
import { test } from 'node:test';
import type { BackendLists } from '../../../src/dataplane/vmcp/aggregate.js';
import { LIST_CACHE_MAX_ENTRIES, ListCache } from '../../../src/dataplane/vmcp/list-cache.js';

const lists = (name: string, tool: string): BackendLists => ({
  name,
  tools: [{ name: tool }],
  prompts: [],
  resources: [],
  templates: [],
});

/** A load the test settles by hand. */
function deferred(): {
  load: () => Promise<BackendLists>;
  resolve(l: BackendLists): void;
  reject(e: Error): void;
  calls: number;
} {
  const d = {
    calls: 0,
    resolve: (_l: BackendLists) => {},
    reject: (_e: Error) => {},
    load: () => {
      d.calls++;
      return new Promise<BackendLists>((resolve, reject) => {
        d.resolve = resolve;
        d.reject = reject;
      });
    },
  };
  return d;
}

test('concurrent callers share one load; the result is then served synchronously', async () => {
  const cache = new ListCache();
  const d = deferred();
  const first = cache.get('a', 'u', '', d.load);
  const second = cache.get('a', 'u', '', d.load);
  assert.equal(d.calls, 1);
  d.resolve(lists('a', 'x'));
  assert.equal(await first, await second);
  const warm = cache.get('a', 'u', '', d.load);
  assert.ok(!(warm instanceof Promise), 'a warm entry is returned as is');
  assert.equal(d.calls, 1);
});

test('each viewer and each URL has its own entry', async () => {
  const cache = new ListCache();
  const alice = await cache.get('a', 'u', 'alice', async () => lists('a', 'for-alice'));
  const bob = await cache.get('a', 'u', 'bob', async () => lists('a', 'for-bob'));
  const moved = await cache.get('a', 'u2', 'alice', async () => lists('a', 'moved'));
  assert.equal(alice.tools[0]?.['name'], 'for-alice');
  assert.equal(bob.tools[0]?.['name'], 'for-bob');
  assert.equal(moved.tools[0]?.['name'], 'moved');
  assert.equal(cache.size, 3);
});

test('the cache keeps at most LIST_CACHE_MAX_ENTRIES entries, dropping the oldest', async () => {
  const cache = new ListCache();
  for (let i = 0; i <= LIST_CACHE_MAX_ENTRIES; i++)
    await cache.get('a', 'u', `viewer-${i}`, async () => lists('a', 'x'));
  assert.equal(cache.size, LIST_CACHE_MAX_ENTRIES);
  let loads = 0;
  const load = async () => {
    loads++;
    return lists('a', 'x');
  };
  await cache.get('a', 'u', `viewer-${LIST_CACHE_MAX_ENTRIES}`, load);
  assert.equal(loads, 0, 'the newest is kept');
  await cache.get('a', 'u', 'viewer-0', load);
  assert.equal(loads, 1, 'the oldest was dropped');
});

test('an invalidation during a load keeps that result out; a failed load is not cached', async () => {
  const cache = new ListCache();
  const d = deferred();
  const loading = cache.get('a', 'u', '', d.load);
  cache.invalidate('a');
  d.resolve(lists('a', 'before-the-change'));
  await loading;
  const e = deferred();
  const again = cache.get('a', 'u', '', e.load);
  assert.equal(e.calls, 1, 'loaded again after the invalidation');
  e.reject(new Error('backend down'));
  await assert.rejects(Promise.resolve(again), /backend down/);
  await tick();
  assert.equal(cache.size, 0);
  const f = deferred();
  void cache.get('a', 'u', '', f.load);
  assert.equal(f.calls, 1, 'a failure is retried on next use');
});

test('prune keeps only served backends at their URL', async () => {
  const cache = new ListCache();
  await cache.get('a', 'u1', '', async () => lists('a', 'x'));
  await cache.get('b', 'u2', '', async () => lists('b', 'y'));
  await cache.get('c', 'u3', '', async () => lists('c', 'z'));
  cache.prune([
    { name: 'a', url: 'u1' },
    { name: 'b', url: 'moved' },
  ]);
  assert.equal(cache.size, 1);
  let loads = 0;
  await cache.get('a', 'u1', '', async () => {
    loads++;
    return lists('a', 'x');
  });
  assert.equal(loads, 0, 'the kept entry is still served');
});

test('listeners are told once per turn of the event loop, with every invalidated backend', async () => {
  const cache = new ListCache();
  const told: string[][] = [];
  const off = cache.subscribe((backends) => told.push([...backends]));
  cache.invalidate('a');
  cache.invalidate('a');
  cache.invalidate('b');
  assert.equal(told.length, 0, 'not synchronously');
  await tick();
  assert.deepEqual(told, [['a', 'b']]);
  off();
  cache.invalidate('a');
  await tick();
  assert.equal(told.length, 1, 'an unsubscribed listener is not told');
});

test('entries older than maxAgeMs are loaded again', async () => {
  const cache = new ListCache(0);
  let loads = 0;
  const load = async () => {
    loads++;
    return lists('a', 'x');
  };
  await cache.get('a', 'u', '', load);
  await cache.get('a', 'u', '', load);
  assert.equal(loads, 2);
});
