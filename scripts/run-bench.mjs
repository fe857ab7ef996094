#!/usr/bin/env node
// Runs every bench/*.bench.ts (or the ones named as arguments, e.g. `npm run bench -- api`),
// each in its own process. Each benchmark prints one JSON object on stdout; this script
// prints them together as one JSON document: { "<name>": {...}, ... }. Progress goes to stderr.
// Arguments starting with `--` are passed on to every benchmark run (`npm run bench -- cpu --cpu-prof`).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

const wanted = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const flags = process.argv.slice(2).filter((a) => a.startsWith('--'));
const files = readdirSync('bench')
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => wanted.length === 0 || wanted.some((w) => f.startsWith(w)))
  .sort();
const results = {};
let failed = false;
for (const file of files) {
  const name = file.replace(/\.bench\.ts$/, '');
  process.stderr.write(`bench: ${name}...\n`);
  const run = spawnSync(process.execPath, ['--import', 'tsx', `bench/${file}`, ...flags], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, SKEP_LOG_LEVEL: 'silent' },
  });
  const out = (run.stdout ?? '').trim();
  try {
    results[name] = JSON.parse(out.slice(out.indexOf('{')));
  } catch {
    results[name] = { error: `benchmark exited ${run.status}`, output: out.slice(-2000) };
    failed = true;
  }
}
process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
process.exit(failed ? 1 : 0);
