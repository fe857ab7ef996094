/**
 * Skep's own folders (config, state, data, cache) are the user's alone. They hold the store
 * (workloads' `env_vars` values, such as API keys), the API token, the encrypted secrets and
 * their password file, and server logs; the files inside are created 0600, but a file's mode
 * only counts while its folder keeps others from replacing or listing it.
 *
 * Each folder is created 0700 when missing. One that exists is checked before anything in it
 * is read or written:
 * - owned by another user: refused. That user controls its contents and its mode.
 * - writable by group or others: refused. Someone may already have put a file there (a
 *   `config.yaml` that turns the sandbox off, a store of their own), which making the folder
 *   private now would not undo; the user checks its contents, then runs `chmod 700`.
 * - readable or searchable by group or others (0755, 0750, 0711): repaired to 0700, with a
 *   warning. Nothing can have been planted, access by others ends now, and refusing would
 *   stop every command for a folder the user owns and can fix in the same way Skep does.
 * Not on Windows, where modes do not describe access.
 */
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { SkepError } from '../shared/index.js';
import type { SkepPaths } from './paths.js';

/** What the owner may do and nobody else. */
const PRIVATE = 0o700;
const GROUP_OR_OTHERS = 0o077;
const WRITE_BY_GROUP_OR_OTHERS = 0o022;

/** Makes sure each of Skep's folders exists and is private (see the module comment). */
export function securePrivateDirs(
  paths: Pick<SkepPaths, 'configDir' | 'stateDir' | 'dataDir' | 'cacheDir'>,
  warn: (message: string) => void,
): void {
  for (const dir of [paths.configDir, paths.stateDir, paths.dataDir, paths.cacheDir])
    securePrivateDir(dir, warn);
}

function securePrivateDir(dir: string, warn: (message: string) => void): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE });
  if (process.platform === 'win32') return;
  // stat, not lstat: a folder that is a link to a folder of the user's own is fine.
  const stat = statSync(dir);
  if (!stat.isDirectory())
    throw new SkepError('invalid_path', `${dir} is not a directory; Skep keeps its files there`);
  const uid = process.getuid?.();
  if (uid !== undefined && stat.uid !== uid)
    throw new SkepError(
      'invalid_path',
      `${dir} belongs to uid ${stat.uid}, not to you (uid ${uid}); Skep keeps credentials there, so it must be your own: ` +
        'remove it, or point SKEP_HOME (or XDG_CONFIG_HOME, XDG_STATE_HOME, XDG_DATA_HOME, XDG_CACHE_HOME) elsewhere',
    );
  const mode = stat.mode & 0o777;
  if ((mode & GROUP_OR_OTHERS) === 0) return;
  if ((mode & WRITE_BY_GROUP_OR_OTHERS) !== 0)
    throw new SkepError(
      'invalid_path',
      `${dir} can be written by other users (mode ${mode.toString(8)}), so its files may not be yours: ` +
        `check them, then run 'chmod 700 ${dir}'`,
    );
  chmodSync(dir, PRIVATE);
  warn(
    `${dir} could be read by other users (mode ${mode.toString(8)}); Skep changed it to 700. ` +
      'Its files may have been read: rotate the API token (delete api-token in the state folder) and secrets kept there if that matters',
  );
}
