/**
 * What the npm and uv stores share (`src/dataplane/runtime/store-folder.ts`), through the uv
 * store: a scratch folder left by a start that is gone is swept, its lock and entries are not,
 * and only finished entries count as installed.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { COMPLETE_FILE, UvStore } from '../../../src/dataplane/runtime/uv-store.js';

test('uv store: a dead start’s scratch folders are swept; locks, live scratch and entries stay', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skep-store-folder-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const store = new UvStore(dir);
  // A pid that is surely gone: a child that has exited.
  const dead = Number(
    spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' })
      .stdout,
  );
  const live = store.scratch('resolve');
  const names = [
    `.cache-${dead}-0123456789ab`,
    `.resolve-${dead}-abcdef`,
    '.lock-mcp-server-fetch==1.0.0',
    'mcp-server-fetch==1.0.0',
  ];
  for (const name of names) mkdirSync(join(store.root, name), { recursive: true });
  store.sweep();
  assert.deepEqual(
    readdirSync(store.root).sort(),
    [...names.slice(2), live.slice(store.root.length + 1)].sort(),
  );
});

test('uv store: only entries with their completion file are installed versions, newest first', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skep-store-folder-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const store = new UvStore(dir);
  for (const version of ['1.2.0', '1.10.0', '2.0.0']) {
    mkdirSync(store.entryDir('MCP_Server.Fetch', version), { recursive: true });
    if (version !== '2.0.0')
      writeFileSync(join(store.entryDir('mcp-server-fetch', version), COMPLETE_FILE), '');
  }
  assert.deepEqual(store.installedVersions('mcp_server_fetch'), ['1.10.0', '1.2.0']);
  assert.deepEqual(store.installedVersions('mcp-server-fetch', 'abcdef123456'), []);
});
