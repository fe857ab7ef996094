// Whether dist/ holds a build of the current sources: `npm start` (scripts/start.mjs) rebuilds
// only when it does not. The bundles are built from src/ by scripts/bundle*.mjs with the
// locked packages; scripts/bundle.mjs stamps `dist/.built` when a build succeeds (the UI's
// files keep their time when their content did not change), so an input newer than the stamp
// makes the build stale.
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/** What `npm start` runs; each must exist. */
export const BUILT = ['dist/skep.mjs', 'dist/runner.mjs', 'dist/ui/index.html'];
/** Written by scripts/bundle.mjs after a successful build. */
export const BUILD_STAMP = 'dist/.built';
/** What a build reads besides src/. */
const INPUTS = [
  'scripts/bundle.mjs',
  'scripts/bundle-config.mjs',
  'scripts/bundle-ui.mjs',
  'package.json',
  'package-lock.json',
];

function mtimeOf(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

/** The newest file under `dir` (recursively): its path and mtime. */
function newestUnder(dir) {
  let newest = { path: dir, mtime: -Infinity };
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const found = entry.isDirectory() ? newestUnder(path) : { path, mtime: statSync(path).mtimeMs };
    if (found.mtime > newest.mtime) newest = found;
  }
  return newest;
}

/** Why the build in `root` must be redone (a sentence), or undefined when it is up to date. */
export function staleReason(root) {
  for (const built of BUILT) if (mtimeOf(join(root, built)) === undefined) return `${built} is missing`;
  const stamp = mtimeOf(join(root, BUILD_STAMP));
  if (stamp === undefined) return `${BUILD_STAMP} is missing (built by an older script)`;
  const src = newestUnder(join(root, 'src'));
  if (src.mtime > stamp) return `${relative(root, src.path)} changed since the last build`;
  for (const input of INPUTS) {
    const mtime = mtimeOf(join(root, input));
    if (mtime !== undefined && mtime > stamp) return `${input} changed since the last build`;
  }
  return undefined;
}
