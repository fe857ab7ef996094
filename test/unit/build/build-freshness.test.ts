// When `npm start` rebuilds: scripts/build-freshness.mjs on a scratch tree with set mtimes.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { BUILD_STAMP, BUILT, staleReason } from '../../../scripts/build-freshness.mjs';

function tree(t: { after: (fn: () => void) => void }): {
  root: string;
  put: (path: string, at: number) => void;
} {
  const root = mkdtempSync(join(tmpdir(), 'skep-freshness-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const put = (path: string, at: number) => {
    const file = join(root, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, '');
    utimesSync(file, at, at);
  };
  return { root, put };
}

test('a missing bundle or stamp, a changed source or build input makes the build stale; otherwise it is up to date', (t) => {
  const { root, put } = tree(t);
  put('src/a/b.ts', 1_000);
  put('package.json', 1_000);
  assert.equal(staleReason(root), 'dist/skep.mjs is missing');
  for (const built of BUILT) put(built, 500);
  assert.match(staleReason(root) ?? '', /^dist\/\.built is missing/);
  // The stamp is the build's time, whatever the times of files a build left unchanged.
  put(BUILD_STAMP, 2_000);
  assert.equal(staleReason(root), undefined);
  // A source edited after the build, however deep.
  put('src/a/c/d.ts', 3_000);
  assert.equal(staleReason(root), 'src/a/c/d.ts changed since the last build');
  put(BUILD_STAMP, 4_000);
  assert.equal(staleReason(root), undefined);
  // The bundler's options and the locked packages count too.
  put('package-lock.json', 5_000);
  assert.equal(staleReason(root), 'package-lock.json changed since the last build');
  put(BUILD_STAMP, 6_000);
  put('scripts/bundle-config.mjs', 6_500);
  assert.equal(staleReason(root), 'scripts/bundle-config.mjs changed since the last build');
});
