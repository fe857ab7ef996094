/**
 * Installed-skill records in the state store: one row per (name, scope, project_root), the
 * dependencies each install pulled in, and group membership of skills by name. The skills
 * domain owns these tables (migrations under `skills`).
 */
import type { Store } from '../store/index.js';
import type { Scope } from './client-dirs.js';

export const SKILLS_MIGRATIONS = [
  `CREATE TABLE installed_skills (
     name TEXT NOT NULL,
     scope TEXT NOT NULL CHECK (scope IN ('user', 'project')),
     project_root TEXT NOT NULL DEFAULT '',
     reference TEXT NOT NULL,
     tag TEXT NOT NULL DEFAULT '',
     digest TEXT NOT NULL,
     version TEXT NOT NULL DEFAULT '',
     description TEXT NOT NULL DEFAULT '',
     author TEXT NOT NULL DEFAULT '',
     tags TEXT NOT NULL DEFAULT '[]',
     clients TEXT NOT NULL DEFAULT '[]',
     status TEXT NOT NULL DEFAULT 'installed' CHECK (status IN ('installed', 'pending', 'failed')),
     installed_at TEXT NOT NULL,
     managed INTEGER NOT NULL DEFAULT 1,
     explicit INTEGER NOT NULL DEFAULT 1,
     PRIMARY KEY (name, scope, project_root)
   );
   CREATE TABLE skill_dependencies (
     parent_name TEXT NOT NULL,
     scope TEXT NOT NULL,
     project_root TEXT NOT NULL,
     dep_name TEXT NOT NULL,
     dep_reference TEXT NOT NULL,
     dep_digest TEXT NOT NULL DEFAULT '',
     PRIMARY KEY (parent_name, scope, project_root, dep_name),
     FOREIGN KEY (parent_name, scope, project_root)
       REFERENCES installed_skills (name, scope, project_root) ON DELETE CASCADE
   );
   CREATE TABLE skill_groups (
     skill_name TEXT NOT NULL,
     group_name TEXT NOT NULL REFERENCES groups (name) ON DELETE CASCADE,
     PRIMARY KEY (skill_name, group_name)
   );`,
];

export interface SkillDependency {
  name: string;
  reference: string;
  digest: string;
}

export interface InstalledSkill {
  metadata: { name: string; version: string; description: string; author: string; tags: string[] };
  scope: Scope;
  project_root: string;
  reference: string;
  tag: string;
  digest: string;
  status: 'installed' | 'pending' | 'failed';
  installed_at: string;
  clients: string[];
  dependencies: SkillDependency[];
  managed: boolean;
  /** Installed on request (not only as a dependency); not part of the API shape. */
  explicit: boolean;
}

interface Row {
  name: string;
  scope: Scope;
  project_root: string;
  reference: string;
  tag: string;
  digest: string;
  version: string;
  description: string;
  author: string;
  tags: string;
  clients: string;
  status: InstalledSkill['status'];
  installed_at: string;
  managed: number;
  explicit: number;
}

export interface ListFilter {
  scope?: Scope | undefined;
  client?: string | undefined;
  projectRoot?: string | undefined;
  group?: string | undefined;
}

export class SkillRecords {
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
    store.migrate('skills', SKILLS_MIGRATIONS);
  }

  #deps(row: Row): SkillDependency[] {
    return (
      this.#store.db
        .prepare(
          'SELECT dep_name AS name, dep_reference AS reference, dep_digest AS digest FROM skill_dependencies WHERE parent_name = ? AND scope = ? AND project_root = ? ORDER BY dep_name',
        )
        .all(row.name, row.scope, row.project_root) as SkillDependency[]
    ).map((d) => ({ ...d }));
  }

  #view(row: Row): InstalledSkill {
    return {
      metadata: {
        name: row.name,
        version: row.version,
        description: row.description,
        author: row.author,
        tags: JSON.parse(row.tags),
      },
      scope: row.scope,
      project_root: row.project_root,
      reference: row.reference,
      tag: row.tag,
      digest: row.digest,
      status: row.status,
      installed_at: row.installed_at,
      clients: JSON.parse(row.clients),
      dependencies: this.#deps(row),
      managed: row.managed === 1,
      explicit: row.explicit === 1,
    };
  }

  get(name: string, scope: Scope, projectRoot: string): InstalledSkill | undefined {
    const row = this.#store.db
      .prepare('SELECT * FROM installed_skills WHERE name = ? AND scope = ? AND project_root = ?')
      .get(name, scope, projectRoot) as Row | undefined;
    return row === undefined ? undefined : this.#view(row);
  }

  list(filter: ListFilter): InstalledSkill[] {
    // Each filter that is set adds its condition and its one argument.
    const conditions: [string, string | undefined][] = [
      ['scope = ?', filter.scope],
      ['project_root = ?', filter.projectRoot],
      ['EXISTS (SELECT 1 FROM json_each(clients) WHERE value = ?)', filter.client],
      ['name IN (SELECT skill_name FROM skill_groups WHERE group_name = ?)', filter.group],
    ];
    const where: string[] = [];
    const args: string[] = [];
    for (const [condition, value] of conditions) {
      if (value === undefined) continue;
      where.push(condition);
      args.push(value);
    }
    const sql = `SELECT * FROM installed_skills${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY name, scope, project_root`;
    return (this.#store.db.prepare(sql).all(...args) as Row[]).map((r) => this.#view(r));
  }

  /** Inserts or replaces a record (and its dependency rows) and adds the skill to `group`. */
  save(skill: InstalledSkill, group: string | undefined): void {
    this.#store.write(() => {
      const db = this.#store.db;
      db.prepare(
        `INSERT INTO installed_skills (name, scope, project_root, reference, tag, digest, version, description, author, tags, clients, status, installed_at, managed, explicit)
         VALUES (@name, @scope, @project_root, @reference, @tag, @digest, @version, @description, @author, @tags, @clients, @status, @installed_at, @managed, @explicit)
         ON CONFLICT (name, scope, project_root) DO UPDATE SET
           reference = excluded.reference, tag = excluded.tag, digest = excluded.digest, version = excluded.version,
           description = excluded.description, author = excluded.author, tags = excluded.tags, clients = excluded.clients,
           status = excluded.status, installed_at = excluded.installed_at, managed = excluded.managed, explicit = excluded.explicit`,
      ).run({
        name: skill.metadata.name,
        scope: skill.scope,
        project_root: skill.project_root,
        reference: skill.reference,
        tag: skill.tag,
        digest: skill.digest,
        version: skill.metadata.version,
        description: skill.metadata.description,
        author: skill.metadata.author,
        tags: JSON.stringify(skill.metadata.tags),
        clients: JSON.stringify(skill.clients),
        status: skill.status,
        installed_at: skill.installed_at,
        managed: skill.managed ? 1 : 0,
        explicit: skill.explicit ? 1 : 0,
      });
      db.prepare(
        'DELETE FROM skill_dependencies WHERE parent_name = ? AND scope = ? AND project_root = ?',
      ).run(skill.metadata.name, skill.scope, skill.project_root);
      const insertDep = db.prepare(
        'INSERT INTO skill_dependencies (parent_name, scope, project_root, dep_name, dep_reference, dep_digest) VALUES (?, ?, ?, ?, ?, ?)',
      );
      for (const d of skill.dependencies) {
        insertDep.run(skill.metadata.name, skill.scope, skill.project_root, d.name, d.reference, d.digest);
      }
      if (group !== undefined) {
        db.prepare('INSERT OR IGNORE INTO skill_groups (skill_name, group_name) VALUES (?, ?)').run(
          skill.metadata.name,
          group,
        );
      }
    });
  }

  /** Deletes a record; the name leaves every group once no scope has it installed. */
  delete(name: string, scope: Scope, projectRoot: string): void {
    this.#store.write(() => {
      const db = this.#store.db;
      db.prepare('DELETE FROM installed_skills WHERE name = ? AND scope = ? AND project_root = ?').run(
        name,
        scope,
        projectRoot,
      );
      const left = db.prepare('SELECT 1 FROM installed_skills WHERE name = ?').get(name);
      if (left === undefined) db.prepare('DELETE FROM skill_groups WHERE skill_name = ?').run(name);
    });
  }

  removeFromGroup(name: string, group: string): void {
    this.#store.db
      .prepare('DELETE FROM skill_groups WHERE skill_name = ? AND group_name = ?')
      .run(name, group);
  }

  inGroup(name: string, group: string): boolean {
    return (
      this.#store.db
        .prepare('SELECT 1 FROM skill_groups WHERE skill_name = ? AND group_name = ?')
        .get(name, group) !== undefined
    );
  }

  /** Names of records in the same scope/root that list `dep` as a dependency. */
  dependents(dep: string, scope: Scope, projectRoot: string): string[] {
    return (
      this.#store.db
        .prepare(
          'SELECT parent_name FROM skill_dependencies WHERE dep_name = ? AND scope = ? AND project_root = ? ORDER BY parent_name',
        )
        .all(dep, scope, projectRoot) as { parent_name: string }[]
    ).map((r) => r.parent_name);
  }
}
