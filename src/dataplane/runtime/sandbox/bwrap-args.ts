/**
 * The bubblewrap command line of a sandboxed server (docs/sandbox.md), built from a layout so the
 * rules can be read (and tested) in one place:
 *
 * - `/` read-only; a minimal `/dev` (null, zero, random, tty, shm) and a `/proc` of the
 *   sandbox's own pid namespace.
 * - Hidden behind empty tmpfs: every home (`/home`, `/root`, the user's `$HOME`), `/tmp`,
 *   `/var/tmp`, `/run` (session sockets: D-Bus, the Docker and Podman sockets, ssh-agent in
 *   `/tmp`), `/mnt`, `/media`, and what `hidden-paths.ts` lists: Skep's config, state, data
 *   and cache folders, its relay sockets' folder and the API socket's, wherever they are.
 * - The workload's own home (a folder under Skep's data folder) appears at `$HOME`.
 * - Programs the server needs that live in a hidden place (a Node.js or uv installation under
 *   the home) are bound read-only; then the profile's `read` paths read-only and `write` paths
 *   read-write, each bound by its real path (bwrap binds the object a path leads to, so the
 *   path checked must be the path bound); after every bind, the hidden paths that a bind shows
 *   are hidden again (a tmpfs over a folder, `/dev/null` over a file), bwrap applying its
 *   arguments in order.
 * - A package store entry (`npm-store.ts`) is bound read-only at its own path after every
 *   hidden path is hidden again (it lives in Skep's cache folder, which stays hidden around
 *   it); the install that fills a staging folder gets that folder alone read-write.
 * - Every namespace is new (`--unshare-all`: user, pid, ipc, uts, cgroup, net), the network
 *   too unless the profile allows everything (`--share-net`); all capabilities dropped (bwrap
 *   run by root keeps them otherwise, and could unmount what hides the home); a new session
 *   (no terminal to inject into); it dies with the runner. bwrap itself sets no_new_privs.
 *
 * The environment is not on this command line (any local user can read a process's
 * arguments): the runtime gives it to bwrap's own process, which passes it on unchanged.
 */
import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { SkepError } from '../../../shared/index.js';
import { SANDBOX_SOCKET_DIR } from './forwarder.js';
import { type HiddenPaths, isWithin, resolvedPath } from './hidden-paths.js';

export interface Mount {
  src: string;
  dest: string;
}

export interface BwrapLayout {
  /** Covered with an empty tmpfs, parents first. */
  hide: string[];
  /** The workload's home (`src`) shown at the user's `$HOME` (`dest`). */
  home: Mount;
  /** Programs (and DNS configuration) from hidden places, read-only. */
  programs: Mount[];
  /** The permission profile's `read` paths. */
  readOnly: Mount[];
  /** The permission profile's `write` paths. */
  readWrite: Mount[];
  /** Hidden folders that a bind above shows, hidden again (an empty tmpfs each). */
  rehide: string[];
  /** Hidden files the sandbox would show, covered with `/dev/null` (after every bind). */
  cover: string[];
  /**
   * Package store folders (inside Skep's hidden cache folder), each at its own path, bound
   * after everything is hidden again so no rehide covers them: read-only for a server, the
   * staging folder read-write for the install that fills it.
   */
  store?: { mount: Mount; writable: boolean }[];
  /** Host folder bound read-write at `SANDBOX_SOCKET_DIR` (relay sockets). */
  socketDir?: string;
  shareNetwork: boolean;
}

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** Existing directories among `paths` (and their real paths), without any inside another, parents first. */
export function hiddenDirs(paths: readonly string[]): string[] {
  const found: string[] = [];
  for (const path of paths) {
    for (const candidate of [resolve(path), realOrSelf(resolve(path))]) {
      try {
        // A symlink (`/var/run` → `/run`) is covered through its target.
        if (lstatSync(candidate).isDirectory()) found.push(candidate);
      } catch {
        // not there: nothing to hide
      }
    }
  }
  const sorted = [...new Set(found)].sort((a, b) => a.length - b.length || a.localeCompare(b));
  return sorted.filter((dir, i) => !sorted.slice(0, i).some((parent) => isWithin(dir, parent)));
}

/** The folders hidden in every sandbox: homes, temp and runtime folders, removable media, Skep's own. */
export function defaultHiddenDirs(userHome: string, skepDirs: readonly string[]): string[] {
  return hiddenDirs([
    '/home',
    '/root',
    userHome,
    '/tmp',
    '/var/tmp',
    '/run',
    '/var/run',
    '/mnt',
    '/media',
    ...skepDirs,
  ]);
}

/**
 * What must stay visible for `file` (a program) to run when it sits in a hidden folder: a
 * Node.js installation prefix for anything under `<prefix>/lib/node_modules/` or in a `bin`
 * beside one (nvm, fnm, volta keep node and npx there); otherwise the file's own folder.
 */
function programRoot(file: string): string {
  const real = realOrSelf(file);
  const marker = `${sep}lib${sep}node_modules${sep}`;
  const at = real.lastIndexOf(marker);
  if (at > 0) return real.slice(0, at);
  const dir = dirname(real);
  const prefix = dirname(dir);
  if (dir.endsWith(`${sep}bin`) && existsSync(join(prefix, 'lib', 'node_modules'))) return prefix;
  return dir;
}

/**
 * Read-only binds for `programs` (absolute paths) and the `PATH` folders that lie in hidden
 * folders, so the server finds its interpreter and tools. Paths that are not hidden need none.
 */
export function programMounts(
  programs: readonly string[],
  pathDirs: readonly string[],
  hide: readonly string[],
): Mount[] {
  const hidden = (p: string) => hide.some((dir) => isWithin(p, dir));
  const roots: string[] = [];
  for (const program of programs) {
    for (const p of [program, realOrSelf(program)]) if (hidden(p)) roots.push(programRoot(p));
  }
  for (const dir of pathDirs) if (isAbsolute(dir) && existsSync(dir) && hidden(dir)) roots.push(dir);
  return hiddenDirsOrFiles(roots).map((p) => ({ src: p, dest: p }));
}

/**
 * The project folder of a program file: everything before the first `node_modules` (Node
 * resolves a package's dependencies in the folders above it), else the nearest folder above
 * with a `package.json`, `pyproject.toml` or `.git`, else the file's folder.
 */
export function projectRoot(file: string): string {
  const marker = `${sep}node_modules${sep}`;
  const at = file.indexOf(marker);
  if (at > 0) return file.slice(0, at);
  for (let dir = dirname(file); dir !== dirname(dir); dir = dirname(dir)) {
    if (['package.json', 'pyproject.toml', '.git'].some((name) => existsSync(join(dir, name)))) return dir;
  }
  return dirname(file);
}

/**
 * Read-only binds for the program files a `cmd://` server names in its arguments (`node
 * ~/proj/server.js`): the user asked to run that program, so its project folder is visible
 * (read-only), as the executable itself is. Folders given as arguments are data, not
 * programs: only the profile's `read`/`write` show them. A project folder that is a home, a
 * temp folder, `/`, or holds Skep's folders is not shown whole: then the file's own folder
 * (under the same rule), or the file alone.
 */
export function argumentMounts(
  args: readonly string[],
  hide: readonly string[],
  never: readonly string[],
): Mount[] {
  const hidden = (p: string) => hide.some((dir) => isWithin(p, dir));
  const allowed = (dir: string) => !never.some((n) => resolve(n) === dir || isWithin(n, dir));
  const out: string[] = [];
  for (const arg of args) {
    if (!isAbsolute(arg)) continue;
    let file: string;
    try {
      file = realpathSync(arg);
      if (!lstatSync(file).isFile()) continue;
    } catch {
      continue;
    }
    if (!hidden(file)) continue;
    const root = projectRoot(file);
    out.push(allowed(root) ? root : allowed(dirname(file)) ? dirname(file) : file);
  }
  return hiddenDirsOrFiles(out).map((p) => ({ src: p, dest: p }));
}

/** Like `hiddenDirs` for paths that exist (files too), keeping only the outermost. */
function hiddenDirsOrFiles(paths: readonly string[]): string[] {
  const sorted = [...new Set(paths.filter((p) => existsSync(p)))].sort((a, b) => a.length - b.length);
  return sorted.filter((p, i) => !sorted.slice(0, i).some((parent) => isWithin(p, parent)));
}

/**
 * The resolver configuration for a sandbox that shares the host network: `/etc/resolv.conf`
 * is often a link into `/run` (systemd-resolved), which the sandbox hides.
 */
export function resolverMounts(hide: readonly string[]): Mount[] {
  try {
    if (!lstatSync('/etc/resolv.conf').isSymbolicLink()) return [];
    const target = resolve('/etc', readlinkSync('/etc/resolv.conf'));
    const real = realOrSelf(target);
    if (!existsSync(real) || !hide.some((dir) => isWithin(real, dir))) return [];
    return [{ src: real, dest: real }];
  } catch {
    return [];
  }
}

/** The kernel's own file systems: their paths lead anywhere (`/proc/self/root`, `/proc/<pid>/cwd`). */
const KERNEL_FILESYSTEMS = ['/proc', '/sys'];

/** One `read`/`write` entry of a permission profile, checked. */
export interface ProfileBind {
  /** As written. */
  spelled: string;
  /** The real path of `spelled` (of its longest existing prefix, when it does not exist). */
  src: string;
  /** Where it appears in the sandbox, when the profile says (`host:container`). */
  dest?: string;
  readOnly: boolean;
}

function refuse(spelled: string, why: string): never {
  throw new SkepError('invalid_config', `permission_profile: '${spelled}' ${why}`);
}

/**
 * Checks the profile's `host[:container]:ro|rw` binds (as `bindsFor` writes them) against the
 * paths no server may see: a path that leads into one of them is refused, as is a path in
 * `/proc` or `/sys` (as written or as it resolves). A path that holds one of them is allowed;
 * the sandbox hides them again. The same check runs when a workload is created and when it
 * starts (the paths may have changed in between).
 */
export function checkProfileBinds(binds: readonly string[], hidden: HiddenPaths): ProfileBind[] {
  return binds.map((bind) => {
    const parts = bind.split(':');
    const mode = parts.pop();
    // `bindsFor` writes the container path even when the profile gives none (then the same).
    const [spelled = '', given = spelled] = parts;
    const container = given === spelled ? undefined : given;
    const src = resolvedPath(spelled);
    const places = container === undefined ? [spelled, src] : [spelled, src, container];
    if (places.some((p) => KERNEL_FILESYSTEMS.some((k) => isWithin(resolve(p), k))))
      refuse(spelled, 'is in /proc or /sys, whose paths lead anywhere; name the folder itself');
    for (const place of [...hidden.dirs, ...hidden.files]) {
      if (isWithin(src, place))
        refuse(
          spelled,
          `${src === spelled ? 'is' : `leads to ${src}, which is`} inside Skep's own folder ${place}, which no server may see`,
        );
    }
    return { spelled, src, readOnly: mode === 'ro', ...(container === undefined ? {} : { dest: container }) };
  });
}

/**
 * The profile's binds as mounts, at start: each must exist (bwrap cannot bind nothing), and
 * is bound by its real path at its real path, so the symlinks on the way (`/home -> /var/home`)
 * resolve in the sandbox as on the host. A path written through a symlink that lies in a
 * hidden folder (`~/docs -> /data/docs`: the sandbox has a home of its own) is shown at the
 * written path too. A `container` path that lies outside the hidden folders is resolved the
 * same way (the sandbox sees the host's tree there); inside them it is the sandbox's own.
 */
export function profileMounts(
  binds: readonly string[],
  hidden: HiddenPaths,
  hide: readonly string[],
): { readOnly: Mount[]; readWrite: Mount[] } {
  const readOnly: Mount[] = [];
  const readWrite: Mount[] = [];
  const inHidden = (p: string) => hide.some((dir) => isWithin(p, dir));
  for (const bind of checkProfileBinds(binds, hidden)) {
    if (!existsSync(bind.src)) {
      refuse(bind.spelled, `does not exist; create it or remove it from ${bind.readOnly ? 'read' : 'write'}`);
    }
    const out = bind.readOnly ? readOnly : readWrite;
    if (bind.dest !== undefined) {
      const lexical = resolve(bind.dest);
      out.push({ src: bind.src, dest: inHidden(lexical) ? lexical : resolvedPath(lexical) });
      continue;
    }
    out.push({ src: bind.src, dest: bind.src });
    const lexical = resolve(bind.spelled);
    if (lexical !== bind.src && inHidden(lexical)) out.push({ src: bind.src, dest: lexical });
  }
  return { readOnly, readWrite };
}

/**
 * Where the hidden paths reappear through `mounts` (each mapped to its place in the sandbox),
 * to be hidden again after every bind; and the hidden files that no hidden folder covers.
 * Only what exists is listed: bwrap cannot mount over nothing inside a read-only bind
 * (`createHiddenDirs` makes Skep's folders first).
 */
export function hiddenAgain(
  mounts: readonly Mount[],
  hidden: HiddenPaths,
  hide: readonly string[],
): { rehide: string[]; cover: string[] } {
  const rehide: string[] = [];
  const cover: string[] = [];
  for (const file of hidden.files) {
    if (existsSync(file) && !hide.some((dir) => isWithin(file, dir))) cover.push(file);
  }
  for (const mount of mounts) {
    const real = resolvedPath(mount.src);
    const at = (path: string) => join(mount.dest, relative(real, path));
    for (const dir of hidden.dirs) if (isWithin(dir, real) && existsSync(dir)) rehide.push(at(dir));
    for (const file of hidden.files) if (isWithin(file, real) && existsSync(file)) cover.push(at(file));
  }
  return { rehide: [...new Set(rehide)], cover: [...new Set(cover)] };
}

/** The bwrap arguments that run `command args` in `layout`. */
export function bwrapArgs(layout: BwrapLayout, command: string, args: readonly string[]): string[] {
  const out = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'];
  for (const dir of layout.hide) out.push('--tmpfs', dir);
  // The home first: programs and profile paths under $HOME go on top of it.
  out.push('--bind', layout.home.src, layout.home.dest);
  for (const m of layout.programs) out.push('--ro-bind', m.src, m.dest);
  for (const m of layout.readOnly) out.push('--ro-bind', m.src, m.dest);
  for (const m of layout.readWrite) out.push('--bind', m.src, m.dest);
  for (const dir of layout.rehide) out.push('--tmpfs', dir);
  for (const file of layout.cover) out.push('--ro-bind', '/dev/null', file);
  for (const { mount, writable } of layout.store ?? [])
    out.push(writable ? '--bind' : '--ro-bind', mount.src, mount.dest);
  if (layout.socketDir !== undefined) out.push('--bind', layout.socketDir, SANDBOX_SOCKET_DIR);
  out.push('--unshare-all');
  if (layout.shareNetwork) out.push('--share-net');
  out.push('--cap-drop', 'ALL', '--new-session', '--die-with-parent', '--chdir', layout.home.dest);
  out.push('--', command, ...args);
  return out;
}
