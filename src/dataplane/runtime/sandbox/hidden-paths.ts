/**
 * What no sandboxed server may see, as real paths: Skep's config, state, data and cache
 * folders, the folder of the sandboxes' relay sockets, and the management API's unix socket.
 * The sandbox hides them, a permission profile may not name anything inside them, and where a
 * profile (or a program the server needs) shows a folder that holds one of them, it is hidden
 * again (`bwrap-args.ts`).
 *
 * Every comparison is between real paths (symbolic links resolved, as the kernel resolves
 * them when bwrap binds a path), so no spelling of a path — a symlinked ancestor such as
 * Fedora Silverblue's `/home -> /var/home`, `/proc/self/root/...`, `..` after a symlink —
 * leads around the rule.
 *
 * The API socket: `skep serve --socket PATH` may put it anywhere (a group-owned folder, say).
 * Its path is read from the discovery file `skep serve` writes while it listens. When the
 * socket's folder holds nothing else, the folder is hidden like Skep's own (an empty tmpfs over
 * a folder outlives the socket being removed and made again by a restarted `skep serve`);
 * otherwise the socket file alone is covered.
 */
import { lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { SkepError } from '../../../shared/index.js';

/** Skep's folders the sandbox hides; the workloads' homes live in `dataDir`. */
export interface SandboxPaths {
  configDir: string;
  stateDir: string;
  dataDir: string;
  cacheDir: string;
  /** `skep serve`'s discovery file, which names the API's unix socket when it listens on one. */
  discoveryFile?: string;
}

/** Real paths no server may see: folders (hidden whole) and files (covered one by one). */
export interface HiddenPaths {
  dirs: string[];
  files: string[];
}

/** True when `path` is `dir` or inside it. */
export function isWithin(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/**
 * Where `path` (absolute) really leads: the real path of its longest existing prefix, with
 * the rest appended. A path that does not exist yet is judged by where it would be created,
 * so a profile cannot name a Skep folder through a symlink to one of its parents before it
 * exists. The prefix is resolved as the kernel does (POSIX: a `..` after a symlink goes up
 * from the symlink's target), never lexically.
 */
export function resolvedPath(path: string): string {
  const rest: string[] = [];
  let prefix = isAbsolute(path) ? path : resolve(path);
  for (;;) {
    try {
      // The native realpath(3): Node's own first removes `..` lexically, which the kernel does not.
      return join(realpathSync.native(prefix), ...rest);
    } catch {
      const parent = dirname(prefix);
      if (parent === prefix) return resolve(path);
      rest.unshift(basename(prefix));
      prefix = parent;
    }
  }
}

/** The folder of the sandboxes' relay sockets (one sub-folder per start), private to this user. */
export function sandboxRunDir(): string {
  return join(tmpdir(), `skep-${process.getuid?.() ?? 0}`);
}

/**
 * Creates the relay sockets' folder (0700) and checks that it is ours: `/tmp` is shared, and
 * another local user could have made the folder first (or a symlink in its place).
 */
export function ensureSandboxRunDir(): string {
  const dir = sandboxRunDir();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = lstatSync(dir);
  const uid = process.getuid?.();
  if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid) || (stat.mode & 0o077) !== 0) {
    throw new SkepError(
      'sandbox_unavailable',
      `${dir} is not a private folder of this user (another user may have made it): remove it, or set TMPDIR to a private folder`,
    );
  }
  return dir;
}

/** The unix socket `skep serve` listens on, from its discovery file (`url: unix://<path>`). */
export function apiSocketPath(discoveryFile: string | undefined): string | undefined {
  if (discoveryFile === undefined) return undefined;
  try {
    const info = JSON.parse(readFileSync(discoveryFile, 'utf8')) as { url?: unknown };
    if (typeof info.url !== 'string' || !info.url.startsWith('unix://')) return undefined;
    const path = info.url.slice('unix://'.length);
    return isAbsolute(path) ? path : undefined;
  } catch {
    return undefined;
  }
}

/** Folders that are never the API socket's own, even when they hold nothing else. */
function sharedFolders(): string[] {
  return ['/', '/home', '/root', '/tmp', '/var/tmp', '/run', '/var/run', '/mnt', '/media', homedir()].map(
    resolvedPath,
  );
}

/** True when `dir` holds nothing but `name` (or nothing at all) and is not a folder others share. */
function ownFolder(dir: string, name: string): boolean {
  if (sharedFolders().some((shared) => isWithin(shared, dir))) return false;
  try {
    return readdirSync(dir).every((entry) => entry === name);
  } catch {
    return false;
  }
}

/** The real paths of Skep's folders, the relay sockets' folder and the API socket. */
export function hiddenPathsOf(paths: SandboxPaths): HiddenPaths {
  const dirs = [paths.configDir, paths.stateDir, paths.dataDir, paths.cacheDir, sandboxRunDir()].map(
    resolvedPath,
  );
  const files: string[] = [];
  const socket = apiSocketPath(paths.discoveryFile);
  if (socket !== undefined) {
    const real = resolvedPath(socket);
    if (!dirs.some((dir) => isWithin(real, dir))) {
      if (ownFolder(dirname(real), basename(real))) dirs.push(dirname(real));
      else files.push(real);
    }
  }
  return { dirs: [...new Set(dirs)], files };
}

/**
 * Creates Skep's folders that do not exist yet (0700, as Skep itself would), so each can be
 * hidden now: bwrap mounts a tmpfs only where a folder exists, or where it can make one, which
 * it cannot inside a read-only bind (and a folder made later would not be hidden at all). One
 * that cannot be made is left out: Skep, as the same user, cannot make it either.
 */
export function createHiddenDirs(hidden: HiddenPaths): HiddenPaths {
  const dirs = hidden.dirs.filter((dir) => {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      return lstatSync(dir).isDirectory();
    } catch {
      return false;
    }
  });
  return { dirs, files: hidden.files };
}
