/**
 * Which package store entries (`npm-store.ts`, `uv-store.ts`) the workloads use, and removal
 * of the others.
 *
 * - Each start from a store records the entry it runs in `<Skep cache folder>/package-refs/
 *   <workload>.json` before it installs anything, so a prune running meanwhile keeps it.
 * - An entry is in use when a workload that exists (running or stopped) recorded it, or when
 *   a workload's image pins it exactly (`npx://name@1.2.3`, `uvx://name@1.2.3`). A workload
 *   whose image runs from a store and that has no record yet (created, never started since
 *   records exist) keeps every entry of its package: it may run any of them.
 * - Pruning removes every other entry, and the records of workloads that no longer exist. An
 *   entry goes in one step (renamed away, then deleted), so a start never sees half of one;
 *   a uv entry whose install lock is held is left alone.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomicSync } from '../../shared/index.js';
import { isExactVersion, parseRegistrySpec, parseStoreKey, registryDigest, storeKey } from './npm-store.js';
import { indexDigest, normalizeName, parseUvSpec, parseUvStoreKey, uvStoreKey } from './uv-store.js';

export type PackageStoreKind = 'npm' | 'uv';

/** What a workload's start recorded: the store and the entry's folder name. */
export interface PackageRef {
  store: PackageStoreKind;
  key: string;
}

/** A workload as pruning sees it: its name, image and environment (a uv index changes the key). */
export interface PackageUser {
  name: string;
  image: string;
  env?: Readonly<Record<string, string>>;
}

/** One entry a prune removed (or, in a dry run, would remove). */
export interface PrunedEntry {
  store: PackageStoreKind;
  key: string;
  dir: string;
}

const STORE_FOLDERS: Record<PackageStoreKind, string> = { npm: 'npm-packages', uv: 'uv-packages' };

function refsDir(cacheDir: string): string {
  return join(cacheDir, 'package-refs');
}

function refFile(cacheDir: string, workload: string): string {
  return join(refsDir(cacheDir), `${encodeURIComponent(workload)}.json`);
}

/** Records that `workload` runs the entry `ref` (replacing what it ran before). */
export function recordPackageRef(cacheDir: string, workload: string, ref: PackageRef): void {
  mkdirSync(refsDir(cacheDir), { recursive: true, mode: 0o700 });
  writeFileAtomicSync(refFile(cacheDir, workload), `${JSON.stringify(ref)}\n`);
}

/** What `workload` recorded, or undefined. */
export function readPackageRef(cacheDir: string, workload: string): PackageRef | undefined {
  try {
    const parsed = JSON.parse(readFileSync(refFile(cacheDir, workload), 'utf8')) as Partial<PackageRef>;
    return (parsed.store === 'npm' || parsed.store === 'uv') && typeof parsed.key === 'string'
      ? { store: parsed.store, key: parsed.key }
      : undefined;
  } catch {
    return undefined;
  }
}

/** The entries in use, by store: exact keys, and package names all of whose entries stay. */
interface InUse {
  keys: Set<string>;
  names: Set<string>;
}

/** The name of the package `key` holds in `store`, or undefined for a folder that is no entry. */
function entryName(store: PackageStoreKind, key: string): string | undefined {
  if (store === 'npm') {
    const parsed = parseStoreKey(key);
    return parsed === undefined ? undefined : `${parsed.name}~${parsed.digest ?? ''}`;
  }
  const parsed = parseUvStoreKey(key);
  return parsed === undefined ? undefined : `${parsed.name}~${parsed.digest}`;
}

function inUse(cacheDir: string, users: readonly PackageUser[]): Record<PackageStoreKind, InUse> {
  const used: Record<PackageStoreKind, InUse> = {
    npm: { keys: new Set(), names: new Set() },
    uv: { keys: new Set(), names: new Set() },
  };
  for (const user of users) {
    const ref = readPackageRef(cacheDir, user.name);
    if (ref !== undefined) used[ref.store].keys.add(ref.key);
    if (user.image.startsWith('npx://')) {
      const spec = parseRegistrySpec(user.image.slice('npx://'.length));
      if (spec === undefined) continue;
      const digest = registryDigest(user.env ?? {});
      if (isExactVersion(spec.range)) used.npm.keys.add(storeKey(spec.name, spec.range, digest));
      else if (ref === undefined) used.npm.names.add(`${spec.name}~${digest}`);
    } else if (user.image.startsWith('uvx://')) {
      const spec = parseUvSpec(user.image.slice('uvx://'.length));
      if (spec === undefined) continue;
      const digest = indexDigest(user.env ?? {});
      if (spec.version !== undefined) used.uv.keys.add(uvStoreKey(spec.name, spec.version, digest));
      else if (ref === undefined) used.uv.names.add(`${normalizeName(spec.name)}~${digest}`);
    }
  }
  return used;
}

/**
 * Removes the store entries no workload in `users` uses (all workloads that exist, running or
 * stopped) and the records of workloads not in `users`; with `dryRun`, only says which.
 */
export function prunePackageStores(
  cacheDir: string,
  users: readonly PackageUser[],
  options: { dryRun?: boolean } = {},
): PrunedEntry[] {
  const used = inUse(cacheDir, users);
  const pruned: PrunedEntry[] = [];
  for (const store of ['npm', 'uv'] as const) {
    const root = join(cacheDir, STORE_FOLDERS[store]);
    let keys: string[];
    try {
      keys = readdirSync(root);
    } catch {
      continue;
    }
    for (const key of keys) {
      const name = entryName(store, key);
      if (name === undefined) continue;
      if (used[store].keys.has(key) || used[store].names.has(name)) continue;
      if (store === 'uv' && existsSync(join(root, `.lock-${key}`))) continue;
      const dir = join(root, key);
      pruned.push({ store, key, dir });
      if (options.dryRun !== true) removeEntry(root, key);
    }
  }
  if (options.dryRun !== true) removeStaleRefs(cacheDir, users);
  return pruned;
}

/** Renames an entry out of sight in one step, then deletes it. */
function removeEntry(root: string, key: string): void {
  const trash = join(root, `.removed-${process.pid}-${Date.now().toString(36)}-${key}`);
  try {
    renameSync(join(root, key), trash);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  rmSync(trash, { recursive: true, force: true });
}

function removeStaleRefs(cacheDir: string, users: readonly PackageUser[]): void {
  const live = new Set(users.map((u) => `${encodeURIComponent(u.name)}.json`));
  let files: string[];
  try {
    files = readdirSync(refsDir(cacheDir));
  } catch {
    return;
  }
  for (const file of files)
    if (file.endsWith('.json') && !live.has(file)) rmSync(join(refsDir(cacheDir), file), { force: true });
}
