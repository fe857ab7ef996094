/**
 * Whether a client application is installed, judged from the client's own traces. The reference
 * stats the client's config directory to detect it, but registering a client makes Skep create that
 * directory (its lock file) and the config file, after which every registered client would count as
 * installed. So the paths Skep creates are recorded (`client_created_paths`), and a directory Skep
 * created counts only once it holds something that is not Skep's; a file Skep created never counts.
 * The client's program on PATH (for clients that have a well-known one) counts too.
 */
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, parse } from 'node:path';
import { findExecutable } from '../shared/index.js';
import type { Store } from '../store/index.js';
import { BACKUP_SUFFIX } from './config-file.js';

export const PRESENCE_MIGRATION = `CREATE TABLE client_created_paths (
   path TEXT PRIMARY KEY
 );`;

/** Files Skep leaves beside a config file: its lock, the lock's breaker, the backup, atomic-write temp files. */
function isSkepSideFile(name: string): boolean {
  return (
    name.endsWith('.lock') ||
    name.endsWith('.lock.break') ||
    name.endsWith(BACKUP_SUFFIX) ||
    /^\..+\.tmp-[0-9a-f]{12}$/.test(name)
  );
}

export class CreatedPaths {
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  has(path: string): boolean {
    return (
      this.#store.db.prepare('SELECT 1 FROM client_created_paths WHERE path = ?').get(path) !== undefined
    );
  }

  add(paths: readonly string[]): void {
    if (paths.length === 0) return;
    this.#store.write(() => {
      const insert = this.#store.db.prepare('INSERT OR IGNORE INTO client_created_paths (path) VALUES (?)');
      for (const path of paths) insert.run(path);
    });
  }

  /** Forgets paths Skep removed again (a file or folder made there later is someone else's). */
  forget(paths: readonly string[]): void {
    if (paths.length === 0) return;
    this.#store.write(() => {
      const del = this.#store.db.prepare('DELETE FROM client_created_paths WHERE path = ?');
      for (const path of paths) del.run(path);
    });
  }

  /**
   * The directories on the way to `file` that do not exist yet (nearest last), up to `home`
   * (never above it): what an edit of `file` would create.
   */
  static missingDirectories(file: string, home: string): string[] {
    const out: string[] = [];
    const root = parse(file).root;
    for (let dir = dirname(file); dir !== home && dir !== root && !existsSync(dir); dir = dirname(dir))
      out.unshift(dir);
    return out;
  }

  /** Whether `path` is the client's own: it exists and is not only what Skep created there. */
  isClientsOwn(path: string, isFile: boolean): boolean {
    if (!existsSync(path)) return false;
    if (!this.has(path)) return true;
    if (isFile) return false;
    let entries: string[];
    try {
      entries = readdirSync(path);
    } catch {
      return false;
    }
    return entries.some((name) => !isSkepSideFile(name) && this.isClientsOwn(join(path, name), false));
  }
}

/** Whether one of `programs` is on the PATH of `env`. */
export function programOnPath(programs: readonly string[], env: NodeJS.ProcessEnv): boolean {
  return programs.some((p) => findExecutable(p, env) !== undefined);
}
