/**
 * Installed skills: list, info and uninstall (ToolHive's installed-skill records). Uninstalling a skill
 * also removes the dependencies it pulled in, unless the user installed them explicitly or
 * another skill still requires them.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { SkepError } from '../shared/index.js';
import { type Scope, skillsDirFor } from './client-dirs.js';
import type { SkillsContext } from './context.js';
import { readLock, removeEntry, writeLock } from './lock-file.js';
import type { InstalledSkill, ListFilter } from './records.js';
import { resolveScope } from './scope.js';
import { requireSkillName } from './skill-md.js';

export interface InstalledFilter {
  scope?: string;
  client?: string;
  project_root?: string;
  group?: string;
}

export async function listInstalled(ctx: SkillsContext, filter: InstalledFilter): Promise<InstalledSkill[]> {
  const { scope, root } = await resolveScope(filter.scope, filter.project_root, true);
  if (filter.group !== undefined && filter.group !== '') ctx.groups.require(filter.group);
  const f: ListFilter = {
    scope,
    projectRoot: scope === 'project' ? root : undefined,
    client: filter.client === '' ? undefined : filter.client,
    group: filter.group === '' ? undefined : filter.group,
  };
  return ctx.records.list(f);
}

export async function installedInfo(
  ctx: SkillsContext,
  name: string,
  scope?: string,
  projectRoot?: string,
): Promise<{ installed: InstalledSkill; unsigned: boolean | undefined }> {
  requireSkillName(name);
  const s = await resolveScope(scope, projectRoot);
  const record = ctx.records.get(name, s.scope ?? 'user', s.root);
  if (record === undefined)
    throw new SkepError('skill_not_found', `skill "${name}" is not installed in ${s.scope ?? 'user'} scope`);
  let unsigned: boolean | undefined;
  if (record.scope === 'project') {
    const lock = await readLock(record.project_root);
    unsigned = lock.skills.find((e) => e.name === name)?.unsigned;
  }
  return { installed: record, unsigned };
}

export async function uninstallSkill(
  ctx: SkillsContext,
  name: string,
  scope?: string,
  projectRoot?: string,
): Promise<void> {
  requireSkillName(name);
  const s = await resolveScope(scope, projectRoot);
  await uninstallTree(ctx, name, s.scope ?? 'user', s.root, new Set());
}

/** Removes `name` (lock entry, client folders, record), then the dependencies nothing else needs. */
export async function uninstallTree(
  ctx: SkillsContext,
  name: string,
  scope: Scope,
  root: string,
  visited: Set<string>,
): Promise<void> {
  visited.add(name);
  const record = ctx.records.get(name, scope, root);
  if (record === undefined)
    throw new SkepError('skill_not_found', `skill "${name}" is not installed in ${scope} scope`);
  if (scope === 'project' && record.managed) {
    const lock = await readLock(root);
    removeEntry(lock, name);
    await writeLock(root, lock);
  }
  const env = ctx.env();
  const dirs = new Set(record.clients.map((c) => join(skillsDirFor(c, scope, root, env), name)));
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  ctx.records.delete(name, scope, root);
  for (const dep of record.dependencies) {
    if (visited.has(dep.name)) continue;
    const depRecord = ctx.records.get(dep.name, scope, root);
    if (depRecord === undefined || depRecord.explicit) continue;
    if (ctx.records.dependents(dep.name, scope, root).length > 0) continue;
    await uninstallTree(ctx, dep.name, scope, root, visited);
  }
}
