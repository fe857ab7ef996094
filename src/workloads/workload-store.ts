/**
 * The workloads' tables in the shared state store. One row per workload: its run
 * configuration (JSON), the desired state (what the user asked for), and the observed
 * status written by the runner. `skep serve`, the CLI and every runner read and write it.
 */
import { randomBytes } from 'node:crypto';
import type { Store } from '../store/index.js';
import type { RunConfig } from './run-config.js';

/** Turns a stored run configuration (parsed JSON) into a RunConfig, or throws naming `what`. */
export type RunConfigParser = (value: unknown, what: string) => RunConfig;

/**
 * The default parser trusts the row: only Skep writes it, after `parseRunConfig` validated
 * and completed it. It checks the shape cheaply so a damaged row fails clearly. The manager
 * passes the full validator; the runner keeps this one and so loads no schema library.
 */
export const trustStoredRunConfig: RunConfigParser = (value, what) => {
  const v = value as Partial<RunConfig> | null;
  if (
    v === null ||
    typeof v !== 'object' ||
    typeof v.name !== 'string' ||
    typeof v.schema_version !== 'string'
  )
    throw new Error(`${what} is damaged: not a run configuration`);
  return v as RunConfig;
};

export const WORKLOAD_STATUSES = [
  'starting',
  'running',
  'stopping',
  'stopped',
  'error',
  'unhealthy',
  'removing',
  'unknown',
] as const;
export type WorkloadStatus = (typeof WORKLOAD_STATUSES)[number];

/**
 * Start of the status context while a remote workload waits for the user to log in to the
 * remote server's authorization server; the login URL follows. `skep run` prints it.
 */
export const AUTHORIZATION_PENDING = 'waiting for authorization; open ';
export type DesiredState = 'running' | 'stopped';

const MIGRATIONS = [
  `CREATE TABLE workloads (
     name TEXT PRIMARY KEY,
     run_config TEXT NOT NULL,
     group_name TEXT NOT NULL,
     port INTEGER NOT NULL UNIQUE,
     desired_state TEXT NOT NULL,
     status TEXT NOT NULL,
     status_context TEXT NOT NULL DEFAULT '',
     runner_pid INTEGER,
     created_at TEXT NOT NULL,
     started_at TEXT,
     updated_at TEXT NOT NULL
   );
   CREATE INDEX workloads_group ON workloads(group_name);`,
  // The credential a workload's endpoints ask of their callers (exposure.ts): 32 random bytes,
  // hex. Rows written before it get one here; SQLite's randomblob is a CSPRNG.
  `ALTER TABLE workloads ADD COLUMN access_token TEXT;
   UPDATE workloads SET access_token = lower(hex(randomblob(32))) WHERE access_token IS NULL;`,
  // The tool names the running server's clients see (a JSON array), reported by its runner;
  // NULL until it reports and again once it stops.
  `ALTER TABLE workloads ADD COLUMN tools TEXT;`,
  // 0: not resumed when `skep serve` starts (`skep run --no-autostart`); it runs when started.
  `ALTER TABLE workloads ADD COLUMN autostart INTEGER NOT NULL DEFAULT 1;`,
];

/** Statuses in which a workload serves nothing: its reported tools are forgotten. */
const SERVES_NOTHING: readonly WorkloadStatus[] = ['stopped', 'error'];
const SERVES_NOTHING_SQL = `(${SERVES_NOTHING.map((s) => `'${s}'`).join(', ')})`;

/** A new workload's access token: 256 bits from the CSPRNG, hex (URL- and header-safe). */
export function newAccessToken(): string {
  return randomBytes(32).toString('hex');
}

export interface WorkloadRow {
  name: string;
  config: RunConfig;
  group: string;
  port: number;
  desired: DesiredState;
  status: WorkloadStatus;
  statusContext: string;
  runnerPid: number | undefined;
  createdAt: string;
  startedAt: string | undefined;
  updatedAt: string;
  /**
   * The credential the workload's proxy asks of its callers (when `needsAccessToken` says it
   * does). Never part of the run configuration, so an export never carries it.
   */
  accessToken: string;
  /**
   * The tool names its clients see (after `tools_filter` and `tools_override`), as its runner
   * last listed them; undefined until it reports, and once it stops.
   */
  tools: string[] | undefined;
  /** Resumed when `skep serve` starts after its runner is gone (a reboot); false: stays stopped. */
  autostart: boolean;
  /**
   * Why the stored run configuration no longer passes this version's checks (a row an older
   * Skep accepted); the row still lists and can be exported or removed, but does not start.
   */
  configProblem?: string;
}

interface RawRow {
  name: string;
  run_config: string;
  group_name: string;
  port: number;
  desired_state: string;
  status: string;
  status_context: string;
  runner_pid: number | null;
  created_at: string;
  started_at: string | null;
  updated_at: string;
  access_token: string | null;
  tools: string | null;
  autostart: number;
}

/**
 * The row's run configuration. One that this version's checks refuse (stored by an older,
 * looser version) is kept as stored, with the problem, so that one row never breaks listing
 * every workload; a damaged row still throws.
 */
function configOf(raw: RawRow, parse: RunConfigParser): { config: RunConfig; problem?: string } {
  const what = `stored run configuration of '${raw.name}'`;
  const value: unknown = JSON.parse(raw.run_config);
  try {
    return { config: parse(value, what) };
  } catch (err) {
    if (parse === trustStoredRunConfig) throw err;
    return { config: trustStoredRunConfig(value, what), problem: (err as Error).message };
  }
}

function toRow(raw: RawRow, parse: RunConfigParser): WorkloadRow {
  const { config, problem } = configOf(raw, parse);
  return {
    name: raw.name,
    config,
    group: raw.group_name,
    port: raw.port,
    desired: raw.desired_state === 'running' ? 'running' : 'stopped',
    autostart: raw.autostart !== 0,
    status: (WORKLOAD_STATUSES as readonly string[]).includes(raw.status)
      ? (raw.status as WorkloadStatus)
      : 'unknown',
    statusContext: raw.status_context,
    runnerPid: raw.runner_pid ?? undefined,
    createdAt: raw.created_at,
    startedAt: raw.started_at ?? undefined,
    updatedAt: raw.updated_at,
    accessToken: raw.access_token ?? '',
    tools: parseTools(raw.tools),
    ...(problem === undefined ? {} : { configProblem: problem }),
  };
}

/** The stored tool names; a damaged value reads as "not reported". */
function parseTools(text: string | null): string[] | undefined {
  if (text === null) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) && value.every((v) => typeof v === 'string') ? value : undefined;
  } catch {
    return undefined;
  }
}

export interface StatusUpdate {
  status: WorkloadStatus;
  context?: string;
  /** `null` clears the stored runner pid. */
  runnerPid?: number | null;
  started?: boolean;
  desired?: DesiredState;
}

export class WorkloadStore {
  readonly #store: Store;
  readonly #parse: RunConfigParser;

  constructor(store: Store, options: { parseConfig?: RunConfigParser } = {}) {
    this.#store = store;
    this.#parse = options.parseConfig ?? trustStoredRunConfig;
    store.migrate('workloads', MIGRATIONS);
  }

  get(name: string): WorkloadRow | undefined {
    const raw = this.#store.db.prepare('SELECT * FROM workloads WHERE name = ?').get(name) as
      RawRow | undefined;
    return raw === undefined ? undefined : toRow(raw, this.#parse);
  }

  list(group?: string): WorkloadRow[] {
    const raws = (
      group === undefined
        ? this.#store.db.prepare('SELECT * FROM workloads ORDER BY name').all()
        : this.#store.db.prepare('SELECT * FROM workloads WHERE group_name = ? ORDER BY name').all(group)
    ) as RawRow[];
    return raws.map((raw) => toRow(raw, this.#parse));
  }

  names(group?: string): string[] {
    const rows = (
      group === undefined
        ? this.#store.db.prepare('SELECT name FROM workloads ORDER BY name').all()
        : this.#store.db.prepare('SELECT name FROM workloads WHERE group_name = ? ORDER BY name').all(group)
    ) as { name: string }[];
    return rows.map((r) => r.name);
  }

  ports(): Set<number> {
    const rows = this.#store.db.prepare('SELECT port FROM workloads').all() as { port: number }[];
    return new Set(rows.map((r) => r.port));
  }

  portOwner(port: number): string | undefined {
    const row = this.#store.db.prepare('SELECT name FROM workloads WHERE port = ?').get(port) as
      { name: string } | undefined;
    return row?.name;
  }

  /**
   * Inserts a new workload (`autostart` on unless `options.autostart` is false); says so when
   * the name (or port) is already taken.
   */
  insert(
    config: RunConfig,
    status: WorkloadStatus,
    desired: DesiredState,
    options: { autostart?: boolean } = {},
  ): 'ok' | 'name_taken' | 'port_taken' {
    const now = new Date().toISOString();
    return this.#store.write(() => {
      if (this.#store.db.prepare('SELECT 1 FROM workloads WHERE name = ?').get(config.name) !== undefined)
        return 'name_taken';
      if (this.#store.db.prepare('SELECT 1 FROM workloads WHERE port = ?').get(config.port) !== undefined)
        return 'port_taken';
      this.#store.db
        .prepare(
          `INSERT INTO workloads (name, run_config, group_name, port, desired_state, status, status_context, created_at, updated_at, access_token, autostart)
           VALUES (?, ?, ?, ?, ?, ?, '', ?, ?, ?, ?)`,
        )
        .run(
          config.name,
          JSON.stringify(config),
          config.group,
          config.port,
          desired,
          status,
          now,
          now,
          newAccessToken(),
          options.autostart === false ? 0 : 1,
        );
      return 'ok';
    });
  }

  /** Whether the workload is resumed when `skep serve` starts (see `WorkloadRow.autostart`). */
  setAutostart(name: string, on: boolean): void {
    this.#store.db.prepare('UPDATE workloads SET autostart = ? WHERE name = ?').run(on ? 1 : 0, name);
  }

  /** Replaces the run configuration (and the group and port derived from it). */
  saveConfig(config: RunConfig): void {
    this.#store.db
      .prepare('UPDATE workloads SET run_config = ?, group_name = ?, port = ?, updated_at = ? WHERE name = ?')
      .run(JSON.stringify(config), config.group, config.port, new Date().toISOString(), config.name);
  }

  setStatus(name: string, update: StatusUpdate): void {
    const now = new Date().toISOString();
    const sets = ['status = ?', 'status_context = ?', 'updated_at = ?'];
    if (SERVES_NOTHING.includes(update.status)) sets.push('tools = NULL');
    const values: (string | number | null)[] = [update.status, update.context ?? '', now];
    if (update.runnerPid !== undefined) {
      sets.push('runner_pid = ?');
      values.push(update.runnerPid);
    }
    if (update.started === true) {
      sets.push('started_at = ?');
      values.push(now);
    }
    if (update.desired !== undefined) {
      sets.push('desired_state = ?');
      values.push(update.desired);
    }
    values.push(name);
    this.#store.db.prepare(`UPDATE workloads SET ${sets.join(', ')} WHERE name = ?`).run(...values);
  }

  /**
   * Status written by a runner: only applied while `pid` is still the registered runner, so
   * a runner that is being replaced cannot overwrite its successor's state.
   */
  setStatusFromRunner(name: string, pid: number, update: StatusUpdate): boolean {
    const now = new Date().toISOString();
    const result = this.#store.db
      .prepare(
        `UPDATE workloads SET status = ?, status_context = ?, updated_at = ?,
           started_at = CASE WHEN ? THEN ? ELSE started_at END${
             SERVES_NOTHING.includes(update.status) ? ', tools = NULL' : ''
           }
         WHERE name = ? AND runner_pid = ?`,
      )
      .run(update.status, update.context ?? '', now, update.started === true ? 1 : 0, now, name, pid);
    return result.changes > 0;
  }

  /**
   * The tool names a runner listed at its own proxy: only applied while `pid` is the
   * registered runner and the workload serves (a late answer does not outlive a stop).
   */
  setToolsFromRunner(name: string, pid: number, tools: readonly string[]): boolean {
    const result = this.#store.db
      .prepare(
        `UPDATE workloads SET tools = ? WHERE name = ? AND runner_pid = ? AND status NOT IN ${SERVES_NOTHING_SQL}`,
      )
      .run(JSON.stringify(tools), name, pid);
    return result.changes > 0;
  }

  delete(name: string): void {
    this.#store.db.prepare('DELETE FROM workloads WHERE name = ?').run(name);
  }
}
