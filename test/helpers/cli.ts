/** Runs the real `skep` CLI (from src/ through tsx) as a child process. */
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { apiTokenFor } from './api.js';

export const CLI_ENTRY = fileURLToPath(new URL('../../src/control/cli/main.ts', import.meta.url));
export const CLI_ARGS = ['--import', 'tsx', CLI_ENTRY];

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(args: string[], env: NodeJS.ProcessEnv, input?: string): CliResult {
  const res = spawnSync(process.execPath, [...CLI_ARGS, ...args], {
    env,
    encoding: 'utf8',
    input,
    timeout: 60_000,
  });
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

/**
 * `runCli` without blocking this process (for tests whose own process serves something the
 * CLI talks to, or that wait minutes): resolves with the exit code, never rejects.
 */
export function runCliAsync(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...CLI_ARGS, ...args],
      { env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : null;
        resolve({ status: code, stdout, stderr });
      },
    );
  });
}

export interface ServeProcess {
  child: ChildProcess;
  url: string;
  nonce: string;
  /** The API token (TCP), read the way a client would: SKEP_API_TOKEN, else the token file. */
  token: string | undefined;
  /** `Authorization: Bearer <token>` for fetch. */
  auth: Record<string, string>;
  stderr(): string;
  /** Sends SIGTERM and waits for the exit code. */
  stop(): Promise<number | null>;
}

/** Starts `skep serve` and waits until its discovery file names a healthy server. */
export async function startServe(
  t: TestContext,
  env: NodeJS.ProcessEnv,
  discoveryFile: string,
  args: string[] = ['--port', '0'],
): Promise<ServeProcess> {
  const child = spawn(process.execPath, [...CLI_ARGS, 'serve', ...args], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const exited = once(child, 'exit');
  const stop = async (): Promise<number | null> => {
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    child.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    return code;
  };
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`skep serve exited with ${child.exitCode}: ${stderr}`);
    if (existsSync(discoveryFile)) {
      try {
        const info = JSON.parse(readFileSync(discoveryFile, 'utf8')) as {
          url: string;
          pid: number;
          nonce: string;
        };
        if (info.pid === child.pid) {
          const token = info.url.startsWith('unix://') ? undefined : apiTokenFor(env);
          const auth: Record<string, string> =
            token === undefined ? {} : { authorization: `Bearer ${token}` };
          return { child, url: info.url, nonce: info.nonce, token, auth, stderr: () => stderr, stop };
        }
      } catch {
        // being written; retry
      }
    }
    await sleep(50);
  }
  child.kill('SIGKILL');
  throw new Error(`skep serve did not start within 30 s: ${stderr}`);
}
