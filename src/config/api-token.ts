/**
 * The management API's bearer token (without one, any local user could call the API on TCP). `skep
 * serve` and the CLI find it the same way: `SKEP_API_TOKEN` when set, else the `api-token` file in
 * the state directory, which the first `skep serve` on TCP generates (32 random bytes, base64url,
 * mode 0600).
 *
 * The file is created atomically and exclusively: the token is written to a private temp
 * file and hard-linked into place, which fails when the name exists (link(2) EEXIST), so
 * two servers starting at once agree on one token and nobody ever reads half a file.
 *
 * A file that others may read, that belongs to someone else, or that does not hold a token
 * is a start error and is not silently replaced: like OpenSSH's StrictModes for private
 * keys, loosened permissions mean the token may already be known, and the user should see
 * that (and delete the file, which makes the next start generate a new token).
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { SkepError } from '../shared/index.js';
import type { SkepPaths } from './paths.js';

/** The environment variable that sets the token (wins over the file). */
export const API_TOKEN_ENV = 'SKEP_API_TOKEN';

/** At least 32 characters of RFC 6750 §2.1 `b64token` (what fits in `Authorization: Bearer`). */
const TOKEN_SYNTAX = /^[A-Za-z0-9\-._~+/]{32,1024}=*$/;

export interface ApiToken {
  readonly token: string;
  /** `env`: from `SKEP_API_TOKEN`; `file`: from `file`. */
  readonly source: 'env' | 'file';
  /** The token file, when the token came from it. */
  readonly file?: string;
}

export interface ResolveApiTokenOptions {
  /** Generate the file when neither the variable nor the file exists (`skep serve`). */
  create?: boolean;
}

/**
 * The token, from the environment first, then the file. Without `create`, a missing file
 * yields undefined (the CLI then explains how the server was started).
 */
export function resolveApiToken(
  paths: Pick<SkepPaths, 'apiTokenFile'>,
  env: NodeJS.ProcessEnv,
  options: { create: true },
): ApiToken;
export function resolveApiToken(
  paths: Pick<SkepPaths, 'apiTokenFile'>,
  env: NodeJS.ProcessEnv,
  options?: ResolveApiTokenOptions,
): ApiToken | undefined;
export function resolveApiToken(
  paths: Pick<SkepPaths, 'apiTokenFile'>,
  env: NodeJS.ProcessEnv,
  options: ResolveApiTokenOptions = {},
): ApiToken | undefined {
  const fromEnv = env[API_TOKEN_ENV];
  if (fromEnv !== undefined && fromEnv !== '') {
    if (!TOKEN_SYNTAX.test(fromEnv))
      throw new SkepError(
        'invalid_config',
        `${API_TOKEN_ENV} must be at least 32 characters of letters, digits and -._~+/ (e.g. the output of 'openssl rand -hex 32')`,
      );
    return { token: fromEnv, source: 'env' };
  }
  const file = paths.apiTokenFile;
  const existing = readTokenFile(file);
  if (existing !== undefined || options.create !== true) return existing;
  createTokenFile(file);
  // Read back what is there now: when another server won the race, its token is the one.
  const created = readTokenFile(file);
  if (created === undefined) throw new SkepError('internal_error', `${file} vanished after it was created`);
  return created;
}

function readTokenFile(file: string): ApiToken | undefined {
  let fd: number;
  try {
    // O_NOFOLLOW: a symlink planted in the state directory is not followed.
    fd = openSync(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP')
      throw new SkepError(
        'invalid_path',
        `${file} is a symbolic link; delete it so a new token is generated`,
      );
    throw new SkepError('invalid_path', `cannot read the API token file ${file}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  try {
    // fstat on the open descriptor: the file checked is the file read.
    const stat = fstatSync(fd);
    if (!stat.isFile())
      throw new SkepError(
        'invalid_path',
        `${file} is not a regular file; delete it so a new token is generated`,
      );
    const uid = process.getuid?.();
    if (uid !== undefined && stat.uid !== uid)
      throw new SkepError(
        'invalid_path',
        `${file} belongs to uid ${stat.uid}, not to you (uid ${uid}); delete it so a new token is generated`,
      );
    if (process.platform !== 'win32' && (stat.mode & 0o077) !== 0)
      throw new SkepError(
        'invalid_path',
        `${file} can be read by other users (mode ${(stat.mode & 0o777).toString(8)}), so the token may be known: ` +
          `delete the file so a new token is generated (or 'chmod 600' it if you are sure nobody read it)`,
      );
    const token = readFileSync(fd, 'utf8').trim();
    if (!TOKEN_SYNTAX.test(token))
      throw new SkepError(
        'invalid_path',
        `${file} does not hold an API token (at least 32 characters of letters, digits and -._~+/); delete it so a new token is generated`,
      );
    return { token, source: 'file', file };
  } finally {
    closeSync(fd);
  }
}

function createTokenFile(file: string): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const token = randomBytes(32).toString('base64url');
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    try {
      writeSync(fd, `${token}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    try {
      linkSync(tmp, file);
    } catch (err) {
      // Another `skep serve` created it first: keep theirs.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  } finally {
    rmSync(tmp, { force: true });
  }
}
