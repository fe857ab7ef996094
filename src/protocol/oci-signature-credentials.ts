/**
 * Registry credentials for the image check, found where Podman's pull finds them, so that the
 * signature lookup logs in as the pull does. containers-auth.json(5): the primary file
 * (`$REGISTRY_AUTH_FILE` when set, else `$XDG_RUNTIME_DIR/containers/auth.json`, else
 * `/run/containers/<uid>/auth.json`), then `$XDG_CONFIG_HOME/containers/auth.json`
 * (`~/.config/containers/auth.json`), then `$HOME/.docker/config.json` (`$DOCKER_CONFIG` moves
 * it), then `$HOME/.dockercfg`. In a file, the most specific key wins: `host/ns/repo`, then
 * `host/ns`, then `host` (Docker's `https://host` and `https://index.docker.io/v1/` spellings
 * too). Inline `auth` (base64 `user:password`) and `username`/`password` entries are read;
 * an entry that only names a credential helper is reported as such, never silently skipped.
 */
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface RegistryCredentials {
  username: string;
  password: string;
  /** The file they came from, for messages (never the values). */
  source: string;
}

/** What the search found for one registry: credentials, or where it looked and why nothing. */
export type CredentialSearch =
  { found: RegistryCredentials } | { found?: undefined; searched: string[]; helper?: string };

interface AuthFile {
  auths?: Record<string, { auth?: string; username?: string; password?: string } | undefined>;
  credHelpers?: Record<string, string | undefined>;
  credsStore?: string;
}

/** The files containers-auth.json(5) reads, in its order, for this environment. */
export function authFiles(env: NodeJS.ProcessEnv = process.env): string[] {
  const home = env['HOME'] ?? homedir();
  const runtimeDir = env['XDG_RUNTIME_DIR'];
  const uid = process.getuid?.() ?? 0;
  const primary =
    env['REGISTRY_AUTH_FILE'] ??
    (runtimeDir !== undefined && runtimeDir !== ''
      ? join(runtimeDir, 'containers', 'auth.json')
      : `/run/containers/${uid}/auth.json`);
  return [
    primary,
    join(env['XDG_CONFIG_HOME'] ?? join(home, '.config'), 'containers', 'auth.json'),
    join(env['DOCKER_CONFIG'] ?? join(home, '.docker'), 'config.json'),
    join(home, '.dockercfg'),
  ];
}

/** The keys that may hold `registry/repository`'s credentials, most specific first. */
function keysFor(registry: string, repository: string): string[] {
  const parts = repository.split('/');
  const keys: string[] = [];
  for (let n = parts.length; n >= 1; n--) keys.push(`${registry}/${parts.slice(0, n).join('/')}`);
  keys.push(registry, `https://${registry}`, `http://${registry}`);
  if (registry === 'docker.io') keys.push('https://index.docker.io/v1/', 'index.docker.io');
  return keys;
}

function decodeEntry(entry: {
  auth?: string;
  username?: string;
  password?: string;
}): { username: string; password: string } | undefined {
  if (typeof entry.auth === 'string' && entry.auth !== '') {
    const decoded = Buffer.from(entry.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0) return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  if (typeof entry.username === 'string' && typeof entry.password === 'string')
    return { username: entry.username, password: entry.password };
  return undefined;
}

async function readAuthFile(path: string): Promise<AuthFile | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed !== 'object' || parsed === null) return undefined;
    // The legacy ~/.dockercfg is the `auths` map itself.
    return path.endsWith('.dockercfg') ? { auths: parsed as NonNullable<AuthFile['auths']> } : parsed;
  } catch {
    return undefined;
  }
}

/** Credentials for `registry/repository` (as `parseImageRef` splits an image), by the search above. */
export async function findRegistryCredentials(
  registry: string,
  repository: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<CredentialSearch> {
  const files = authFiles(env);
  const keys = keysFor(registry, repository);
  let helper: string | undefined;
  for (const file of files) {
    const config = await readAuthFile(file);
    if (config === undefined) continue;
    for (const key of keys) {
      const entry: unknown = config.auths?.[key];
      // A hand-edited file may hold anything; an entry that is not an object is no login.
      const credentials = typeof entry === 'object' && entry !== null ? decodeEntry(entry) : undefined;
      if (credentials !== undefined) return { found: { ...credentials, source: file } };
    }
    helper ??= keys.map((k) => config.credHelpers?.[k]).find((h) => h !== undefined) ?? config.credsStore;
  }
  return { searched: files, ...(helper === undefined ? {} : { helper }) };
}
