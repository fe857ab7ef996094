/**
 * Where a workload's log files live, and tail reading for `skep logs` and the logs routes.
 * Writing (with rotation) is `RotatingLogFile` in the runtime domain.
 */
import { closeSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The last `lines` lines of a file (reads at most the last 4 MiB). */
export function tailFile(path: string, lines: number): string {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw err;
  }
  try {
    const size = statSync(path).size;
    const length = Math.min(size, 4 * 1024 * 1024);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    const text = buffer.toString('utf8');
    const parts = text.split('\n');
    if (parts.at(-1) === '') parts.pop();
    return parts.slice(-lines).join('\n') + (parts.length > 0 ? '\n' : '');
  } finally {
    closeSync(fd);
  }
}

export function serverLogPath(logsDir: string, name: string): string {
  return join(logsDir, `${name}.log`);
}

export function runnerLogPath(logsDir: string, name: string): string {
  return join(logsDir, `${name}.proxy.log`);
}

/** Removes a workload's log files (current and rotated). */
export function removeLogs(logsDir: string, name: string, files: number): void {
  for (const base of [serverLogPath(logsDir, name), runnerLogPath(logsDir, name)]) {
    rmSync(base, { force: true });
    for (let i = 1; i <= files; i++) rmSync(`${base}.${i}`, { force: true });
  }
}
