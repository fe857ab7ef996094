/**
 * The skill layer: a gzipped tar of the skill's files. Packing is reproducible (sorted
 * entries, mode 0644, uid/gid 0, mtime = SOURCE_DATE_EPOCH or 0, gzip header with that mtime
 * and OS 255, as ToolHive packs a skill). Reading treats the archive as hostile: only regular
 * files with relative, non-escaping paths are accepted, within per-file, total and count
 * limits, and files are written only below a fresh temp directory that is renamed into
 * place afterwards.
 */
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { createGunzip, gzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { SkepError } from '../shared/index.js';
import type { SkillFile } from './skill-dir.js';

export interface ArchiveLimits {
  /** Largest size of one file, bytes. */
  maxFileBytes: number;
  /** Largest uncompressed size of the whole tar stream, bytes. */
  maxTotalBytes: number;
  maxFiles: number;
}

/** ToolHive's extraction limits: 100 MiB per file, 500 MiB gunzipped, 1000 files. */
export const DEFAULT_LIMITS: ArchiveLimits = {
  maxFileBytes: 100 * 1024 * 1024,
  maxTotalBytes: 500 * 1024 * 1024,
  maxFiles: 1000,
};

export function sourceDateEpoch(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env['SOURCE_DATE_EPOCH'];
  if (raw === undefined || raw === '') return 0;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0)
    throw new SkepError('invalid_config', `SOURCE_DATE_EPOCH must be a non-negative integer, got "${raw}"`);
  return n;
}

/** Builds the tar (uncompressed) of `files`, which must already be sorted. */
export async function packTar(files: readonly SkillFile[], epoch: number): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  const done = new Promise<void>((res, rej) => {
    pack.on('data', (c: unknown) => {
      chunks.push(c as Buffer);
    });
    pack.on('end', () => res());
    pack.on('error', rej);
  });
  const mtime = new Date(epoch * 1000);
  for (const file of files) {
    await new Promise<void>((res, rej) => {
      pack.entry(
        {
          name: file.path,
          size: file.data.length,
          mode: 0o644,
          uid: 0,
          gid: 0,
          uname: '',
          gname: '',
          mtime,
          type: 'file',
        },
        file.data,
        (err) => (err ? rej(err) : res()),
      );
    });
  }
  pack.finalize();
  await done;
  return Buffer.concat(chunks);
}

/** Gzips at best compression with a fixed header (mtime = epoch, OS = 255). */
export function gzipDeterministic(data: Buffer, epoch: number): Buffer {
  const out = gzipSync(data, { level: 9 });
  out.writeUInt32LE(epoch >>> 0, 4);
  out[9] = 255;
  return out;
}

/** Normalises an archive entry name, or refuses it when it could escape the target. */
export function safeEntryPath(name: string): string {
  if (name === '' || /[\u0000-\u001f\u007f]/.test(name))
    throw refuse(name, 'has an empty name or control characters');
  if (name.includes('\\')) throw refuse(name, 'contains a backslash');
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) throw refuse(name, 'is an absolute path');
  const parts = name.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) throw refuse(name, "contains a '..' component that escapes the target");
  if (parts.length === 0) throw refuse(name, 'has an empty name');
  return parts.join('/');
}

function refuse(name: string, why: string): SkepError {
  return new SkepError('skill_invalid', `unsafe skill archive: entry "${name}" ${why}; refused`);
}

export interface ArchiveEntry {
  path: string;
  mode: number;
  data: Buffer;
}

/**
 * Reads a tar.gz skill layer into memory, enforcing every safety rule. Nothing is written
 * to disk here; see `writeTree` for that.
 */
export async function readSkillArchive(
  layer: Buffer,
  limits: ArchiveLimits = DEFAULT_LIMITS,
): Promise<ArchiveEntry[]> {
  let total = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      total += chunk.length;
      if (total > limits.maxTotalBytes) {
        cb(
          new SkepError(
            'skill_invalid',
            `unsafe skill archive: more than ${limits.maxTotalBytes} bytes uncompressed; refused`,
          ),
        );
        return;
      }
      cb(null, chunk);
    },
  });
  const gunzip = createGunzip();
  const extract = tar.extract();
  const source = Readable.from([layer]);
  const failures: unknown[] = [];
  const onError = (err: unknown) => {
    failures.push(err);
    extract.destroy(err as Error);
  };
  source.on('error', onError);
  gunzip.on('error', (err) =>
    onError(new SkepError('skill_invalid', `the skill layer is not valid gzip: ${err.message}`)),
  );
  counter.on('error', onError);
  source.pipe(gunzip).pipe(counter).pipe(extract);

  const entries: ArchiveEntry[] = [];
  const seen = new Set<string>();
  try {
    for await (const entry of extract) {
      const h = entry.header;
      if (h.type === 'directory') {
        safeEntryPath(h.name);
        entry.resume();
        continue;
      }
      if (h.type === 'symlink' || h.type === 'link') {
        throw refuse(
          h.name,
          `is a ${h.type === 'link' ? 'hard link' : 'symlink'} (to "${h.linkname ?? ''}"); links are not allowed`,
        );
      }
      if (h.type !== 'file' && h.type !== 'contiguous-file')
        throw refuse(h.name, `is a ${h.type}, not a regular file`);
      const path = safeEntryPath(h.name);
      if (seen.has(path)) throw refuse(h.name, 'appears twice');
      seen.add(path);
      if (entries.length >= limits.maxFiles) {
        throw new SkepError(
          'skill_invalid',
          `unsafe skill archive: more than ${limits.maxFiles} files; refused`,
        );
      }
      if ((h.size ?? 0) > limits.maxFileBytes)
        throw refuse(h.name, `is larger than the ${limits.maxFileBytes}-byte per-file limit`);
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of entry) {
        size += (chunk as Buffer).length;
        if (size > limits.maxFileBytes)
          throw refuse(h.name, `is larger than the ${limits.maxFileBytes}-byte per-file limit`);
        chunks.push(chunk as Buffer);
      }
      entries.push({ path, mode: h.mode ?? 0o644, data: Buffer.concat(chunks) });
    }
  } catch (err) {
    source.destroy();
    gunzip.destroy();
    counter.destroy();
    const first = failures.find((f) => f instanceof SkepError) ?? err;
    if (first instanceof SkepError) throw first;
    throw new SkepError(
      'skill_invalid',
      `the skill layer is not a valid tar archive: ${(first as Error).message}`,
      { cause: first },
    );
  }
  const late = failures.find((f) => f instanceof SkepError);
  if (late !== undefined) throw late;
  return entries.sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
}

/** True when some component of `path` (up to the root) is a symlink. */
async function hasSymlinkComponent(path: string): Promise<boolean> {
  let current = resolve(path);
  for (;;) {
    try {
      if ((await lstat(current)).isSymbolicLink()) return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const parent = dirname(current);
    if (parent === current) return false;
    current = parent;
  }
}

/**
 * Writes `entries` into a fresh temp directory next to `target`, then swaps it into place
 * with a rename. An existing `target` is moved aside first and restored if the swap fails;
 * the returned function removes that backup (call it once everything else succeeded) and
 * the other one restores it (rollback).
 */
export async function writeTree(
  target: string,
  entries: readonly ArchiveEntry[],
): Promise<{ commit(): Promise<void>; rollback(): Promise<void> }> {
  const parent = dirname(target);
  if (await hasSymlinkComponent(parent)) {
    throw new SkepError(
      'skill_invalid',
      `refusing to write into "${parent}": a component of the path is a symlink`,
    );
  }
  await mkdir(parent, { recursive: true, mode: 0o750 });
  const tag = randomBytes(6).toString('hex');
  const temp = join(parent, `.skep-extract-${tag}`);
  const backup = join(parent, `.skep-backup-${tag}`);
  await mkdir(temp, { mode: 0o750 });
  try {
    for (const entry of entries) {
      const dest = resolve(temp, ...entry.path.split('/'));
      if (!dest.startsWith(temp + sep)) throw refuse(entry.path, 'escapes the target directory');
      await mkdir(dirname(dest), { recursive: true, mode: 0o750 });
      await writeFile(dest, entry.data, { flag: 'wx', mode: entry.mode & 0o777 & 0o644 });
    }
  } catch (err) {
    await rm(temp, { recursive: true, force: true });
    if (
      (err as NodeJS.ErrnoException).code === 'ENOTDIR' ||
      (err as NodeJS.ErrnoException).code === 'EEXIST'
    ) {
      throw new SkepError(
        'skill_invalid',
        'unsafe skill archive: a file and a directory share a path; refused',
        { cause: err },
      );
    }
    throw err;
  }
  let movedAside = false;
  try {
    await lstat(target);
    await rename(target, backup);
    movedAside = true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      await rm(temp, { recursive: true, force: true });
      throw err;
    }
  }
  try {
    await rename(temp, target);
  } catch (err) {
    await rm(temp, { recursive: true, force: true });
    if (movedAside) await rename(backup, target);
    throw err;
  }
  return {
    async commit() {
      if (movedAside) await rm(backup, { recursive: true, force: true });
    },
    async rollback() {
      await rm(target, { recursive: true, force: true });
      if (movedAside) await rename(backup, target);
    },
  };
}
