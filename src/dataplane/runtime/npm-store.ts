/**
 * The shared package store of `npx://` workloads: one read-only install per exact package
 * version, used by every workload of that version, whose bin the runtime starts directly (no
 * `npm exec` wrapper process stays behind it).
 *
 * - Only registry specs use it (`name`, `name@version|range|tag`, `@scope/name@…`); `file:`,
 *   git, tarball-URL, alias and path specs stay on `npx -y -- <spec>`.
 * - At every start the spec is resolved to an exact version, as npx does (`npm view <spec>
 *   name version --json`; an exact version needs no lookup; with the host's network a tag
 *   such as `latest` is read from the registry's dist-tags endpoint without starting npm). Of several matching versions
 *   the highest is taken (npx prefers the `latest` tag when it matches: the same version
 *   unless a package moved that tag back). When the registry cannot be reached, the newest
 *   version of that name already in the store is used, and the server's log says so.
 * - An entry is `<Skep cache folder>/npm-packages/<name>@<version>` (a scope's `/` written
 *   `+`, a character no package name holds), with `~<digest>` added when the workload names
 *   its own registry (`registryDigest`). It is complete once it exists: npm installs into
 *   a fresh staging folder beside it (`npm install --prefix <staging> --no-audit --no-fund`,
 *   the npm of the same Node installation as npx, its cache inside the staging folder and
 *   removed afterwards), which is then renamed into place in one step; of two concurrent
 *   installs of the same version the second rename fails and its staging folder is removed.
 *   An entry is never changed afterwards.
 * - The bin is chosen as npx chooses it: the package's only bin (one file, under any number
 *   of names), else the bin named like the package without its scope, else the start is
 *   refused with the list. A JavaScript bin runs as `node <file>` with the node beside npx.
 *
 * Where npm runs (in a sandbox whose network reaches only the registry, or unsandboxed) is the
 * caller's `NpmRunner`; `bwrap-sandbox.ts` provides the sandboxed one.
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  realpathSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { isExecutable, SkepError } from '../../shared/index.js';
import { type InstallerRun, installerTail, runInstaller } from './installer-run.js';
import { StoreFolder, type StoreKeys } from './store-folder.js';

/** A registry package spec: the package's name and the version, range or tag asked for. */
export interface RegistrySpec {
  name: string;
  /** `latest` when the spec names none. */
  range: string;
}

/** One part of a package name (npm: URL-safe, lowercase for new packages, no leading `.` or `_`). */
const NAME_PART = /^[A-Za-z0-9~-][A-Za-z0-9._~-]*$/;
/** An exact semantic version (SemVer 2.0.0 §2, §9, §10), as the store's folder names hold them. */
const EXACT_VERSION = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

/** True when `name` is a package name the store can hold. */
export function isPackageName(name: string): boolean {
  const parts = name.startsWith('@') ? name.slice(1).split('/') : [name];
  if (name.startsWith('@') && parts.length !== 2) return false;
  return name.length <= 214 && parts.every((p) => NAME_PART.test(p));
}

/**
 * The registry spec in `spec` (the part of an `npx://` image after the scheme), or undefined
 * for what the store leaves to npx: `file:`, `git+…`, `github:`, `npm:` aliases, URLs, paths
 * and `user/repo` shorthands.
 */
export function parseRegistrySpec(spec: string): RegistrySpec | undefined {
  if (spec.includes(':') || spec.startsWith('.') || spec.startsWith('/') || spec.startsWith('~'))
    return undefined;
  const match = /^(@[^/@]+\/[^/@]+|[^/@]+)(?:@(.*))?$/.exec(spec);
  if (match === null) return undefined;
  const name = match[1] ?? '';
  const range = match[2] ?? 'latest';
  if (!isPackageName(name) || range === '' || range.includes('/')) return undefined;
  return { name, range };
}

/** True when `range` is one exact version (nothing to look up). */
export function isExactVersion(range: string): boolean {
  return EXACT_VERSION.test(range);
}

/**
 * The store folder name of `name@version` (`@scope/pkg` → `@scope+pkg@1.2.3`), with `~<digest>`
 * when the workload names its own registry (`registryDigest`; `~` is in no version); throws
 * on anything else.
 */
export function storeKey(name: string, version: string, digest = ''): string {
  if (!isPackageName(name) || !isExactVersion(version) || !/^(?:[0-9a-f]{12})?$/.test(digest))
    throw new SkepError('invalid_reference', `'${name}@${version}' is not a package name and exact version`);
  return `${name.replace('/', '+')}@${version}${digest === '' ? '' : `~${digest}`}`;
}

/** The inverse of `storeKey`, or undefined for any other folder name. */
export function parseStoreKey(key: string): { name: string; version: string; digest?: string } | undefined {
  const match = /^(@[^+@/]+\+[^+@/]+|[^+@/]+)@([^@/~]+)(?:~([0-9a-f]{12}))?$/.exec(key);
  if (match === null) return undefined;
  const name = (match[1] ?? '').replace('+', '/');
  const version = match[2] ?? '';
  const digest = match[3];
  return isPackageName(name) && isExactVersion(version)
    ? { name, version, ...(digest === undefined ? {} : { digest }) }
    : undefined;
}

/**
 * The digest of the workload variables that choose where npm downloads from (any
 * `npm_config_…registry`, a scope's among them, and `npm_config_userconfig`, whose file may
 * name one), or '' when it sets none: a workload of another registry gets entries of its own,
 * so its package is never run by a workload of the default registry.
 */
export function registryDigest(env: Readonly<Record<string, string | undefined>>): string {
  const set = Object.entries(env)
    .filter(
      (e): e is [string, string] =>
        /^npm_config_(?:.*registry|userconfig)$/i.test(e[0]) && e[1] !== undefined && e[1] !== '',
    )
    .map(([k, v]) => `${k.toLowerCase()}=${v}`)
    .sort();
  if (set.length === 0) return '';
  return createHash('sha256').update(set.join('\n')).digest('hex').slice(0, 12);
}

/** Orders two exact versions by SemVer 2.0.0 §11 precedence (build metadata ignored). */
export function compareVersions(a: string, b: string): number {
  const split = (v: string) => {
    const [core = '', pre] = v.split('+')[0]?.split(/-(.*)/s) ?? [];
    return { core: core.split('.').map(Number), pre: pre === undefined || pre === '' ? [] : pre.split('.') };
  };
  const x = split(a);
  const y = split(b);
  for (let i = 0; i < 3; i++) {
    const d = (x.core[i] ?? 0) - (y.core[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  // Semantic Versioning 2.0.0 §11.3: a version without pre-release fields ranks above one with them.
  if (x.pre.length === 0 || y.pre.length === 0)
    return y.pre.length - x.pre.length === 0 ? 0 : x.pre.length === 0 ? 1 : -1;
  for (let i = 0; i < Math.max(x.pre.length, y.pre.length); i++) {
    const p = x.pre[i];
    const q = y.pre[i];
    if (p === undefined) return -1;
    if (q === undefined) return 1;
    const pn = /^\d+$/.test(p);
    const qn = /^\d+$/.test(q);
    if (pn && qn && Number(p) !== Number(q)) return Math.sign(Number(p) - Number(q));
    if (pn !== qn) return pn ? -1 : 1;
    if (!pn && p !== q) return p < q ? -1 : 1;
  }
  return 0;
}

/**
 * The bin npx would run for a package whose manifest has `bin` (a string: one bin named like
 * the package without its scope; an object: name → file): the only one (one file, whatever
 * its names), else the one named like the package without its scope; else `package_not_runnable`
 * naming the bins.
 */
export function selectBin(name: string, bin: unknown): { bin: string; file: string } {
  const unscoped = name.split('/').pop() ?? name;
  const bins: Record<string, string> =
    typeof bin === 'string'
      ? { [unscoped]: bin }
      : typeof bin === 'object' && bin !== null
        ? Object.fromEntries(
            Object.entries(bin as Record<string, unknown>).filter(
              (e): e is [string, string] => typeof e[1] === 'string',
            ),
          )
        : {};
  const entries = Object.entries(bins);
  const first = entries[0];
  if (first !== undefined && new Set(entries.map(([, file]) => file)).size === 1)
    return { bin: first[0], file: first[1] };
  const named = bins[unscoped];
  if (named !== undefined) return { bin: unscoped, file: named };
  throw new SkepError(
    'package_not_runnable',
    entries.length === 0
      ? `the package ${name} has no bin to run`
      : `the package ${name} has several bins (${entries.map(([b]) => b).join(', ')}) and none is named ${unscoped}; run one with cmd:// instead`,
  );
}

/** What a run of npm printed and how it ended. */
export type NpmRun = InstallerRun;

/**
 * Runs the npm beside npx with `args`, with `writable` (an empty folder) as the only place
 * it may write: its home is `<writable>/home` and its cache `<writable>/.npm-cache`.
 */
export type NpmRunner = (args: string[], writable: string) => Promise<NpmRun>;

/** The version a package's dist-tag names, or undefined when the registry does not say. */
export type TagLookup = (name: string, tag: string) => Promise<string | undefined>;

/** True when `range` is a dist-tag (`latest`, `next`), not a version range (SemVer ranges start otherwise). */
export function isTag(range: string): boolean {
  return /^[A-Za-z][A-Za-z0-9._-]*$/.test(range) && !/^[xX]$/.test(range);
}

/**
 * Asks the registry (`registry`, npm's registry URL) for a package's dist-tags over the
 * network this process has, as npm's `dist-tag ls` does (`GET /-/package/<name>/dist-tags`).
 * Anything but a clean answer is undefined: the caller asks npm instead.
 */
export function registryTagLookup(registry: string, timeoutMs = 5_000): TagLookup {
  return async (name, tag) => {
    const base = registry.endsWith('/') ? registry : `${registry}/`;
    const res = await fetch(new URL(`-/package/${name.replace('/', '%2f')}/dist-tags`, base), {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok) return undefined;
    const tags = await res.json();
    const version =
      typeof tags === 'object' && tags !== null ? (tags as Record<string, unknown>)[tag] : undefined;
    return typeof version === 'string' && isExactVersion(version) ? version : undefined;
  };
}

/** How long one npm run may take, ms. */
export const NPM_TIMEOUT_MS = 10 * 60_000;

/** The npm and node of the Node installation whose npx is `npx` (an absolute path). */
export function nodeToolsBeside(npx: string): { npm: string; node: string } {
  let dir = dirname(npx);
  try {
    // `/usr/bin/npx` is a link into npm's own folder; npm and node sit beside the link.
    if (!isExecutable(join(dir, 'npm'))) dir = dirname(realpathSync(npx));
  } catch {
    // keep the link's folder
  }
  const node = join(dir, 'node');
  return { npm: join(dir, 'npm'), node: isExecutable(node) ? node : process.execPath };
}

/** Environment of an npm run whose only writable place is `writable`. */
export function npmRunEnv(base: Record<string, string>, writable: string): Record<string, string> {
  return {
    ...base,
    npm_config_cache: join(writable, '.npm-cache'),
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
  };
}

/** An `NpmRunner` without a sandbox (the sandbox is off or unavailable); npm's stderr goes to `log`. */
export function plainNpmRunner(
  npm: string,
  env: Record<string, string>,
  log: (line: string) => void,
): NpmRunner {
  return (args, writable) =>
    runInstaller(npm, args, { env: npmRunEnv(env, writable), cwd: writable, timeoutMs: NPM_TIMEOUT_MS }, log);
}

/** A store entry ready to run. */
export interface StoreEntry {
  name: string;
  version: string;
  /** The entry's folder (read-only for servers). */
  dir: string;
  bin: string;
  /** The bin's file (real path). */
  file: string;
  /** True when this start installed it. */
  installed: boolean;
}

/** True when the file's first line names an interpreter other than node. */
function isForeignScript(file: string): boolean {
  const buf = Buffer.alloc(256);
  let n: number;
  try {
    const fd = openSync(file, 'r');
    try {
      n = readSync(fd, buf, 0, buf.length, 0);
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
  const first = buf.subarray(0, n).toString('utf8').split('\n')[0] ?? '';
  return first.startsWith('#!') && !/\bnode\b/.test(first);
}

/** The command that runs an entry's bin: `node <file>` for JavaScript, else the file itself. */
export function binCommand(
  entry: StoreEntry,
  node: string,
  args: readonly string[],
): { command: string; args: string[] } {
  return isForeignScript(entry.file)
    ? { command: entry.file, args: [...args] }
    : { command: node, args: [entry.file, ...args] };
}

const NPM_KEYS: StoreKeys = {
  format: storeKey,
  parse: (folder) => {
    const key = parseStoreKey(folder);
    return key === undefined ? undefined : { ...key, digest: key.digest ?? '' };
  },
  canonicalName: (name) => name,
  compareVersions,
};

export class NpmStore extends StoreFolder {
  constructor(cacheDir: string) {
    super(join(cacheDir, 'npm-packages'), NPM_KEYS);
  }

  /** A scratch folder with an empty `home` for npm (its user config and logs stay inside). */
  #npmScratch(label: string): string {
    const dir = this.scratch(label);
    mkdirSync(join(dir, 'home'), { mode: 0o700 });
    return dir;
  }

  /**
   * The exact version `spec` names: for a tag, `tags` first when given (the registry's
   * dist-tags, asked directly); else, or when that gives nothing, `npm view` through `run`;
   * when that fails, the newest version of the name in the store (`log` says so); else
   * `bad_gateway` with npm's words.
   */
  async resolve(
    spec: RegistrySpec,
    run: NpmRunner,
    log: (line: string) => void,
    tags?: TagLookup,
    digest = '',
  ): Promise<string> {
    if (isExactVersion(spec.range)) return spec.range;
    if (tags !== undefined && isTag(spec.range)) {
      const tagged = await tags(spec.name, spec.range).catch(() => undefined);
      if (tagged !== undefined) return tagged;
    }
    const scratch = this.#npmScratch('view');
    let result: NpmRun;
    try {
      // A bare name is npm's `latest` tag (and npm's error names it as npx's does: `<name>@*`).
      const target = spec.range === 'latest' ? spec.name : `${spec.name}@${spec.range}`;
      result = await run(['view', target, 'name', 'version', '--json'], scratch);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
    const found = result.code === 0 ? versionsIn(result.stdout) : [];
    const best = found.sort((a, b) => compareVersions(b, a))[0];
    if (best !== undefined) return best;
    const why =
      result.code === 0 ? `no version of ${spec.name} matches ${spec.range}` : installerTail(result);
    const installed = this.installedVersions(spec.name, digest)[0];
    if (installed !== undefined && result.code !== 0) {
      log(
        `[skep] npm store: cannot resolve ${spec.name}@${spec.range} (${why}); using ${spec.name}@${installed}, the newest installed`,
      );
      return installed;
    }
    throw new SkepError('bad_gateway', `cannot resolve npx://${spec.name}@${spec.range}: ${why}`);
  }

  /** The entry of `name@version` (of the registry whose digest is `digest`), installed through `run` when it is missing. */
  async ensure(
    name: string,
    version: string,
    run: NpmRunner,
    log: (line: string) => void,
    digest = '',
  ): Promise<StoreEntry> {
    const dir = this.entryDir(name, version, digest);
    let installed = false;
    if (!existsSync(dir)) {
      this.sweep();
      log(`[skep] npm store: installing ${name}@${version}`);
      const staging = this.#npmScratch(`staging-${storeKey(name, version, digest)}`);
      try {
        const result = await run(
          ['install', '--prefix', staging, '--no-audit', '--no-fund', '--no-save', `${name}@${version}`],
          staging,
        );
        if (result.code !== 0)
          throw new SkepError(
            'bad_gateway',
            `cannot install npx://${name}@${version}: ${installerTail(result)}`,
          );
        rmSync(join(staging, '.npm-cache'), { recursive: true, force: true });
        rmSync(join(staging, 'home'), { recursive: true, force: true });
        readManifest(staging, name);
        installed = commitStaging(staging, dir);
        if (!installed) log(`[skep] npm store: ${name}@${version} was installed by another start meanwhile`);
      } finally {
        rmSync(staging, { recursive: true, force: true });
      }
    } else {
      log(`[skep] npm store: ${name}@${version} is installed; no download`);
    }
    const manifest = readManifest(dir, name);
    const chosen = selectBin(name, manifest['bin']);
    const file = realpathSync(join(dir, 'node_modules', name, chosen.file));
    return { name, version, dir, bin: chosen.bin, file, installed };
  }
}

/**
 * Renames a complete staging folder to `dir` in one step. False when `dir` already exists
 * (another install won): the caller removes its staging folder.
 */
export function commitStaging(staging: string, dir: string): boolean {
  try {
    renameSync(staging, dir);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if ((code === 'ENOTEMPTY' || code === 'EEXIST') && existsSync(dir)) return false;
    throw err;
  }
}

function readManifest(dir: string, name: string): Record<string, unknown> {
  const path = join(dir, 'node_modules', name, 'package.json');
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch (err) {
    throw new SkepError('bad_gateway', `the installed package ${name} has no readable package.json`, {
      cause: err,
    });
  }
}

/** The versions in `npm view … name version --json` output (one object, or an array of them). */
export function versionsIn(stdout: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(stdout);
  } catch {
    return [];
  }
  const items = Array.isArray(parsed) ? parsed : [parsed];
  return items
    .map((item) =>
      typeof item === 'string'
        ? item
        : typeof item === 'object' && item !== null
          ? (item as Record<string, unknown>)['version']
          : undefined,
    )
    .filter((v): v is string => typeof v === 'string' && isExactVersion(v));
}
