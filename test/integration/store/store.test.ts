import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { test } from 'node:test';
import { openStore } from '../../../src/store/index.js';
import { tempHome } from '../../helpers/home.js';

test('migrations run once per domain and are recorded', (t) => {
  const home = tempHome(t);
  const file = join(home.dir, 'state.db');
  const migrations = ['CREATE TABLE t1 (x INTEGER)', 'ALTER TABLE t1 ADD COLUMN y TEXT'];
  const a = openStore(file);
  a.migrate('demo', migrations);
  a.migrate('demo', migrations);
  a.close();
  const b = openStore(file);
  b.migrate('demo', [...migrations, 'CREATE TABLE t2 (z INTEGER)']);
  const versions = b.db
    .prepare("SELECT version FROM schema_migrations WHERE domain = 'demo' ORDER BY version")
    .all();
  assert.deepEqual(versions, [{ version: 1 }, { version: 2 }, { version: 3 }]);
  b.close();
});

test('several processes write concurrently without losing a row', async (t) => {
  const home = tempHome(t);
  const file = join(home.dir, 'state.db');
  const setup = openStore(file);
  setup.migrate('demo', [
    'CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)',
    'INSERT INTO counter VALUES (1, 0)',
  ]);
  setup.close();
  const storeModule = new URL('../../../src/store/index.ts', import.meta.url).href;
  const script = `
    const { openStore } = await import(${JSON.stringify(storeModule)});
    const s = openStore(${JSON.stringify(file)});
    for (let i = 0; i < 200; i++) s.write(() => {
      const { n } = s.db.prepare('SELECT n FROM counter WHERE id = 1').get();
      s.db.prepare('UPDATE counter SET n = ? WHERE id = 1').run(n + 1);
    });
    s.close();
  `;
  const children = Array.from({ length: 4 }, () =>
    spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: 'inherit' }),
  );
  const codes = await Promise.all(children.map(async (c) => (await once(c, 'exit'))[0]));
  assert.deepEqual(codes, [0, 0, 0, 0]);
  const check = openStore(file);
  assert.deepEqual(check.db.prepare('SELECT n FROM counter WHERE id = 1').get(), { n: 800 });
  check.close();
});
