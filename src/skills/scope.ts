/**
 * Install scope and project root (as ToolHive's skill install has them): the scope a request names (or
 * implies by giving a project root), and the checks a project root must pass before any file
 * is written under it.
 */
import { realpath, stat } from 'node:fs/promises';
import { isAbsolute, join, normalize } from 'node:path';
import { pathExists, SkepError } from '../shared/index.js';
import type { Scope } from './client-dirs.js';

/**
 * The effective scope and checked project root. Without a scope, a project root means
 * `project`; otherwise `user`, or no scope at all when listing (`forList`: every scope).
 */
export async function resolveScope(
  scope: string | undefined,
  projectRoot: string | undefined,
  forList = false,
): Promise<{ scope: Scope | undefined; root: string }> {
  const s = scope ?? '';
  if (s !== '' && s !== 'user' && s !== 'project') {
    throw new SkepError('bad_request', `invalid scope "${s}": must be empty, "user", or "project"`);
  }
  const hasRoot = projectRoot !== undefined && projectRoot !== '';
  if (s === 'user' && hasRoot)
    throw new SkepError('bad_request', 'project_root is only valid with project scope');
  const effective: Scope | undefined = s === '' ? (hasRoot ? 'project' : forList ? undefined : 'user') : s;
  if (effective !== 'project') return { scope: effective, root: '' };
  if (!hasRoot) throw new SkepError('bad_request', 'project_root is required for project scope');
  return { scope: effective, root: await checkProjectRoot(projectRoot) };
}

/**
 * ToolHive's project-root rules: absolute, no NUL or `..`, exists, no symlink anywhere, a directory,
 * a git repository.
 */
async function checkProjectRoot(root: string): Promise<string> {
  if (root.includes('\0')) throw new SkepError('invalid_path', 'project_root contains null bytes');
  if (!isAbsolute(root)) throw new SkepError('invalid_path', `project_root must be absolute, got "${root}"`);
  if (root.split(/[\\/]/).includes('..'))
    throw new SkepError('invalid_path', "project_root must not contain '..' segments");
  const cleaned = normalize(root).replace(/(.)\/+$/, '$1');
  let real: string;
  try {
    real = await realpath(cleaned);
  } catch {
    throw new SkepError('invalid_path', 'project_root does not exist');
  }
  if (real !== cleaned)
    throw new SkepError('invalid_path', `project_root must not contain symlinks (resolves to "${real}")`);
  if (!(await stat(real)).isDirectory())
    throw new SkepError('invalid_path', 'project_root must be a directory');
  if (!(await pathExists(join(real, '.git'))))
    throw new SkepError('invalid_path', 'project_root must be a git repository');
  return real;
}
