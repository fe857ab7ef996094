/**
 * A skill directory on disk: request-path checks, the SKILL.md validation of the reference
 * (ToolHive's `validate`) and the file walk used to package a skill. Symlinks and other
 * non-regular files are refused everywhere, so a skill can never point outside itself.
 */
import { readdir, readFile } from 'node:fs/promises';
import { basename, isAbsolute, join } from 'node:path';
import { pathExists, SkepError } from '../shared/index.js';
import {
  frontmatterErrors,
  type ParsedSkill,
  parseSkillMd,
  RECOMMENDED_MAX_LINES,
  SkillParseError,
} from './skill-md.js';

export const SKILL_FILE = 'SKILL.md';
/** Packaging limits (ToolHive's skill build): file count and total bytes. */
export const MAX_BUILD_FILES = 1000;
export const MAX_BUILD_BYTES = 95 * 1024 * 1024;

export interface ValidationResult {
  valid: boolean;
  errors: string[];
  warnings: string[];
}

/** Request-path rules for validate and build; each failure is a 400. */
export function checkSkillPath(path: string | undefined): string {
  if (path === undefined || path === '') throw new SkepError('bad_request', 'path is required');
  if (path.includes('\0')) throw new SkepError('invalid_path', 'path contains null bytes');
  if (!isAbsolute(path)) throw new SkepError('invalid_path', `path must be absolute, got "${path}"`);
  if (path.split(/[\\/]/).includes('..'))
    throw new SkepError('invalid_path', "path must not contain '..' traversal segments");
  return path;
}

/** Walks `dir`, returning the first symlink or `..` problem (validate step 2). */
async function walkProblem(dir: string, rel = ''): Promise<string | undefined> {
  for (const entry of await readdir(join(dir, rel), { withFileTypes: true })) {
    const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
    if (entry.name === '..') return `path traversal detected in "${child}": '..' components are not allowed`;
    if (entry.isSymbolicLink())
      return `symlink found at "${child}": symlinks are not allowed in skill directories`;
    if (entry.isDirectory()) {
      const nested = await walkProblem(dir, child);
      if (nested !== undefined) return nested;
    }
  }
  return undefined;
}

/** `POST /skills/validate`: validates the skill directory at an absolute path. */
export async function validateSkillDir(path: string): Promise<ValidationResult> {
  checkSkillPath(path);
  const skillFile = join(path, SKILL_FILE);
  if (!(await pathExists(skillFile)))
    return { valid: false, errors: ['SKILL.md not found in skill directory'], warnings: [] };
  const errors: string[] = [];
  const warnings: string[] = [];
  const problem = await walkProblem(path);
  if (problem !== undefined) errors.push(problem);
  const content = await readFile(skillFile, 'utf8');
  let parsed: ParsedSkill;
  try {
    parsed = parseSkillMd(content);
  } catch (err) {
    if (!(err instanceof SkillParseError)) throw err;
    errors.push(`invalid SKILL.md: ${err.message}`);
    return { valid: false, errors, warnings };
  }
  const fm = parsed.frontmatter;
  errors.push(...frontmatterErrors(fm));
  const dirName = basename(path);
  if (fm.name !== '' && fm.name !== dirName)
    errors.push(`skill name "${fm.name}" must match directory name "${dirName}"`);
  // A rough check, as in the reference: any comma in a file that declares allowed-tools.
  if (fm.allowedTools.length > 0 && content.includes(',') && content.includes('allowed-tools:')) {
    warnings.push(
      'allowed-tools uses comma-delimited format, which is a ToolHive extension; the Agent Skills spec defines space-delimited as the canonical format',
    );
  }
  const lines = content.split('\n').length;
  if (lines > RECOMMENDED_MAX_LINES)
    warnings.push(`SKILL.md has ${lines} lines (recommended max: ${RECOMMENDED_MAX_LINES})`);
  return { valid: errors.length === 0, errors, warnings };
}

export interface SkillFile {
  /** Relative path with `/` separators. */
  path: string;
  data: Buffer;
}

/**
 * Collects the files to package: recursive, dot-files and dot-directories skipped, sorted by
 * path (byte-wise). Symlinks, non-regular files and the limits are 400s.
 */
export async function collectSkillFiles(dir: string): Promise<SkillFile[]> {
  const files: SkillFile[] = [];
  let total = 0;
  const walk = async (rel: string): Promise<void> => {
    for (const entry of await readdir(join(dir, rel), { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue;
      const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isSymbolicLink()) {
        throw new SkepError(
          'skill_invalid',
          `symlink found at "${child}": symlinks are not allowed in skill directories`,
        );
      }
      if (entry.isDirectory()) {
        await walk(child);
        continue;
      }
      if (!entry.isFile()) throw new SkepError('skill_invalid', `"${child}" is not a regular file`);
      if (files.length >= MAX_BUILD_FILES) {
        throw new SkepError('skill_invalid', `the skill has more than ${MAX_BUILD_FILES} files`);
      }
      const data = await readFile(join(dir, child));
      total += data.length;
      if (total > MAX_BUILD_BYTES) {
        throw new SkepError(
          'skill_invalid',
          `the skill is larger than ${MAX_BUILD_BYTES / 1024 / 1024} MiB in total`,
        );
      }
      files.push({ path: child, data });
    }
  };
  await walk('');
  files.sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
  return files;
}

/** Parses the SKILL.md of a collected file set; install-grade checks (valid name, description). */
export function parseCollected(files: readonly SkillFile[], where: string): ParsedSkill {
  const skillMd = files.find((f) => f.path === SKILL_FILE);
  if (skillMd === undefined)
    throw new SkepError('skill_invalid', `${where}: SKILL.md not found in skill directory`);
  let parsed: ParsedSkill;
  try {
    parsed = parseSkillMd(skillMd.data.toString('utf8'));
  } catch (err) {
    if (err instanceof SkillParseError)
      throw new SkepError('skill_invalid', `${where}: invalid SKILL.md: ${err.message}`);
    throw err;
  }
  const errors = frontmatterErrors(parsed.frontmatter);
  if (errors.length > 0) throw new SkepError('skill_invalid', `${where}: ${errors.join('; ')}`);
  return parsed;
}
