import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { RotatingLogFile } from '../../../src/dataplane/runtime/index.js';
import { tailFile } from '../../../src/workloads/index.js';

test('log files rotate past max bytes and keep the configured number of rotated files', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skep-log-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'w.log');
  const log = new RotatingLogFile(file, { maxBytes: 100, files: 2 });
  for (let i = 0; i < 20; i++) log.write(`line ${String(i).padStart(2, '0')} ${'x'.repeat(30)}\n`);
  log.close();
  assert.ok(existsSync(`${file}.1`));
  assert.ok(existsSync(`${file}.2`));
  assert.ok(!existsSync(`${file}.3`), 'only 2 rotated files are kept');
  for (const f of [file, `${file}.1`, `${file}.2`]) assert.ok(readFileSync(f).length <= 100, f);
  assert.match(readFileSync(file, 'utf8'), /line 19/);
});

test('tail returns the last lines; a missing file is empty', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skep-log-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'w.log');
  const log = new RotatingLogFile(file, { maxBytes: 1 << 20, files: 1 });
  for (let i = 1; i <= 10; i++) log.write(`l${i}\n`);
  log.close();
  assert.equal(tailFile(file, 3), 'l8\nl9\nl10\n');
  assert.equal(tailFile(join(dir, 'none.log'), 3), '');
});
