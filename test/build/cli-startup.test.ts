/**
 * What the built CLI (`dist/skep.mjs`) loads for its most frequent commands: `skep version`,
 * `skep --help` and `skep list` load their own code only, and never the HTTP server stack
 * (Fastify and its plugins) or the pino logger; `version` and `--help` no schema library either.
 *
 * A module hook (`node --import`, `module.register`) records every file the process loads, as
 * ES module or CommonJS; the bundle's source maps turn each loaded file of dist/ back into the
 * sources and packages bundled into it. `.ci/run` builds before testing; locally, run
 * `npm run build` first.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { tempHome } from '../helpers/home.js';
import { requireService } from '../helpers/services.js';

const BUNDLE = fileURLToPath(new URL('../../dist/skep.mjs', import.meta.url));
const DIST = fileURLToPath(new URL('../../dist/', import.meta.url));

/** Registers the hooks and, at exit, adds the CommonJS modules (`require`) to the log. */
const RECORDER = `
import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
const log = process.env.SKEP_TEST_LOAD_LOG;
register(new URL('./hooks.mjs', import.meta.url), { data: { log } });
process.on('exit', () => {
  const cjs = Object.keys(createRequire(import.meta.url).cache);
  appendFileSync(log, cjs.map((file) => file + '\\n').join(''));
});
`;

/** Runs in the hooks thread: logs the URL every ES module import resolves to. */
const HOOKS = `
import { appendFileSync } from 'node:fs';
let log;
export function initialize(data) { log = data.log; }
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (resolved.url.startsWith('file:')) appendFileSync(log, new URL(resolved.url).pathname + '\\n');
  return resolved;
}
`;

/** `node_modules/<pkg>/...` → the package name; `src/...` stays as it is. */
function unitOf(path: string): string | undefined {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(path);
  if (pkg !== null) return pkg[1];
  const src = /(?:^|\/)(src\/.+)$/.exec(path);
  return src?.[1];
}

/** The sources and packages in the files loaded, dist/ files expanded through their source maps. */
function loadedUnits(files: string[]): Set<string> {
  const units = new Set<string>();
  for (const file of new Set(files)) {
    if (file.startsWith(DIST) && file.endsWith('.mjs')) {
      const map = JSON.parse(readFileSync(`${file}.map`, 'utf8')) as { sources: string[] };
      for (const source of map.sources) {
        const unit = unitOf(source);
        if (unit !== undefined) units.add(unit);
      }
    } else {
      const unit = unitOf(file);
      if (unit !== undefined) units.add(unit);
    }
  }
  return units;
}

/** The HTTP server stack and the logger: `skep serve`'s, loaded by none of these commands. */
const SERVER_STACK = [/^fastify$/, /^@fastify\//, /^find-my-way$/, /^light-my-request$/, /^avvio$/, /^pino/];
/** Schema libraries: `skep list` loads them only to validate the config file. */
const SCHEMA_LIBRARIES = [/^ajv/, /^typebox$/];

function run(
  args: string[],
  env: NodeJS.ProcessEnv,
): { status: number | null; stdout: string; stderr: string; units: Set<string> } {
  const dir = mkdtempSync(join(tmpdir(), 'skep-loads-'));
  try {
    writeFileSync(join(dir, 'record.mjs'), RECORDER);
    writeFileSync(join(dir, 'hooks.mjs'), HOOKS);
    const log = join(dir, 'loaded.txt');
    writeFileSync(log, '');
    const res = spawnSync(
      process.execPath,
      ['--import', pathToFileURL(join(dir, 'record.mjs')).href, BUNDLE, ...args],
      { env: { ...env, SKEP_TEST_LOAD_LOG: log }, encoding: 'utf8', timeout: 60_000 },
    );
    const files = readFileSync(log, 'utf8')
      .split('\n')
      .filter((f) => f !== '');
    return { status: res.status, stdout: res.stdout, stderr: res.stderr, units: loadedUnits(files) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function offenders(units: Set<string>, forbidden: RegExp[]): string[] {
  return [...units].filter((u) => forbidden.some((f) => f.test(u))).sort();
}

test('skep version and skep --help load the command tree only', (t) => {
  if (!requireService(t, 'dist/skep.mjs', existsSync(BUNDLE), 'run `npm run build` first')) return;
  const home = tempHome(t);
  for (const args of [['version'], ['--help'], ['list', '--help']]) {
    const { status, stdout, stderr, units } = run(args, home.env);
    assert.equal(stderr, '', stderr);
    assert.equal(status, 0, args.join(' '));
    assert.match(stdout, /skep/);
    // The recording saw the bundle: the entry's own source and its one library.
    assert.ok(units.has('src/control/cli/main.ts') && units.has('commander'), [...units].join(' '));
    assert.deepEqual(offenders(units, [...SERVER_STACK, ...SCHEMA_LIBRARIES]), [], args.join(' '));
    assert.ok(!units.has('better-sqlite3') && !units.has('src/control/app/context.ts'), args.join(' '));
  }
});

test('skep list loads the listing, not the composition root or the HTTP server stack', (t) => {
  if (!requireService(t, 'dist/skep.mjs', existsSync(BUNDLE), 'run `npm run build` first')) return;
  const home = tempHome(t);
  const { status, stdout, stderr, units } = run(['list'], home.env);
  // An empty listing adds its hint on stderr, and nothing else.
  assert.equal(
    stderr,
    'no workloads; start one with skep run <server> (skep registry list shows the catalog)\n',
  );
  assert.equal(status, 0);
  assert.match(stdout, /^NAME\s+PACKAGE\s+STATUS/);
  assert.ok(
    units.has('src/control/app/workload-list.ts') && units.has('better-sqlite3'),
    [...units].join(' '),
  );
  assert.deepEqual(offenders(units, SERVER_STACK), []);
  // The other domain services are not built for a listing.
  for (const unit of [
    'src/control/app/context.ts',
    'src/registry/service.ts',
    'src/skills/service.ts',
    'src/clients/service.ts',
  ])
    assert.ok(!units.has(unit), unit);
});
