#!/usr/bin/env node
// Runs the node:test suites (TypeScript through tsx). With file or folder arguments, runs only
// those; without, every *.test.ts under test/. Suites that drive the shared container engine
// (test/integration/runtime/, and any *-podman.test.ts) run after the others, one file at a
// time: they share one engine's networks, port forwarding and load, and ran into each other.
//
// Tiers, by folder (`--tier`, comma-separated or repeated; `npm run test:<tier>`):
//   unit         test/unit/: pure — no child processes, no sockets, no system services;
//                outbound HTTP is faked with undici's MockAgent. Runs on every core.
//   integration  test/integration/: real sockets, processes and services (the engine files too).
//   engine       the serial container-engine part of integration (see above).
//   e2e          test/e2e/: whole user flows through the CLI, the API and the browser.
//   build        test/build/: the esbuild bundles (dist/skep.mjs, the runner, the UI).
// `--service NAME` keeps the files that need that system service (see SERVICES). `--watch`
// reruns the files whose sources change (node's --test --watch). `--list` prints the chosen
// files with their tier and services instead of running them.
//
// `--tier unit` alone loads the unit files into a few processes (shards, two per core) instead
// of one process per file: with a process per file, starting Node, tsx and the sources again for
// every file took about three times the CPU of the whole sharded run. `--per-file` (and
// `--watch`) keep one process per file, as every other run does — `npm test` too, so a unit
// test that leans on another file's leftovers still fails there.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const TIERS = ['unit', 'integration', 'engine', 'e2e', 'build'];

/**
 * The system services a test file needs, read from what it uses: the helper that starts or
 * finds the service, or the probe that decides whether the test can run.
 */
const SERVICES = {
  redis: (text) => text.includes('helpers/redis.js'),
  podman: (text, path) => text.includes('helpers/podman.js') || path.endsWith('-podman.test.ts'),
  browser: (text) => text.includes('helpers/browser.js') || /\bstartUiSession\(/.test(text),
  registry: (text) => /\bhasRegistry\(/.test(text),
  prometheus: (text) => text.includes('helpers/prometheus.js'),
  bwrap: (text) => /\bprobeBwrap\(/.test(text),
};

function collect(path, out) {
  if (statSync(path).isDirectory()) {
    for (const entry of readdirSync(path).sort()) collect(join(path, entry), out);
  } else if (path.endsWith('.test.ts')) {
    out.push(path);
  }
  return out;
}

const slashed = (file) => file.split(/[\\/]/).join('/');
const engine = (file) => {
  const path = slashed(file);
  return path.includes('test/integration/runtime/') || path.endsWith('-podman.test.ts');
};
/** The tiers a file belongs to: its folder's, and `engine` besides `integration` for the serial files. */
function tiersOf(file) {
  const path = `/${slashed(file)}`;
  for (const tier of ['unit', 'integration', 'e2e', 'build']) {
    if (path.includes(`/test/${tier}/`))
      return tier === 'integration' && engine(file) ? [tier, 'engine'] : [tier];
  }
  return [];
}
const servicesOf = (file) => {
  const text = readFileSync(file, 'utf8');
  return Object.keys(SERVICES).filter((name) => SERVICES[name](text, slashed(file)));
};

function fail(message) {
  console.error(message);
  process.exit(2);
}

const { values: flags, positionals } = parseArgs({
  options: {
    tier: { type: 'string', multiple: true },
    service: { type: 'string', multiple: true },
    watch: { type: 'boolean' },
    list: { type: 'boolean' },
    'per-file': { type: 'boolean' },
  },
  allowPositionals: true,
});
const split = (list) => (list ?? []).flatMap((v) => v.split(',')).filter((v) => v !== '');
const tiers = split(flags.tier);
const services = split(flags.service);
for (const tier of tiers)
  if (!TIERS.includes(tier)) fail(`unknown tier "${tier}" (one of ${TIERS.join(', ')})`);
for (const service of services) {
  if (!(service in SERVICES))
    fail(`unknown service "${service}" (one of ${Object.keys(SERVICES).join(', ')})`);
}

const targets = positionals.length > 0 ? positionals : ['test'];
const files = targets
  .flatMap((t) => collect(t, []))
  .filter((f) => tiers.length === 0 || tiersOf(f).some((tier) => tiers.includes(tier)))
  .filter((f) => services.length === 0 || servicesOf(f).some((s) => services.includes(s)));
if (files.length === 0) {
  const filters = [...tiers.map((t) => `tier ${t}`), ...services.map((s) => `service ${s}`)];
  console.error(
    'no test files found in',
    targets.join(' '),
    filters.length > 0 ? `(${filters.join(', ')})` : '',
  );
  process.exit(1);
}

if (flags.list) {
  const counts = {};
  for (const f of files) {
    const own = tiersOf(f);
    for (const tier of own) counts[tier] = (counts[tier] ?? 0) + 1;
    const needs = servicesOf(f);
    console.log(`${own.join('+') || '-'}\t${needs.join(',') || '-'}\t${f}`);
  }
  console.log(
    `${files.length} files: ${Object.entries(counts)
      .map(([t, n]) => `${t} ${n}`)
      .join(', ')}`,
  );
  process.exit(0);
}

// Unit files start no processes of their own: two per core, because some wait on the disk
// (fsync, file locks) rather than compute. The other tiers start servers and processes that
// need cores too.
const unitTier = tiers.length === 1 && tiers[0] === 'unit';
const concurrency =
  process.env.SKEP_TEST_CONCURRENCY ?? (unitTier ? String(2 * availableParallelism()) : '3');
const run = (list, parallel) =>
  list.length === 0
    ? 0
    : (spawnSync(
        process.execPath,
        [
          '--import',
          'tsx',
          '--test',
          ...(flags.watch ? ['--watch'] : []),
          `--test-concurrency=${parallel}`,
          // A test that hangs fails, named, after this long instead of holding the whole run
          // (CI has a time limit for all of it); the slowest test takes a few minutes.
          `--test-timeout=${process.env.SKEP_TEST_TIMEOUT_MS ?? 600_000}`,
          '--test-reporter=spec',
          ...list,
        ],
        { stdio: 'inherit', env: { ...process.env, SKEP_LOG_LEVEL: process.env.SKEP_LOG_LEVEL ?? 'silent' } },
      ).status ?? 1);
if (flags.watch) {
  // One watching process over every chosen file (it does not end, so nothing runs after it).
  process.exit(run(files, concurrency));
}

/**
 * `count` entry modules that import the files, balanced by file size (a rough measure of a
 * file's work). Failures still name the test file and line.
 */
function shards(list, count) {
  const dir = mkdtempSync(join(tmpdir(), 'skep-unit-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const parts = Array.from({ length: Math.min(count, list.length) }, () => ({ size: 0, files: [] }));
  const bySize = list
    .map((f) => ({ f, size: statSync(f).size }))
    .sort((a, b) => b.size - a.size || (a.f < b.f ? -1 : 1));
  for (const { f, size } of bySize) {
    const part = parts.reduce((low, p) => (p.size < low.size ? p : low));
    part.size += size;
    part.files.push(f);
  }
  return parts.map((part, i) => {
    const entry = join(dir, `shard-${i + 1}.mjs`);
    const imports = part.files
      .sort()
      .map((f) => `await import(${JSON.stringify(pathToFileURL(resolve(f)).href)});`);
    writeFileSync(entry, `${imports.join('\n')}\n`);
    return entry;
  });
}

if (unitTier && !flags['per-file']) {
  const parallel = Number(concurrency);
  process.exit(run(shards(files, Number.isInteger(parallel) && parallel > 0 ? parallel : 1), concurrency));
}
const first = run(
  files.filter((f) => !engine(f)),
  concurrency,
);
const second = run(files.filter(engine), '1');
process.exit(first !== 0 ? first : second);
