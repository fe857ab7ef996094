/**
 * A cross-process lock on one client config file: `<file>.lock`, created exclusively and
 * holding the owner's pid and a random token. Every Skep process (API server, CLI, runners)
 * takes it around read-modify-write of the file, so concurrent registrations and workload
 * changes are applied one after another and never interleave.
 *
 * A lock whose owner process is gone (or that is older than `staleMs`) is broken. Breaking is
 * itself guarded by `<file>.lock.break` (also exclusive) and re-checks the content, so two
 * waiters cannot both break the same lock and one of them delete a fresh lock by mistake.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, stat, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SkepError } from '../shared/index.js';

export interface LockOptions {
  /** Give up after this long (ms). */
  timeoutMs?: number;
  /** A lock older than this is considered abandoned (ms). */
  staleMs?: number;
}

export async function withFileLock<T>(
  file: string,
  fn: () => Promise<T>,
  options: LockOptions = {},
): Promise<T> {
  const release = await acquire(`${file}.lock`, options.timeoutMs ?? 20_000, options.staleMs ?? 60_000);
  try {
    return await fn();
  } finally {
    await release();
  }
}

async function acquire(lockPath: string, timeoutMs: number, staleMs: number): Promise<() => Promise<void>> {
  await mkdir(dirname(lockPath), { recursive: true, mode: 0o700 });
  const token = `${process.pid} ${randomBytes(8).toString('hex')}`;
  const deadline = Date.now() + timeoutMs;
  let delay = 2;
  for (;;) {
    try {
      const handle = await open(lockPath, 'wx', 0o600);
      try {
        await handle.writeFile(token);
      } finally {
        await handle.close();
      }
      return async () => {
        // Only remove the lock if it is still ours.
        if ((await readIfExists(lockPath)) === token) await unlink(lockPath).catch(() => undefined);
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    await breakIfStale(lockPath, staleMs);
    if (Date.now() > deadline) {
      throw new SkepError(
        'unavailable',
        `${lockPath} is held by another process; retry, or remove it if no Skep process is running`,
      );
    }
    await sleep(delay + Math.floor(Math.random() * delay));
    delay = Math.min(delay * 2, 50);
  }
}

async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

function isStale(content: string, mtimeMs: number, staleMs: number): boolean {
  if (Date.now() - mtimeMs > staleMs) return true;
  const pid = Number.parseInt(content.split(' ')[0] ?? '', 10);
  // An empty lock file is being written right now by its creator; give it time (age check above).
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

async function breakIfStale(lockPath: string, staleMs: number): Promise<void> {
  let content: string | undefined;
  let mtimeMs: number;
  try {
    content = await readIfExists(lockPath);
    mtimeMs = (await stat(lockPath)).mtimeMs;
  } catch {
    return;
  }
  if (content === undefined || !isStale(content, mtimeMs, staleMs)) return;
  const guard = `${lockPath}.break`;
  try {
    const handle = await open(guard, 'wx', 0o600);
    await handle.close();
  } catch {
    // Someone else is breaking it; a guard left by a crashed breaker is removed after a while.
    const age = await stat(guard).then(
      (s) => Date.now() - s.mtimeMs,
      () => 0,
    );
    if (age > 5_000) await unlink(guard).catch(() => undefined);
    return;
  }
  try {
    if ((await readIfExists(lockPath)) === content) await unlink(lockPath).catch(() => undefined);
  } finally {
    await unlink(guard).catch(() => undefined);
  }
}
