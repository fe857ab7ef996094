/**
 * Open file descriptors a server must not inherit. A child gets every descriptor of its parent
 * that lacks close-on-exec (POSIX `execve`), and neither Node's `spawn` nor bwrap closes the
 * others: bwrap hands them to the sandboxed program on purpose (Flatpak passes descriptors
 * that way). One that this process inherited from its own parent — a directory `skep serve`
 * was started with, say — would let a sandboxed server open files outside its sandbox
 * (`openat` relative to a directory descriptor ignores the mount namespace's view).
 *
 * Node marks the descriptors it finds at start-up close-on-exec only up to the first gap
 * after 15 (libuv `uv_disable_stdio_inheritance`), and everything Node and libuv open later
 * is close-on-exec; a descriptor above 2 without the flag is therefore one nothing in this
 * process uses. They are closed right before a server is spawned, in the same synchronous
 * step, so no other descriptor can appear in between. Linux only: `/proc/self/fdinfo/<fd>`
 * shows the flag as `O_CLOEXEC` in `flags` (proc(5), since Linux 3.1).
 *
 * One exception: the symbol map V8 keeps open for Linux `perf` when Node runs with
 * `--perf-basic-prof` (`/tmp/perf-<pid>.map`, opened without close-on-exec).
 * Closed, its descriptor number would be reused by the next socket and V8 would write symbol
 * lines into that connection. It is left open, so a server started by a process profiled that
 * way inherits a write-only descriptor of that file; a warning says so (a profiling setup, as
 * `npm run bench -- cpu --perf` makes, not a production one).
 */
import { closeSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';

const O_CLOEXEC = 0o2000000;
let warned = false;

/** Closes every descriptor above 2 of this process that a child would inherit; returns their numbers. */
export function closeInheritedFds(): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc/self/fdinfo');
  } catch {
    return [];
  }
  const closed: number[] = [];
  for (const entry of entries) {
    const fd = Number(entry);
    if (!Number.isInteger(fd) || fd <= 2) continue;
    let flags: number;
    try {
      const match = /^flags:\s*([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
      if (match?.[1] === undefined) continue;
      flags = Number.parseInt(match[1], 8);
    } catch {
      // Closed meanwhile (the descriptor that listed the folder is one).
      continue;
    }
    if ((flags & O_CLOEXEC) !== 0) continue;
    if (isV8PerfMap(fd)) {
      if (!warned) {
        warned = true;
        process.emitWarning(
          `descriptor ${fd} is V8's perf symbol map (--perf-basic-prof): left open, so servers inherit it`,
        );
      }
      continue;
    }
    try {
      closeSync(fd);
      closed.push(fd);
    } catch {
      // already closed
    }
  }
  return closed;
}

/** True when `fd` is this process's V8 perf symbol map. */
function isV8PerfMap(fd: number): boolean {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`) === `/tmp/perf-${process.pid}.map`;
  } catch {
    return false;
  }
}
