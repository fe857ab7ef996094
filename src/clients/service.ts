/**
 * Client registration and live sync. A registration is a row in the core table
 * `client_groups(client_type, group_name)`; the client's config file then holds one entry per
 * running workload of those groups, and nothing else of Skep's. `syncClientConfigs()` is the
 * reconcile step: for every client that is registered, or that still has entries Skep wrote,
 * it computes the wanted entries from the workloads and makes the file match (idempotent; an
 * unchanged file is not rewritten). Which entries Skep wrote, in which file, is recorded in
 * `client_entries`, so a removal never touches an entry the user wrote.
 *
 * Each file is edited under its cross-process lock and the wanted entries are computed inside
 * the lock, so the last writer always works from the newest state. Within one process all
 * syncs run one after another; bursts of workload changes coalesce into one extra run.
 */
import { existsSync } from 'node:fs';
import { rm, rmdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { DEFAULT_GROUP, type GroupService } from '../groups/index.js';
import {
  describeError,
  groupBy,
  type Logger,
  SkepError,
  silentLogger,
  workloadUrl,
} from '../shared/index.js';
import type { Store } from '../store/index.js';
import {
  type ClientDefinition,
  type ClientTransport,
  clientDefinition,
  homeOf,
  isClientType,
  type ServerEntry,
} from './catalog.js';
import {
  BACKUP_SUFFIX,
  editConfigText,
  readConfigEntries,
  readConfigFile,
  writeConfigFile,
} from './config-file.js';
import { withFileLock } from './file-lock.js';
import { CreatedPaths, PRESENCE_MIGRATION, programOnPath } from './presence.js';
import {
  CLIENT_TYPES,
  type ClientRegistration,
  type ClientStatus,
  type ClientType,
} from '../schemas/clients/index.js';

/** What the sync needs to know about a workload (a narrow view of the workload engine's records). */
export interface WorkloadEndpoint {
  name: string;
  group: string;
  status: string;
  /** `stdio`, `sse` or `streamable-http`. */
  transport_type: string;
  /** For stdio servers: the transport their proxy serves (`sse` or `streamable-http`, the default). */
  proxy_mode?: string | undefined;
  /** The proxy port on localhost. */
  port: number;
  /** The proxy URL as the engine reports it; for remote workloads it keeps the remote URL's path. */
  url?: string | undefined;
  remote?: boolean | undefined;
  /**
   * A virtual MCP workload (`vmcp`): the group it serves and whether clients of that group get
   * only the virtual entry (`virtual`, the default) or every workload's (`all`).
   */
  virtual?: { serves: string; clientEntries: 'virtual' | 'all' } | undefined;
}

export type ListWorkloads = () => WorkloadEndpoint[] | Promise<WorkloadEndpoint[]>;

export interface SyncResult {
  client_type: ClientType;
  file: string;
  /** Entry names Skep now has in the file. */
  entries: string[];
  changed: boolean;
  error?: string;
}

export interface ClientsServiceOptions {
  store: Store;
  groups: GroupService;
  logger?: Logger;
  /** Environment used to locate the client config files (HOME, APPDATA, XDG_CONFIG_HOME). */
  env?: NodeJS.ProcessEnv;
  platform?: NodeJS.Platform;
  listWorkloads?: ListWorkloads;
}

/**
 * Workload states in which a server belongs in client configs. `starting` is included because
 * the workload engine announces a start when it launches the runner, before the runner records
 * `running`; `unhealthy` is included so that a short health blip does not churn the files.
 */
const SERVING = new Set(['starting', 'running', 'unhealthy']);

const MIGRATIONS = [
  `CREATE TABLE client_entries (
     client_type TEXT NOT NULL,
     config_path TEXT NOT NULL,
     server_name TEXT NOT NULL,
     PRIMARY KEY (client_type, config_path, server_name)
   );`,
  PRESENCE_MIGRATION,
];

export class ClientsService {
  readonly #store: Store;
  readonly #groups: GroupService;
  readonly #logger: Logger;
  readonly #env: NodeJS.ProcessEnv;
  readonly #platform: NodeJS.Platform;
  #listWorkloads: ListWorkloads;
  readonly #created: CreatedPaths;
  #tail: Promise<unknown> = Promise.resolve();
  #queuedSync: Promise<SyncResult[]> | undefined;
  #closed = false;

  constructor(options: ClientsServiceOptions) {
    this.#store = options.store;
    this.#groups = options.groups;
    this.#logger = options.logger ?? silentLogger;
    this.#env = options.env ?? process.env;
    this.#platform = options.platform ?? process.platform;
    this.#listWorkloads = options.listWorkloads ?? (() => []);
    this.#store.migrate('clients', MIGRATIONS);
    this.#created = new CreatedPaths(this.#store);
  }

  /** Late binding: the workload engine is built after this service and plugs its list in here. */
  attachWorkloads(listWorkloads: ListWorkloads): void {
    this.#listWorkloads = listWorkloads;
  }

  /** The config file of a client in this service's environment. */
  configPath(type: ClientType): string {
    return clientDefinition(type).configPath(this.#env, this.#platform);
  }

  /** Every supported client, in the fixed discovery order. */
  status(): ClientStatus[] {
    const registered = new Set(this.#registrations().keys());
    return CLIENT_TYPES.map((type) => {
      const def = clientDefinition(type);
      return {
        client_type: type,
        installed:
          this.#created.isClientsOwn(def.detectPath(this.#env, this.#platform), def.detectsFile) ||
          programOnPath(def.programs, this.#env),
        registered: registered.has(type),
        supports_skills: def.supportsSkills,
      };
    });
  }

  /** Registered clients with their groups, sorted by name. */
  list(): ClientRegistration[] {
    return [...this.#registrations()].map(([name, groups]) => ({ name, groups }));
  }

  async register(name: unknown, groups?: readonly unknown[]): Promise<ClientRegistration> {
    const [result] = await this.registerMany([name], groups);
    return result!;
  }

  /**
   * Registers clients in groups (default: `default`) and writes the groups' running workloads
   * into their config files. Everything is validated first: an unknown client type, a bad or
   * missing group, or an unreadable config file fails the call before anything is written.
   */
  async registerMany(names: readonly unknown[], groups?: readonly unknown[]): Promise<ClientRegistration[]> {
    const types = this.#requireTypes(names);
    const groupNames = this.#requireGroups(
      groups === undefined || groups.length === 0 ? [DEFAULT_GROUP] : groups,
    );
    for (const type of types) await this.#requireReadableConfig(type);
    this.#store.write(() => {
      const insert = this.#store.db.prepare(
        'INSERT OR IGNORE INTO client_groups (client_type, group_name) VALUES (?, ?)',
      );
      for (const type of types) for (const group of groupNames) insert.run(type, group);
    });
    for (const type of types) {
      const deprecated = clientDefinition(type).deprecated;
      if (deprecated !== undefined) this.#logger.warn({ client: type }, deprecated);
    }
    await this.#syncOrThrow(types);
    return types.map((name) => ({ name, groups: groupNames }));
  }

  /** Removes a client from every group and removes Skep's entries from its config. */
  async unregister(name: unknown): Promise<void> {
    await this.unregisterMany([name]);
  }

  /** Removes a client from one group; entries of workloads in its other groups stay. */
  async unregisterFromGroup(name: unknown, group: unknown): Promise<void> {
    await this.unregisterMany([name], [group]);
  }

  async unregisterMany(names: readonly unknown[], groups?: readonly unknown[]): Promise<void> {
    const types = this.#requireTypes(names);
    const groupNames = groups === undefined || groups.length === 0 ? undefined : this.#requireGroups(groups);
    this.#store.write(() => {
      const db = this.#store.db;
      for (const type of types) {
        if (groupNames === undefined) db.prepare('DELETE FROM client_groups WHERE client_type = ?').run(type);
        else {
          const del = db.prepare('DELETE FROM client_groups WHERE client_type = ? AND group_name = ?');
          for (const group of groupNames) del.run(type, group);
        }
      }
    });
    await this.#syncOrThrow(types);
  }

  /**
   * Reconciles every client config with the running workloads. Never throws for one client's
   * problem: each result says what happened, and failures are logged.
   */
  syncClientConfigs(): Promise<SyncResult[]> {
    if (this.#queuedSync !== undefined) return this.#queuedSync;
    const run = this.#serial(async () => {
      this.#queuedSync = undefined;
      const results: SyncResult[] = [];
      for (const type of this.#clientsToSync()) {
        try {
          results.push(await this.#syncClient(type));
        } catch (err) {
          this.#logger.error({ client: type, err }, 'client config sync failed');
          results.push({
            client_type: type,
            file: this.configPath(type),
            entries: [],
            changed: false,
            error: describeError(err),
          });
        }
      }
      return results;
    });
    this.#queuedSync = run;
    return run;
  }

  /** Lets queued syncs finish (a CLI command's last change still reaches the files); idempotent. */
  async close(): Promise<void> {
    let tail: Promise<unknown>;
    do {
      tail = this.#tail;
      await tail.catch(() => undefined);
    } while (tail !== this.#tail);
    this.#closed = true;
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#tail
      .catch(() => undefined)
      .then(() => {
        if (this.#closed) throw new SkepError('unavailable', 'the clients service is closed');
        return fn();
      });
    this.#tail = run;
    return run;
  }

  async #syncOrThrow(types: readonly ClientType[]): Promise<void> {
    await this.#serial(async () => {
      for (const type of types) await this.#syncClient(type);
    });
  }

  #clientsToSync(): ClientType[] {
    const wanted = new Set<string>(this.#registrations().keys());
    const rows = this.#store.db.prepare('SELECT DISTINCT client_type FROM client_entries').all() as {
      client_type: string;
    }[];
    for (const row of rows) wanted.add(row.client_type);
    return CLIENT_TYPES.filter((type) => wanted.has(type));
  }

  /** Makes one client's config file hold exactly the wanted Skep entries. */
  async #syncClient(type: ClientType): Promise<SyncResult> {
    const def = clientDefinition(type);
    const file = this.configPath(type);
    // The lock and the write create missing directories: recorded, so that they do not make
    // the client look installed (`presence.ts`).
    const missing = CreatedPaths.missingDirectories(file, homeOf(this.#env));
    let result: SyncResult & { emptied?: boolean };
    try {
      result = await this.#syncClientLocked(type, def, file);
    } finally {
      this.#created.add(missing.filter((dir) => existsSync(dir)));
    }
    if (result.emptied === true) await this.#removeCreatedDirectories(file);
    const { emptied: _emptied, ...plain } = result;
    return plain;
  }

  /**
   * After Skep removed a config file it had created, the directories it created on the way go
   * too, nearest first, each only when empty (a client's own file keeps its folder).
   */
  async #removeCreatedDirectories(file: string): Promise<void> {
    const home = homeOf(this.#env);
    for (let dir = dirname(file); dir !== home && dir !== dirname(dir); dir = dirname(dir)) {
      if (!this.#created.has(dir)) return;
      try {
        await rmdir(dir);
      } catch {
        return; // not empty: something else lives there now
      }
      this.#created.forget([dir]);
    }
  }

  async #syncClientLocked(type: ClientType, def: ClientDefinition, file: string): Promise<SyncResult> {
    return withFileLock(file, async () => {
      const groups = new Set(this.#registrations().get(type) ?? []);
      const wanted =
        groups.size === 0
          ? new Map<string, ServerEntry>()
          : desiredEntries(def, await this.#listWorkloads(), groups);
      const owned = this.#owned(type, file);
      const remove = new Set([...owned].filter((name) => !wanted.has(name)));
      const previous = await readConfigFile(file);
      let changed = false;
      if (previous !== undefined || wanted.size > 0) {
        const next = editConfigText(def, previous ?? '', { upsert: wanted, remove }, file);
        if (next !== previous) {
          await writeConfigFile(file, previous, next);
          if (previous === undefined) this.#created.add([file]);
          changed = true;
        }
      }
      this.#setOwned(type, file, [...wanted.keys()]);
      // Unregistered, and the file Skep created holds nothing but the skeleton Skep wrote: it
      // goes, with its backup, instead of staying as an empty mcp.json in a folder Skep made.
      if (groups.size === 0 && this.#created.has(file) && (await this.#onlySkeleton(def, file))) {
        await rm(file, { force: true });
        await rm(`${file}${BACKUP_SUFFIX}`, { force: true });
        this.#created.forget([file]);
        this.#logger.info({ client: type, file }, 'client config removed (Skep had created it, now empty)');
        return { client_type: type, file, entries: [], changed: true, emptied: true };
      }
      if (changed) this.#logger.info({ client: type, file, entries: wanted.size }, 'client config updated');
      return { client_type: type, file, entries: [...wanted.keys()].sort(), changed };
    });
  }

  /** Whether `file` holds exactly what adding one entry to nothing and removing it again leaves. */
  async #onlySkeleton(def: ClientDefinition, file: string): Promise<boolean> {
    const text = await readConfigFile(file);
    if (text === undefined) return false;
    const probe = '__skep_probe__';
    const added = editConfigText(
      def,
      '',
      { upsert: new Map([[probe, { url: 'http://127.0.0.1/' }]]), remove: new Set() },
      file,
    );
    const skeleton = editConfigText(def, added, { upsert: new Map(), remove: new Set([probe]) }, file);
    return text.trim() === skeleton.trim();
  }

  #owned(type: ClientType, file: string): Set<string> {
    const rows = this.#store.db
      .prepare('SELECT server_name FROM client_entries WHERE client_type = ? AND config_path = ?')
      .all(type, file) as { server_name: string }[];
    return new Set(rows.map((r) => r.server_name));
  }

  #setOwned(type: ClientType, file: string, names: string[]): void {
    this.#store.write(() => {
      const db = this.#store.db;
      db.prepare('DELETE FROM client_entries WHERE client_type = ? AND config_path = ?').run(type, file);
      const insert = db.prepare(
        'INSERT INTO client_entries (client_type, config_path, server_name) VALUES (?, ?, ?)',
      );
      for (const name of names) insert.run(type, file, name);
    });
  }

  /** client type → its groups (sorted), for every registered client, sorted by type. */
  #registrations(): Map<string, string[]> {
    return groupBy(
      this.#groups.registrations(),
      (row) => row.client_type,
      (row) => row.group_name,
    );
  }

  #requireTypes(names: readonly unknown[]): ClientType[] {
    if (!Array.isArray(names) || names.length === 0) {
      throw new SkepError('bad_request', 'at least one client name is required');
    }
    const out: ClientType[] = [];
    for (const name of names) {
      if (typeof name !== 'string' || !isClientType(name)) {
        throw new SkepError(
          'client_unknown',
          `unsupported client type '${String(name)}'; use one of: ${CLIENT_TYPES.join(', ')}`,
        );
      }
      if (!out.includes(name)) out.push(name);
    }
    return out;
  }

  #requireGroups(groups: readonly unknown[]): string[] {
    const out: string[] = [];
    for (const group of groups) {
      if (typeof group !== 'string') throw new SkepError('invalid_name', 'group names must be strings');
      this.#groups.require(group);
      if (!out.includes(group)) out.push(group);
    }
    return out.sort();
  }

  async #requireReadableConfig(type: ClientType): Promise<void> {
    const file = this.configPath(type);
    const text = await readConfigFile(file);
    if (text !== undefined) readConfigEntries(clientDefinition(type), text, file);
  }
}

/** The entries a client should have for the serving workloads of its groups. */
export function desiredEntries(
  def: ClientDefinition,
  workloads: readonly WorkloadEndpoint[],
  groups: ReadonlySet<string>,
): Map<string, ServerEntry> {
  const out = new Map<string, ServerEntry>();
  const sorted = [...workloads].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  // A group served by one of its own virtual workloads is one entry (docs/virtual-mcp.md), the
  // virtual endpoint, unless that workload's vmcp config says `clientEntries: all`.
  const virtualOnly = new Set<string>();
  for (const w of sorted) {
    const v = w.virtual;
    if (v !== undefined && v.clientEntries === 'virtual' && v.serves === w.group && SERVING.has(w.status))
      virtualOnly.add(w.group);
  }
  for (const w of sorted) {
    if (!groups.has(w.group) || !SERVING.has(w.status)) continue;
    if (virtualOnly.has(w.group) && w.virtual === undefined) continue;
    const transport = clientTransport(w);
    // The engine's proxy URL when it reports one (a remote workload keeps its path), else the
    // reference form on localhost.
    const url =
      w.url !== undefined && w.url !== '' ? w.url : workloadUrl({ name: w.name, port: w.port, transport });
    out.set(w.name, def.entry(w.name, url, transport));
  }
  return out;
}

/**
 * The transport a client must use. A reported URL decides (the proxy serves `/sse` and `/mcp`);
 * otherwise stdio servers are reached through their proxy, whose mode defaults to streamable HTTP.
 */
export function clientTransport(w: WorkloadEndpoint): ClientTransport {
  if (w.url !== undefined && w.url !== '') {
    try {
      return new URL(w.url).pathname.replace(/\/+$/, '').endsWith('/sse') ? 'sse' : 'streamable-http';
    } catch {
      // not a URL: fall through to the transport fields
    }
  }
  const transport = w.transport_type === 'stdio' ? (w.proxy_mode ?? 'streamable-http') : w.transport_type;
  return transport === 'sse' ? 'sse' : 'streamable-http';
}
