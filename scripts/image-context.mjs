#!/usr/bin/env node
// Stages the build context of the Skep image (Containerfile) in <dir>: dist/ (the CLI
// bundle, built here with the options of scripts/bundle-config.mjs), package.json, the
// runtime dependencies only (`npm ls --omit=dev`), and deploy/image/install-runner.mjs.
// Usage: node scripts/image-context.mjs <dir>
import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { build } from 'esbuild';
import { cliBuild } from './bundle-config.mjs';

const out = resolve(process.argv[2] ?? 'build/image');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await build({ ...cliBuild, outdir: join(out, 'dist'), sourcemap: false });
copyFileSync('package.json', join(out, 'package.json'));
copyFileSync('deploy/image/install-runner.mjs', join(out, 'install-runner.mjs'));
// The runner's home in the image (Containerfile copies it owned by the runtime user).
mkdirSync(join(out, 'skep-home'));
writeFileSync(join(out, 'skep-home', '.keep'), '');
const root = resolve('.');
const parseable = execFileSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], {
  encoding: 'utf8',
  maxBuffer: 64 * 1024 * 1024,
  stdio: ['ignore', 'pipe', 'ignore'],
});
// Top-level package folders only: a nested node_modules comes with its parent.
const dirs = [
  ...new Set(
    parseable
      .split('\n')
      .map((p) => relative(root, p))
      .filter((p) => p.startsWith('node_modules/'))
      .map((p) => {
        const parts = p.split('/');
        return parts.slice(0, parts[1]?.startsWith('@') ? 3 : 2).join('/');
      }),
  ),
];
for (const dir of dirs) cpSync(dir, join(out, dir), { recursive: true, verbatimSymlinks: true });
process.stdout.write(`staged ${out}: dist/, ${dirs.length} runtime packages\n`);
