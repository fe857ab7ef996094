#!/usr/bin/env node
// Runs the node:test suites (TypeScript through tsx). With arguments, runs only those
// files or folders; without, every *.test.ts under test/. Suites that drive the shared
// container engine (test/integration/runtime/, and any *-podman.test.ts) run after the others,
// one file at a time: they share one engine's networks, port forwarding and load, and ran
// into each other.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function collect(path, out) {
  if (statSync(path).isDirectory()) {
    for (const entry of readdirSync(path).sort()) collect(join(path, entry), out);
  } else if (path.endsWith('.test.ts')) {
    out.push(path);
  }
  return out;
}

const args = process.argv.slice(2);
const targets = args.length > 0 ? args : ['test'];
const files = targets.flatMap((t) => collect(t, []));
if (files.length === 0) {
  console.error('no test files found in', targets.join(' '));
  process.exit(1);
}
const concurrency = process.env.SKEP_TEST_CONCURRENCY ?? '3';
const engine = (file) => {
  const path = file.split(/[\\/]/).join('/');
  return path.includes('test/integration/runtime/') || path.endsWith('-podman.test.ts');
};
const run = (list, parallel) =>
  list.length === 0
    ? 0
    : (spawnSync(
        process.execPath,
        ['--import', 'tsx', '--test', `--test-concurrency=${parallel}`, '--test-reporter=spec', ...list],
        { stdio: 'inherit', env: { ...process.env, SKEP_LOG_LEVEL: process.env.SKEP_LOG_LEVEL ?? 'silent' } },
      ).status ?? 1);
const first = run(
  files.filter((f) => !engine(f)),
  concurrency,
);
const second = run(files.filter(engine), '1');
process.exit(first !== 0 ? first : second);
