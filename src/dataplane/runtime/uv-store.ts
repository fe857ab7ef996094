/**
 * The shared package store of `uvx://` workloads: one install per exact package version (and
 * package index), made by Skep with the `uv` beside `uvx`, used read-only by every workload of
 * that version, whose entry point the runtime starts directly (no `uvx` resolving and
 * downloading the package again in each workload's home).
 *
 * - Only plain specs use it: `name` and `name@<exact version>` (uvx's own spelling of a
 *   pinned tool). `name@latest`, extras, `--from` forms, URLs and paths stay on `uvx <spec>`.
 *   A bare name runs the newest version already in the store, as `uvx name` runs the version
 *   uv has cached; when none is there, `uv pip compile` resolves the name to its newest
 *   version first.
 * - An entry is `<Skep cache folder>/uv-packages/<normalized name>==<version>` (the name
 *   normalized as the Python Packaging "Names and normalization" specification says), with
 *   `~<digest>` added when the workload's environment names its own package index or Python
 *   (`UV_ENTRY_VARIABLES`): a workload that names another index can never put its package
 *   where a workload of the default index looks.
 * - `uv tool install` writes the package's virtual environment with absolute paths in its
 *   scripts, so an entry is installed where it stays: the installing start holds the entry's
 *   lock (a folder made with mkdir(2), which fails when it exists, holding the owner's pid),
 *   installs, then writes the entry's `.complete` file. Only an entry with that file is used;
 *   a start that finds the lock waits for it, and takes it over when its owner is gone (the
 *   half-made entry is removed first). An entry is never changed afterwards.
 * - Skep runs uv itself, outside the server's sandbox. For a sandboxed server it installs
 *   only wheels (`--no-build`), so no code of the package runs outside the sandbox; a package
 *   that has only a source distribution then runs through `uvx` in the sandbox as before.
 * - The entry point is chosen as uvx chooses it: the script named like the package, else the
 *   package's only one; else the start is refused with the list.
 */
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { isExecutable, processAlive, SkepError } from '../../shared/index.js';
import { type InstallerRun, installerTail, runInstaller } from './installer-run.js';
import { StoreFolder, type StoreKeys } from './store-folder.js';

/** A `uvx://` spec the store runs: the package's name and, when pinned, its exact version. */
export interface UvSpec {
  name: string;
  /** Undefined for a bare name. */
  version?: string;
}

/** A Python distribution name (Python Packaging "Names and normalization": ASCII letters, digits, `.`, `_`, `-`). */
const DIST_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;
/** A PEP 440 public version (the characters of one; uv checks the rest). */
const EXACT_VERSION =
  /^(?:\d+!)?\d+(?:\.\d+)*(?:[._-]?(?:a|b|rc|alpha|beta|c|pre|preview|post|rev|r|dev)[._-]?\d*)*(?:\+[A-Za-z0-9.]+)?$/i;

/**
 * The workload variables that choose what uv installs (where it downloads from, which Python):
 * part of an entry's key.
 */
export const UV_ENTRY_VARIABLES = [
  'UV_INDEX_URL',
  'UV_DEFAULT_INDEX',
  'UV_INDEX',
  'UV_EXTRA_INDEX_URL',
  'UV_FIND_LINKS',
  'UV_PYTHON',
] as const;

/** The workload's uv variables that change how uv downloads, not what: passed on, not keyed. */
const UV_PASSED_VARIABLES = ['UV_NATIVE_TLS', 'UV_OFFLINE', 'UV_PYTHON_DOWNLOADS'] as const;

/** The normalized form of a distribution name (lowercase, each run of `-`, `_`, `.` one `-`). */
export function normalizeName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '-');
}

/** True when `version` is one exact PEP 440 version. */
export function isExactUvVersion(version: string): boolean {
  return EXACT_VERSION.test(version);
}

/** The spec in `spec` (the part of a `uvx://` image after the scheme) the store runs, or undefined. */
export function parseUvSpec(spec: string): UvSpec | undefined {
  const at = spec.indexOf('@');
  const name = at < 0 ? spec : spec.slice(0, at);
  if (!DIST_NAME.test(name)) return undefined;
  if (at < 0) return { name };
  const version = spec.slice(at + 1);
  return isExactUvVersion(version) ? { name, version } : undefined;
}

/** The digest of the `UV_ENTRY_VARIABLES` `env` sets, or '' when it sets none. */
export function indexDigest(env: Readonly<Record<string, string | undefined>>): string {
  const set = UV_ENTRY_VARIABLES.filter((k) => (env[k] ?? '') !== '').map((k) => `${k}=${env[k]}`);
  if (set.length === 0) return '';
  return createHash('sha256').update(set.join('\n')).digest('hex').slice(0, 12);
}

/** The store folder name of `name==version` under the index digest `digest`; throws on anything else. */
export function uvStoreKey(name: string, version: string, digest = ''): string {
  if (!DIST_NAME.test(name) || !isExactUvVersion(version) || !/^(?:[0-9a-f]{12})?$/.test(digest))
    throw new SkepError('invalid_reference', `'${name}==${version}' is not a package name and exact version`);
  return `${normalizeName(name)}==${version}${digest === '' ? '' : `~${digest}`}`;
}

/** The inverse of `uvStoreKey`, or undefined for any other folder name. */
export function parseUvStoreKey(key: string): { name: string; version: string; digest: string } | undefined {
  const match = /^([a-z0-9](?:[a-z0-9-]*[a-z0-9])?)==([^~/=]+)(?:~([0-9a-f]{12}))?$/.exec(key);
  if (match === null || !isExactUvVersion(match[2] ?? '')) return undefined;
  return { name: match[1] ?? '', version: match[2] ?? '', digest: match[3] ?? '' };
}

/** Orders two exact versions by their release numbers, then as text (enough to pick the newest installed). */
export function compareUvVersions(a: string, b: string): number {
  const release = (v: string) =>
    (/^(?:\d+!)?([\d.]+)/.exec(v)?.[1] ?? '').split('.').filter(Boolean).map(Number);
  const x = release(a);
  const y = release(b);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  // A release without a suffix ranks above its pre-releases (PEP 440 "Pre-releases").
  const sx = a.slice(a.search(/[a-z+]/i) >>> 0);
  const sy = b.slice(b.search(/[a-z+]/i) >>> 0);
  if (sx === sy) return 0;
  if (a.search(/[a-z+]/i) < 0) return 1;
  if (b.search(/[a-z+]/i) < 0) return -1;
  return sx < sy ? -1 : 1;
}

/**
 * The entry point uvx would run from an entry's script folder: the one named like the
 * package (as given, or normalized), else the only one; else `package_not_runnable` naming them.
 */
export function selectScript(name: string, scripts: readonly string[]): string {
  const named = scripts.find((s) => s === name || normalizeName(s) === normalizeName(name));
  if (named !== undefined) return named;
  if (scripts.length === 1 && scripts[0] !== undefined) return scripts[0];
  throw new SkepError(
    'package_not_runnable',
    scripts.length === 0
      ? `the package ${name} has no entry point to run`
      : `the package ${name} has several entry points (${scripts.join(', ')}) and none is named ${name}; run one with cmd:// instead`,
  );
}

/** What a run of uv printed and how it ended. */
export type UvRun = InstallerRun;

/** Runs `uv` with `args`, its own variables `vars` added, in `cwd`. */
export type UvRunner = (args: string[], vars: Record<string, string>, cwd: string) => Promise<UvRun>;

/** How long one uv run may take, ms. */
export const UV_TIMEOUT_MS = 10 * 60_000;

/** The `uv` beside `uvx` (an absolute path), as uv's installers place them. */
export function uvBeside(uvx: string): string {
  const beside = join(dirname(uvx), 'uv');
  if (isExecutable(beside)) return beside;
  try {
    return join(dirname(realpathSync(uvx)), 'uv');
  } catch {
    return beside;
  }
}

/**
 * A `UvRunner` for the `uv` at `uv`: its environment is `base` (Skep's own, for the proxy
 * and certificate settings uv needs) without its `UV_*` variables, then the uv variables of
 * the workload's environment (`UV_ENTRY_VARIABLES`, which key the entry, and a few that only
 * change how uv downloads), then `vars`; uv's stderr goes to `log`.
 */
export function plainUvRunner(
  uv: string,
  base: Readonly<Record<string, string | undefined>>,
  workloadEnv: Readonly<Record<string, string>>,
  log: (line: string) => void,
): UvRunner {
  const index = Object.fromEntries(
    [...UV_ENTRY_VARIABLES, ...UV_PASSED_VARIABLES]
      .filter((k) => (workloadEnv[k] ?? '') !== '')
      .map((k) => [k, workloadEnv[k] as string]),
  );
  const own = Object.fromEntries(
    Object.entries(base).filter((e): e is [string, string] => e[1] !== undefined && !/^UV_/.test(e[0])),
  );
  return (args, vars, cwd) =>
    runInstaller(
      uv,
      args,
      { env: { ...own, ...index, ...vars, UV_NO_PROGRESS: '1' }, cwd, timeoutMs: UV_TIMEOUT_MS },
      log,
    );
}

/** A uv store entry ready to run. */
export interface UvStoreEntry {
  name: string;
  version: string;
  /** The entry's folder (read-only for servers). */
  dir: string;
  /** The entry point's name. */
  bin: string;
  /** The entry point's file (in the entry's `bin` folder). */
  file: string;
  /** True when this start installed it. */
  installed: boolean;
}

/** The file that marks a finished entry. */
export const COMPLETE_FILE = '.complete';

/** How often a start waiting for another's install looks again, ms. */
const LOCK_POLL_MS = 200;

export interface UvEnsureOptions {
  /** Install only wheels (the server is sandboxed: no package code runs outside it). */
  wheelsOnly: boolean;
  /** The index digest of the workload (`indexDigest`). */
  digest: string;
}

const UV_KEYS: StoreKeys = {
  format: uvStoreKey,
  parse: parseUvStoreKey,
  canonicalName: normalizeName,
  compareVersions: compareUvVersions,
  completeFile: COMPLETE_FILE,
};

export class UvStore extends StoreFolder {
  constructor(cacheDir: string) {
    super(join(cacheDir, 'uv-packages'), UV_KEYS);
  }

  /**
   * The exact version to run: the pinned one; for a bare name the newest installed (`log`
   * says so), else what `uv pip compile` resolves the name to; else `bad_gateway` with uv's words.
   */
  async resolve(spec: UvSpec, run: UvRunner, log: (line: string) => void, digest = ''): Promise<string> {
    if (spec.version !== undefined) return spec.version;
    const installed = this.installedVersions(spec.name, digest)[0];
    if (installed !== undefined) {
      log(
        `[skep] uv store: ${spec.name} is installed at ${installed}; pin uvx://${spec.name}@<version> for another`,
      );
      return installed;
    }
    const scratch = this.scratch('resolve');
    let result: UvRun;
    try {
      writeFileSync(join(scratch, 'requirements.in'), `${spec.name}\n`);
      result = await run(
        ['pip', 'compile', 'requirements.in', '--quiet', '--no-header', '--no-annotate', '--no-config'],
        { UV_CACHE_DIR: join(scratch, 'cache') },
        scratch,
      );
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
    const wanted = normalizeName(spec.name);
    const pinned = result.stdout
      .split('\n')
      .map((l) => /^([A-Za-z0-9._-]+)==(\S+)/.exec(l.trim()))
      .find((m) => m !== null && normalizeName(m[1] ?? '') === wanted)?.[2];
    if (result.code === 0 && pinned !== undefined && isExactUvVersion(pinned)) return pinned;
    throw new SkepError(
      'bad_gateway',
      `cannot resolve uvx://${spec.name}: ${result.code === 0 ? 'uv named no version' : installerTail(result)}`,
    );
  }

  /** The entry of `name==version`, installed through `run` when it is missing or unfinished. */
  async ensure(
    name: string,
    version: string,
    run: UvRunner,
    log: (line: string) => void,
    options: UvEnsureOptions,
  ): Promise<UvStoreEntry> {
    const key = uvStoreKey(name, version, options.digest);
    const dir = this.entryDir(name, version, options.digest);
    let installed = false;
    if (existsSync(join(dir, COMPLETE_FILE))) {
      log(`[skep] uv store: ${name}==${version} is installed; no download`);
    } else {
      this.sweep();
      mkdirSync(this.root, { recursive: true, mode: 0o700 });
      const lock = join(this.root, `.lock-${key}`);
      await acquireLock(lock, log, `${name}==${version}`);
      try {
        if (!existsSync(join(dir, COMPLETE_FILE))) {
          log(`[skep] uv store: installing ${name}==${version}`);
          // A start that died mid-install left a half-made entry: start over.
          rmSync(dir, { recursive: true, force: true });
          mkdirSync(dir, { recursive: true, mode: 0o755 });
          const cache = this.scratch('cache');
          try {
            const result = await run(
              [
                'tool',
                'install',
                '--no-config',
                ...(options.wheelsOnly ? ['--no-build'] : []),
                `${name}==${version}`,
              ],
              {
                UV_TOOL_DIR: join(dir, 'tools'),
                UV_TOOL_BIN_DIR: join(dir, 'bin'),
                UV_CACHE_DIR: cache,
                // A Python uv downloads lives in the entry, which the sandbox shows.
                UV_PYTHON_INSTALL_DIR: join(dir, 'python'),
                UV_PYTHON_BIN_DIR: join(dir, 'python-bin'),
              },
              dir,
            );
            if (result.code !== 0) {
              rmSync(dir, { recursive: true, force: true });
              throw new SkepError(
                'bad_gateway',
                `cannot install uvx://${name}@${version}: ${installerTail(result)}`,
              );
            }
          } finally {
            rmSync(cache, { recursive: true, force: true });
          }
          writeFileSync(join(dir, COMPLETE_FILE), `${name}==${version}\n`);
          installed = true;
        } else {
          log(`[skep] uv store: ${name}==${version} was installed by another start meanwhile`);
        }
      } finally {
        rmSync(lock, { recursive: true, force: true });
      }
    }
    const binDir = join(dir, 'bin');
    const scripts = readdirSync(binDir).filter((s) => isExecutable(join(binDir, s)));
    const bin = selectScript(name, scripts);
    return { name, version, dir, bin, file: join(binDir, bin), installed };
  }
}

/**
 * Takes the lock folder `lock` (mkdir fails when it exists: one holder at a time), waiting
 * while another live process holds it and taking it over from one that is gone.
 */
async function acquireLock(lock: string, log: (line: string) => void, what: string): Promise<void> {
  let said = false;
  for (;;) {
    try {
      mkdirSync(lock, { mode: 0o700 });
      writeFileSync(join(lock, 'pid'), String(process.pid));
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const owner = lockOwner(lock);
    if (owner !== undefined && !processAlive(owner)) {
      rmSync(lock, { recursive: true, force: true });
      continue;
    }
    if (!said) log(`[skep] uv store: another start is installing ${what}; waiting for it`);
    said = true;
    await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
  }
}

/** The pid in a lock folder, or undefined while its owner has not written it yet. */
function lockOwner(lock: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(lock, 'pid'), 'utf8'));
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    // Not written yet; an owner that died before writing it leaves a lock older than a minute.
    try {
      return Date.now() - statSync(lock).mtimeMs > 60_000 ? 0x7fffffff : undefined;
    } catch {
      return undefined;
    }
  }
}
