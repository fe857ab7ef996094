/**
 * Which clients take skills and where their skills directory is, per scope (ToolHive's table
 * of skill clients). User-scope paths resolve from `$HOME` at call time, so tests (and a
 * CLI run for another home) point every client at a temp dir. A client counts as detected
 * when its top-level home folder (e.g. `~/.claude`) exists.
 *
 * The client catalog in `src/clients` carries the same user-scope facts; this table also
 * holds the project-scope folders, which the catalog does not model.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { SkepError } from '../shared/index.js';

interface SkillDirSpec {
  /** Path segments below `$HOME` (user scope). */
  user: readonly string[];
  /** Path segments below the project root (project scope). */
  project: readonly string[];
}

const AGENTS: SkillDirSpec = { user: ['.agents', 'skills'], project: ['.agents', 'skills'] };
const COPILOT: SkillDirSpec = { user: ['.copilot', 'skills'], project: ['.github', 'skills'] };

const SKILL_CLIENTS: Readonly<Record<string, SkillDirSpec>> = {
  'claude-code': { user: ['.claude', 'skills'], project: ['.claude', 'skills'] },
  cursor: { user: ['.cursor', 'skills'], project: ['.cursor', 'skills'] },
  vscode: COPILOT,
  'vscode-insider': COPILOT,
  cline: { user: ['.cline', 'skills'], project: ['.cline', 'skills'] },
  'roo-code': { user: ['.roo', 'skills'], project: ['.roo', 'skills'] },
  windsurf: { user: ['.codeium', 'windsurf', 'skills'], project: ['.windsurf', 'skills'] },
  'amp-cli': AGENTS,
  goose: AGENTS,
  trae: AGENTS,
  antigravity: AGENTS,
  'gemini-cli': AGENTS,
  codex: AGENTS,
  opencode: { user: ['.config', 'opencode', 'skills'], project: ['.opencode', 'skills'] },
  kiro: { user: ['.kiro', 'skills'], project: ['.kiro', 'skills'] },
  'mistral-vibe': { user: ['.vibe', 'skills'], project: ['.vibe', 'skills'] },
  'kimi-cli': { user: ['.kimi', 'skills'], project: ['.kimi', 'skills'] },
  factory: { user: ['.factory', 'skills'], project: ['.factory', 'skills'] },
  qoder: { user: ['.qoder', 'skills'], project: ['.qoder', 'skills'] },
};

/** Clients known to Skep that cannot take skills (for a precise error message). */
const NO_SKILLS = new Set([
  'windsurf-jetbrains',
  'lm-studio',
  'continue',
  'zed',
  'vscode-server',
  'copilot-cli',
]);

export const SKILL_CLIENT_TYPES: readonly string[] = Object.keys(SKILL_CLIENTS).sort();

export type Scope = 'user' | 'project';

export function homeDir(env: NodeJS.ProcessEnv = process.env): string {
  const home = env['HOME'];
  return home !== undefined && home !== '' ? home : homedir();
}

/** The skills folder of `client` for a scope (without the skill name). */
export function skillsDirFor(
  client: string,
  scope: Scope,
  projectRoot: string,
  env: NodeJS.ProcessEnv = process.env,
): string {
  const spec = SKILL_CLIENTS[client];
  if (spec === undefined)
    throw new SkepError('client_unknown', `invalid client "${client}": not a skill-capable client`);
  if (scope === 'project') return join(projectRoot, ...spec.project);
  if (client === 'opencode' && process.platform === 'win32') return join(homeDir(env), 'opencode', 'skills');
  return join(homeDir(env), ...spec.user);
}

export function detectedSkillClients(env: NodeJS.ProcessEnv = process.env): string[] {
  const home = homeDir(env);
  return SKILL_CLIENT_TYPES.filter((c) => existsSync(join(home, SKILL_CLIENTS[c]!.user[0]!)));
}

/**
 * Resolves the requested client list (ToolHive's client targeting): empty or `["all"]` means
 * every detected skill client; otherwise each name must be a skill-capable client.
 */
export function resolveClients(
  requested: readonly string[] | undefined,
  env: NodeJS.ProcessEnv = process.env,
): string[] {
  const list = requested ?? [];
  if (list.some((c) => typeof c !== 'string' || c.trim() === '')) {
    throw new SkepError('bad_request', 'clients entries must be non-empty strings');
  }
  const hasAll = list.some((c) => c.toLowerCase() === 'all');
  if (list.length === 0 || (list.length === 1 && hasAll)) {
    const detected = detectedSkillClients(env);
    if (detected.length === 0) {
      throw new SkepError(
        'no_client_detected',
        'no supported clients detected on this system; use --clients to target a specific client explicitly',
      );
    }
    return detected;
  }
  if (hasAll) throw new SkepError('bad_request', '"all" cannot be combined with other client names');
  const out: string[] = [];
  for (const c of list) {
    if (SKILL_CLIENTS[c] === undefined) {
      const why = NO_SKILLS.has(c)
        ? 'this client does not support skills'
        : `unknown client; skill clients are: ${SKILL_CLIENT_TYPES.join(', ')}`;
      throw new SkepError('client_unknown', `invalid client "${c}": ${why}`);
    }
    if (!out.includes(c)) out.push(c);
  }
  return out;
}
