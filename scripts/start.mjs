#!/usr/bin/env node
// `npm start [-- serve options]`: builds dist/ when a source changed since the last build
// (scripts/build-freshness.mjs), then runs `skep serve` from it with the given options, passing
// SIGINT and SIGTERM on and exiting with its status. The type check is not part of it
// (`npm run typecheck`, `npm run check`): starting needs only the bundles.
import { spawn, spawnSync } from 'node:child_process';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';
import { staleReason } from './build-freshness.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const reason = staleReason(root);
if (reason === undefined) {
  process.stderr.write('npm start: the build in dist/ is up to date\n');
} else {
  process.stderr.write(`npm start: building dist/ (${reason})...\n`);
  const built = spawnSync(process.execPath, ['scripts/bundle.mjs'], { cwd: root, stdio: 'inherit' });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
const serve = spawn(process.execPath, ['dist/skep.mjs', 'serve', ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => serve.kill(signal));
serve.on('exit', (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));
