/**
 * The project lock file (`skep.lock.yaml` in the project root; the format of ToolHive's
 * `toolhive.lock.yaml`): `version: 1` and `skills` entries sorted by
 * name. Unknown keys of the file and of entries are kept. Writes are atomic (temp + rename,
 * mode 0644). Also the frozen `contentDigest` algorithm over an installed skill folder.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { SkepError, writeFileAtomic } from '../shared/index.js';

export const LOCK_FILE = 'skep.lock.yaml';

export interface LockEntry {
  name: string;
  version?: string;
  source: string;
  resolvedReference?: string;
  digest: string;
  contentDigest?: string;
  unsigned?: boolean;
  requiredBy?: string[];
  explicit?: boolean;
  [key: string]: unknown;
}

export interface LockFile {
  version: number;
  skills: LockEntry[];
  [key: string]: unknown;
}

export function lockPath(projectRoot: string): string {
  return join(projectRoot, LOCK_FILE);
}

export async function readLock(projectRoot: string): Promise<LockFile> {
  let text: string;
  try {
    text = await readFile(lockPath(projectRoot), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, skills: [] };
    throw err;
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new SkepError(
      'skill_lock_invalid',
      `${LOCK_FILE}: not valid YAML: ${(err as Error).message.split('\n')[0]}`,
    );
  }
  if (raw === null || raw === undefined) return { version: 1, skills: [] };
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw new SkepError('skill_lock_invalid', `${LOCK_FILE}: expected a YAML map`);
  const file = raw as Record<string, unknown>;
  const version = file['version'] ?? 1;
  if (version !== 1)
    throw new SkepError(
      'skill_lock_invalid',
      `unsupported lock file version: version ${String(version)} (upgrade skep to read this lock file)`,
    );
  const skills = Array.isArray(file['skills']) ? (file['skills'] as LockEntry[]) : [];
  return { ...file, version: 1, skills };
}

export async function writeLock(projectRoot: string, lock: LockFile): Promise<void> {
  const sorted = [...lock.skills].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const out: LockFile = { ...lock, version: 1, skills: sorted };
  if (out.skills.length === 0) delete (out as Partial<LockFile>).skills;
  await writeFileAtomic(lockPath(projectRoot), stringifyYaml(out), 0o644);
}

/** Inserts or replaces the entry for `entry.name`, keeping unknown keys and a sticky `explicit`. */
export function upsertEntry(lock: LockFile, entry: LockEntry): void {
  const index = lock.skills.findIndex((e) => e.name === entry.name);
  const previous = index === -1 ? undefined : lock.skills[index];
  const merged: LockEntry = { ...previous, ...entry };
  if (previous?.explicit === true) merged.explicit = true;
  const requiredBy = new Set([...(previous?.requiredBy ?? []), ...(entry.requiredBy ?? [])]);
  if (requiredBy.size > 0) merged.requiredBy = [...requiredBy].sort();
  else delete merged.requiredBy;
  if (index === -1) lock.skills.push(merged);
  else lock.skills[index] = merged;
}

/** Removes `name` and strips it from every other entry's `requiredBy`. */
export function removeEntry(lock: LockFile, name: string): void {
  lock.skills = lock.skills.filter((e) => e.name !== name);
  for (const e of lock.skills) {
    if (e.requiredBy === undefined) continue;
    e.requiredBy = e.requiredBy.filter((p) => p !== name);
    if (e.requiredBy.length === 0) delete e.requiredBy;
  }
}

/**
 * contentDigest (frozen): regular files only, `/` paths sorted byte-wise; for each file feed
 * `path, 0x00, sha256(content) (32 raw bytes), "\n"` into a running SHA-256.
 */
export async function contentDigest(dir: string): Promise<string> {
  const files: string[] = [];
  const walk = async (rel: string) => {
    for (const entry of await readdir(join(dir, rel), { withFileTypes: true })) {
      const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) await walk(child);
      else if (entry.isFile()) {
        if (/[\u0000-\u001f]/.test(child))
          throw new SkepError('skill_invalid', `content digest: invalid path "${child}"`);
        files.push(child);
      }
    }
  };
  await walk('');
  files.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const hash = createHash('sha256');
  for (const file of files) {
    const content = await readFile(join(dir, ...file.split('/')));
    hash.update(file);
    hash.update(Buffer.from([0]));
    hash.update(createHash('sha256').update(content).digest());
    hash.update('\n');
  }
  return `sha256:${hash.digest('hex')}`;
}
