/**
 * One run of a package installer (npm, uv) started by Skep outside any sandbox: its output
 * collected, its stderr also passed on line by line (to the server log, so a long install
 * shows what it does), never rejected — a program that cannot start is a failed run.
 */
import { spawn } from 'node:child_process';

/** What an installer run printed and how it ended (`code` null: it could not start, or was killed). */
export interface InstallerRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runInstaller(
  program: string,
  args: string[],
  options: { env: Record<string, string>; cwd: string; timeoutMs: number },
  log: (line: string) => void,
): Promise<InstallerRun> {
  return new Promise((resolve) => {
    const child = spawn(program, args, {
      env: options.env,
      cwd: options.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: options.timeoutMs,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => {
      err.push(c);
      log(c.toString('utf8').trimEnd());
    });
    child.once('error', (e) => resolve({ code: null, stdout: '', stderr: e.message }));
    child.once('close', (code) =>
      resolve({
        code,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      }),
    );
  });
}

/** The last three non-empty lines a failed run printed, for an error message. */
export function installerTail(run: InstallerRun): string {
  const lines = `${run.stderr}\n${run.stdout}`
    .trim()
    .split('\n')
    .filter((l) => l.trim() !== '');
  return lines.slice(-3).join(' | ') || `exit ${run.code}`;
}
