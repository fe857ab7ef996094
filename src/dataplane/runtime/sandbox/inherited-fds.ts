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
 */
import { closeSync, readdirSync, readFileSync } from 'node:fs';

const O_CLOEXEC = 0o2000000;

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
    try {
      closeSync(fd);
      closed.push(fd);
    } catch {
      // already closed
    }
  }
  return closed;
}
