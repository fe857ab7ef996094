import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { SeqTable } from '../../../src/shared/index.js';

const MODULE = fileURLToPath(new URL('../../../src/shared/seq-table.ts', import.meta.url));

describe('SeqTable', () => {
  it('keeps, finds and forgets values by id', () => {
    const t = new SeqTable<string>();
    t.set(1, 'a');
    t.set(2, 'b');
    assert.equal(t.size, 2);
    assert.equal(t.get(1), 'a');
    assert.equal(t.has(2), true);
    assert.equal(t.get(3), undefined);
    assert.equal(t.delete(1), true);
    assert.equal(t.delete(1), false);
    assert.equal(t.get(1), undefined);
    assert.equal(t.size, 1);
    t.set(2, 'b2');
    assert.equal(t.get(2), 'b2');
    assert.equal(t.size, 1);
  });

  it('never finds 0 or an id it does not hold, even in an empty slot or a slot of another id', () => {
    const t = new SeqTable<string>();
    assert.equal(t.get(0), undefined);
    assert.equal(t.has(0), false);
    assert.equal(t.delete(0), false);
    t.set(5, 'x');
    // 5 + 16 and 5 + 4096 share its slot at the smallest and the largest ring.
    assert.equal(t.get(21), undefined);
    assert.equal(t.get(5 + 4096), undefined);
    assert.equal(t.delete(21), false);
    assert.equal(t.get(5), 'x');
  });

  it('refuses ids that are not positive safe integers', () => {
    const t = new SeqTable<string>();
    for (const bad of [0, -1, 1.5, Number.NaN, 2 ** 53])
      assert.throws(() => t.set(bad, 'x'), RangeError, String(bad));
    assert.equal(t.size, 0);
  });

  it('grows when a call outlives the ring, and keeps a straggler past the largest ring', () => {
    const t = new SeqTable<number>();
    // Id 1 stays while 10,000 later ids come and go: it shares a slot with 17, 33, ... 4097, ...
    t.set(1, 1);
    for (let id = 2; id <= 10_000; id++) {
      t.set(id, id);
      assert.equal(t.get(1), 1, `id 1 after ${id}`);
      assert.equal(t.get(id), id);
      t.delete(id);
    }
    assert.equal(t.size, 1);
    assert.deepEqual(t.entries(), [[1, 1]]);
    assert.equal(t.delete(1), true);
    assert.equal(t.size, 0);
  });

  it('iterates in id order, a snapshot that may be changed while visited', () => {
    const t = new SeqTable<string>();
    for (const id of [40, 3, 4099, 17, 1]) t.set(id, `v${id}`);
    assert.deepEqual(
      [...t].map(([id]) => id),
      [1, 3, 17, 40, 4099],
    );
    for (const [id] of t) t.delete(id);
    assert.equal(t.size, 0);
    t.set(8, 'again');
    assert.deepEqual(t.values(), ['again']);
    t.clear();
    assert.equal(t.size, 0);
    assert.equal(t.get(8), undefined);
  });

  it('holds many entries at once, more than the largest ring', () => {
    const t = new SeqTable<number>();
    for (let id = 1; id <= 9000; id++) t.set(id, id * 2);
    assert.equal(t.size, 9000);
    for (let id = 1; id <= 9000; id++) assert.equal(t.get(id), id * 2);
    assert.deepEqual(t.values().slice(0, 3), [2, 4, 6]);
    for (let id = 9000; id >= 1; id--) assert.equal(t.delete(id), true);
    assert.equal(t.size, 0);
  });

  // The reason the type exists (seq-table.ts): after one full GC, a Map whose keys keep rolling
  // keeps every value it held alive past young-generation collections, so they are promoted.
  // A child process with small semi-spaces (a runner's) counts what the old generation gains
  // per entry while 32 entries of ~2 KB are in the table at a time. The Map is the control: it
  // shows the measurement sees the effect.
  it('does not keep removed values alive once a full GC has run, where a Map does', () => {
    const script = `
      import v8 from 'node:v8';
      const { SeqTable } = await import(${JSON.stringify(MODULE)});
      function promotedPerEntry(kind) {
        const table = kind === 'map' ? new Map() : new SeqTable();
        let id = 0;
        const step = () => {
          id++;
          table.set(id, { payload: new Array(250).fill(id) });
          if (id > 32) table.delete(id - 32);
        };
        const old = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space').space_used_size;
        for (let i = 0; i < 20000; i++) step();
        globalThis.gc();
        let before = old(), grew = 0;
        for (let i = 0; i < 100000; i++) {
          step();
          const now = old();
          if (now > before) grew += now - before;
          before = now;
        }
        return grew / 100000;
      }
      process.stdout.write(JSON.stringify({ map: promotedPerEntry('map'), seq: promotedPerEntry('seq') }));
    `;
    const r = spawnSync(
      process.execPath,
      ['--expose-gc', '--max-semi-space-size=2', '--import', 'tsx', '--input-type=module', '-e', script],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    const { map, seq } = JSON.parse(r.stdout) as { map: number; seq: number };
    // Each value is ~2 KB: a Map promotes about all of them, the table next to none.
    assert.ok(map > 1000, `a Map promoted ${map} bytes per entry`);
    assert.ok(seq < 100, `a SeqTable promoted ${seq} bytes per entry`);
  });
});
