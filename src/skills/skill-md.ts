/**
 * SKILL.md: YAML frontmatter between `---` delimiters, then a markdown body. The parsing
 * rules and limits follow ToolHive's SKILL.md parser: limits count UTF-8 bytes,
 * not UTF-16 units, so they are measured with `Buffer.byteLength`.
 */
import { parse as parseYaml } from 'yaml';
import { type ErrorCode, SkepError } from '../shared/index.js';

export const MAX_FRONTMATTER_BYTES = 64 * 1024;
export const MAX_DESCRIPTION_BYTES = 1024;
export const MAX_COMPATIBILITY_BYTES = 500;
export const MAX_DEPENDENCIES = 100;
export const RECOMMENDED_MAX_LINES = 500;

const SKILL_NAME = /^[a-z0-9][a-z0-9-]{0,62}[a-z0-9]$/;

export interface SkillFrontmatter {
  name: string;
  description: string;
  version: string;
  license: string;
  compatibility: string;
  allowedTools: string[];
  /** Dependency references from the top-level `toolhive.requires` key. */
  requires: string[];
  metadata: Record<string, string>;
}

export interface ParsedSkill {
  frontmatter: SkillFrontmatter;
  body: string;
}

/** A SKILL.md that cannot be parsed; the message is the reference's wording. */
export class SkillParseError extends Error {
  override readonly name = 'SkillParseError';
  readonly code: ErrorCode = 'skill_invalid';
}

export function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** Returns why `name` is not a valid skill name, or undefined when it is. */
export function skillNameProblem(name: string): string | undefined {
  if (name === '') return 'invalid skill name: must not be empty';
  if (!SKILL_NAME.test(name)) {
    return `invalid skill name "${name}": must be 2-64 lowercase alphanumeric characters or hyphens, starting and ending with alphanumeric`;
  }
  if (name.includes('--')) return `invalid skill name "${name}": must not contain consecutive hyphens`;
  return undefined;
}

export function requireSkillName(name: string): void {
  const problem = skillNameProblem(name);
  if (problem !== undefined) throw new SkepError('invalid_name', problem);
}

/**
 * A string-or-list field: a list is taken as-is; a string with any comma is split on commas,
 * otherwise on whitespace. Parts are trimmed and empty parts dropped.
 */
function stringOrList(value: unknown, field: string): string[] {
  if (value === undefined || value === null) return [];
  if (Array.isArray(value)) {
    return value.map((v) => (typeof v === 'string' ? v : String(v)).trim()).filter((v) => v !== '');
  }
  if (typeof value === 'string') {
    const parts = value.includes(',') ? value.split(',') : value.split(/\s+/);
    return parts.map((p) => p.trim()).filter((p) => p !== '');
  }
  if (typeof value === 'object')
    throw new SkillParseError(`parsing ${field}: expected a string or a list, got a map`);
  return [String(value).trim()].filter((p) => p !== '');
}

function optionalString(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : String(value);
}

/** Splits SKILL.md into frontmatter text and body (ToolHive's delimiter rules). */
function splitFrontmatter(content: string): { yaml: string; body: string } {
  const text = content.trim();
  if (!text.startsWith('---')) throw new SkillParseError('invalid frontmatter');
  let rest = text.slice(3);
  if (rest.startsWith('\r\n')) rest = rest.slice(2);
  else if (rest.startsWith('\n')) rest = rest.slice(1);
  // The closing delimiter is the first `---` anywhere within the first 64 KiB + 3 bytes.
  const window = Buffer.from(rest, 'utf8')
    .subarray(0, MAX_FRONTMATTER_BYTES + 3)
    .toString('utf8');
  const end = window.indexOf('---');
  if (end === -1) {
    if (utf8Length(rest) > MAX_FRONTMATTER_BYTES) {
      throw new SkillParseError(
        `invalid frontmatter: frontmatter exceeds maximum size of ${MAX_FRONTMATTER_BYTES} bytes`,
      );
    }
    throw new SkillParseError('invalid frontmatter');
  }
  let body = rest.slice(end + 3);
  if (body.startsWith('\r\n')) body = body.slice(2);
  else if (body.startsWith('\n')) body = body.slice(1);
  return { yaml: rest.slice(0, end), body };
}

/** Parses SKILL.md text. Throws `SkillParseError` with the reference's messages. */
export function parseSkillMd(content: string): ParsedSkill {
  const { yaml, body } = splitFrontmatter(content);
  let raw: unknown;
  try {
    raw = yaml.trim() === '' ? {} : parseYaml(yaml);
  } catch (err) {
    throw new SkillParseError(`invalid frontmatter: ${(err as Error).message.split('\n')[0]}`);
  }
  if (raw === null || raw === undefined) raw = {};
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw new SkillParseError('invalid frontmatter: expected a YAML map');
  const fm = raw as Record<string, unknown>;
  const requires = stringOrList(fm['toolhive.requires'], 'requires');
  if (requires.length > MAX_DEPENDENCIES) {
    throw new SkillParseError(
      `parsing requires: too many dependencies: ${requires.length} (max ${MAX_DEPENDENCIES})`,
    );
  }
  const metadata: Record<string, string> = {};
  const rawMeta = fm['metadata'];
  if (rawMeta !== undefined && rawMeta !== null) {
    if (typeof rawMeta !== 'object' || Array.isArray(rawMeta)) {
      throw new SkillParseError('invalid frontmatter: metadata must be a map of strings');
    }
    for (const [k, v] of Object.entries(rawMeta)) metadata[k] = optionalString(v);
  }
  return {
    frontmatter: {
      name: optionalString(fm['name']),
      description: optionalString(fm['description']),
      version: optionalString(fm['version']),
      license: optionalString(fm['license']),
      compatibility: optionalString(fm['compatibility']),
      allowedTools: stringOrList(fm['allowed-tools'], 'allowed-tools'),
      requires,
      metadata,
    },
    body,
  };
}

/** Field rules shared by validate and install (ToolHive's frontmatter checks); returns error messages. */
export function frontmatterErrors(fm: SkillFrontmatter): string[] {
  const errors: string[] = [];
  if (fm.name === '') errors.push('name is required');
  else {
    const problem = skillNameProblem(fm.name);
    if (problem !== undefined) errors.push(problem);
  }
  if (fm.description === '') errors.push('description is required');
  else if (utf8Length(fm.description) > MAX_DESCRIPTION_BYTES) {
    errors.push(`description exceeds maximum length of ${MAX_DESCRIPTION_BYTES} characters`);
  }
  if (utf8Length(fm.compatibility) > MAX_COMPATIBILITY_BYTES) {
    errors.push(`compatibility field exceeds maximum length of ${MAX_COMPATIBILITY_BYTES} characters`);
  }
  return errors;
}
