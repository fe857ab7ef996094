/**
 * Groups: every workload and client registration belongs to one. The group `default`
 * always exists and cannot be deleted. Names follow the reference rule: lowercase letters,
 * digits, `_`, `-` and single inner spaces.
 */

import { groupBy, SkepError } from '../shared/index.js';
import type { Store } from '../store/index.js';

export const DEFAULT_GROUP = 'default';

/** One row of `client_groups`: a client registered in a group. */
export interface ClientRegistrationRow {
  client_type: string;
  group_name: string;
}
const GROUP_NAME = /^[a-z0-9_-]+(?: [a-z0-9_-]+)*$/;
const MAX_GROUP_NAME = 100;

export interface Group {
  name: string;
  registered_clients: string[];
  created_at: string;
}

/** What deleting a group does to its workloads; provided by the workloads domain. */
export interface GroupMembers {
  /** Names of the workloads in the group (any status). */
  workloadsIn(group: string): string[];
  /** Whether the workload is a virtual MCP server (it serves the other workloads of its group). */
  isVirtual(name: string): boolean;
  /** Deletes every workload of the group and waits until they are gone. */
  deleteWorkloads(group: string): Promise<void>;
}

/** A workload name as a group listing shows it: a virtual MCP server says so. */
function memberLabel(members: GroupMembers, name: string): string {
  return members.isVirtual(name) ? `${name} (virtual MCP server)` : name;
}

export function validateGroupName(name: string): void {
  if (name === '') throw new SkepError('invalid_name', 'invalid group name: the name is empty');
  if (name.length > MAX_GROUP_NAME) {
    throw new SkepError('invalid_name', `invalid group name: longer than ${MAX_GROUP_NAME} characters`);
  }
  if (!GROUP_NAME.test(name)) {
    throw new SkepError(
      'invalid_name',
      `invalid group name '${name}': use lowercase letters, digits, '_', '-' and single spaces between words`,
    );
  }
}

export class GroupService {
  readonly #store: Store;
  #members: GroupMembers | undefined;

  constructor(store: Store) {
    this.#store = store;
    this.ensureDefault();
  }

  /** Late binding: the workloads domain is built after groups and plugs in here. */
  attachMembers(members: GroupMembers): void {
    this.#members = members;
  }

  ensureDefault(): void {
    this.#store.db
      .prepare('INSERT OR IGNORE INTO groups (name, created_at) VALUES (?, ?)')
      .run(DEFAULT_GROUP, new Date().toISOString());
  }

  list(): Group[] {
    const rows = this.#store.db.prepare('SELECT name, created_at FROM groups ORDER BY name').all() as {
      name: string;
      created_at: string;
    }[];
    const clients = this.#clientsByGroup();
    return rows.map((r) => ({
      name: r.name,
      created_at: r.created_at,
      registered_clients: clients.get(r.name) ?? [],
    }));
  }

  exists(name: string): boolean {
    return this.#store.db.prepare('SELECT 1 FROM groups WHERE name = ?').get(name) !== undefined;
  }

  get(name: string): Group {
    validateGroupName(name);
    const row = this.#store.db.prepare('SELECT name, created_at FROM groups WHERE name = ?').get(name) as
      { name: string; created_at: string } | undefined;
    if (row === undefined) throw new SkepError('group_not_found', `group '${name}' does not exist`);
    return { ...row, registered_clients: this.#clientsByGroup().get(name) ?? [] };
  }

  /** Throws `group_not_found` unless the group exists (after validating the name). */
  require(name: string): void {
    validateGroupName(name);
    if (!this.exists(name)) throw new SkepError('group_not_found', `group '${name}' does not exist`);
  }

  create(name: string): Group {
    validateGroupName(name);
    const createdAt = new Date().toISOString();
    const inserted = this.#store.db
      .prepare('INSERT OR IGNORE INTO groups (name, created_at) VALUES (?, ?)')
      .run(name, createdAt);
    if (inserted.changes === 0) throw new SkepError('group_exists', `group '${name}' already exists`);
    return { name, created_at: createdAt, registered_clients: [] };
  }

  /**
   * Deletes a group. A group that still holds workloads is refused (`group_not_empty`, the
   * workloads named in the message and in `details.workloads`) unless `withWorkloads` is set,
   * which deletes them with it. The reference moves them to `default` instead, which silently
   * changes what the clients of `default` see (a virtual MCP server of the group would then
   * serve all of `default`); Skep never moves them. Client registrations for the group are dropped.
   */
  async delete(name: string, options: { withWorkloads?: boolean } = {}): Promise<void> {
    validateGroupName(name);
    if (name === DEFAULT_GROUP)
      throw new SkepError('group_protected', `the '${DEFAULT_GROUP}' group cannot be deleted`);
    if (!this.exists(name)) throw new SkepError('group_not_found', `group '${name}' does not exist`);
    const members = this.#members;
    if (members !== undefined) {
      const held = members.workloadsIn(name);
      if (held.length > 0 && options.withWorkloads !== true) {
        const labels = held.map((w) => memberLabel(members, w));
        throw new SkepError(
          'group_not_empty',
          `group '${name}' still holds ${held.length} workload${held.length === 1 ? '' : 's'}: ` +
            `${labels.join(', ')}; nothing was changed. Delete them with the group (with-workloads), ` +
            'or remove them first',
          { details: { workloads: held, virtual: held.filter((w) => members.isVirtual(w)) } },
        );
      }
      if (held.length > 0) await members.deleteWorkloads(name);
    }
    this.#store.db.prepare('DELETE FROM groups WHERE name = ?').run(name);
  }

  /** Every registration of a client in a group, sorted by client type, then group. */
  registrations(): ClientRegistrationRow[] {
    return this.#store.db
      .prepare('SELECT client_type, group_name FROM client_groups ORDER BY client_type, group_name')
      .all() as ClientRegistrationRow[];
  }

  /** group → the client types registered in it (sorted). */
  #clientsByGroup(): Map<string, string[]> {
    return groupBy(
      this.registrations(),
      (row) => row.group_name,
      (row) => row.client_type,
    );
  }
}
