/**
 * The state store: one SQLite file in the state dir, shared by `skep serve`, the CLI and
 * every workload runner. WAL mode lets readers run beside one writer; `busy_timeout` makes
 * concurrent writers from several processes wait instead of failing. Each domain owns its
 * tables and registers its own ordered migrations under its own name.
 */
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';

export type Db = Database.Database;

/** Ordered SQL migrations of one domain; index + 1 is the version. Never edit a shipped entry. */
export type Migrations = readonly string[];

export interface Store {
  readonly db: Db;
  /** Applies the domain's pending migrations (idempotent, safe across processes). */
  migrate(domain: string, migrations: Migrations): void;
  /** Runs `fn` in a write transaction that takes the lock up front (BEGIN IMMEDIATE). */
  write<T>(fn: () => T): T;
  close(): void;
}

const CORE_MIGRATIONS: Migrations = [
  `CREATE TABLE groups (
     name TEXT PRIMARY KEY,
     created_at TEXT NOT NULL
   );
   CREATE TABLE settings (
     key TEXT PRIMARY KEY,
     value TEXT NOT NULL
   );
   CREATE TABLE client_groups (
     client_type TEXT NOT NULL,
     group_name TEXT NOT NULL REFERENCES groups(name) ON DELETE CASCADE,
     PRIMARY KEY (client_type, group_name)
   );`,
];

/**
 * The store holds workloads' `env_vars` values (API keys among them): owner-only, like every
 * file of user data. SQLite creates a new database with 0644 less the umask, and its `-wal`
 * and `-shm` files (created on first use) with the database file's own mode (its unix VFS,
 * `findCreateFileMode`), so the database is created 0600 before SQLite opens it, and a store
 * left looser by an older version is narrowed, with the journal files it has now.
 */
function ownerOnly(file: string): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  closeSync(openSync(file, 'a', 0o600));
  if (process.platform === 'win32') return;
  for (const path of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}

export function openStore(file: string): Store {
  if (file !== ':memory:') ownerOnly(file);
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 10000');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    domain TEXT NOT NULL, version INTEGER NOT NULL, applied_at TEXT NOT NULL,
    PRIMARY KEY (domain, version))`);

  let closed = false;
  const store: Store = {
    db,
    migrate(domain, migrations) {
      const run = db.transaction(() => {
        const row = db
          .prepare('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations WHERE domain = ?')
          .get(domain) as { v: number };
        for (let i = row.v; i < migrations.length; i++) {
          db.exec(migrations[i]!);
          db.prepare('INSERT INTO schema_migrations (domain, version, applied_at) VALUES (?, ?, ?)').run(
            domain,
            i + 1,
            new Date().toISOString(),
          );
        }
      });
      run.immediate();
    },
    write(fn) {
      return db.transaction(fn).immediate();
    },
    close() {
      if (closed) return;
      closed = true;
      db.close();
    },
  };
  store.migrate('core', CORE_MIGRATIONS);
  return store;
}

/** Reads a JSON setting, or `undefined` when it was never written. */
export function readSetting<T>(store: Store, key: string): T | undefined {
  const row = store.db.prepare('SELECT value FROM settings WHERE key = ?').get(key) as
    { value: string } | undefined;
  return row === undefined ? undefined : (JSON.parse(row.value) as T);
}

export function writeSetting(store: Store, key: string, value: unknown): void {
  store.db
    .prepare(
      'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
    )
    .run(key, JSON.stringify(value));
}

export function deleteSetting(store: Store, key: string): void {
  store.db.prepare('DELETE FROM settings WHERE key = ?').run(key);
}
