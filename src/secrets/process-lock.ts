/**
 * A cross-process exclusive lock for read-modify-write of the encrypted secrets file.
 *
 * The lock is a write transaction (`BEGIN IMMEDIATE`) on a small dedicated SQLite file.
 * SQLite holds it through an OS advisory lock, which the kernel releases when the holder
 * exits for any reason (kill -9 included), so there is no stale-lock file to detect or
 * break, and no pid/age heuristics that can race. Acquisition polls without blocking the
 * event loop (busy_timeout 0 + short jittered sleeps), so `skep serve` keeps answering
 * while another process holds the lock. Calls from the same instance are queued in order.
 */
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { SkepError } from '../shared/index.js';

const DEFAULT_TIMEOUT_MS = 60_000;

export class ProcessLock {
  readonly #file: string;
  readonly #timeoutMs: number;
  #db: Database.Database | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;

  constructor(file: string, timeoutMs = DEFAULT_TIMEOUT_MS) {
    this.#file = file;
    this.#timeoutMs = timeoutMs;
  }

  /** Runs `fn` while this process holds the lock; other processes and callers wait. */
  withLock<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(() => this.#run(fn));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#db?.close();
    this.#db = undefined;
  }

  #open(): Database.Database {
    if (this.#closed) throw new Error('ProcessLock used after close()');
    if (this.#db !== undefined) return this.#db;
    mkdirSync(dirname(this.#file), { recursive: true, mode: 0o700 });
    closeSync(openSync(this.#file, 'a', 0o600)); // SQLite would create it with the umask's mode
    const db = new Database(this.#file);
    // Opening and the first schema read may meet another process's lock: wait for it here,
    // once; later acquisitions poll instead so the event loop is never blocked for long.
    db.pragma('busy_timeout = 5000');
    db.exec('CREATE TABLE IF NOT EXISTS lock_owner (pid INTEGER)');
    db.pragma('busy_timeout = 0');
    this.#db = db;
    return db;
  }

  async #run<T>(fn: () => Promise<T>): Promise<T> {
    const db = this.#open();
    const deadline = Date.now() + this.#timeoutMs;
    let backoff = 1;
    for (;;) {
      try {
        db.exec('BEGIN IMMEDIATE');
        break;
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code !== 'SQLITE_BUSY' && code !== 'SQLITE_LOCKED') throw err;
        if (Date.now() > deadline) {
          throw new SkepError(
            'unavailable',
            `the secrets store is locked by another process (waited ${Math.round(this.#timeoutMs / 1000)} s); try again`,
            { cause: err },
          );
        }
        await sleep(backoff + Math.random() * backoff);
        backoff = Math.min(backoff * 2, 8);
      }
    }
    try {
      return await fn();
    } finally {
      db.exec('ROLLBACK');
    }
  }
}
