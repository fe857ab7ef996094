/**
 * The process runtime (the embedded default): each server is a local child process.
 * `npx://<package>` runs `npx -y <package>`, `uvx://<package>` runs `uvx <package>`,
 * `cmd://<executable>` runs the executable; `args` follow. Stdio servers keep stdin and
 * stdout for the proxy; stderr (and, for HTTP servers, stdout) goes to the workload's log
 * file with size rotation. HTTP servers (sse / streamable-http) get their port through
 * `PORT` and `MCP_PORT` and are ready once the port accepts connections. The server's
 * environment is built from an allow-list (`server-env.ts`), never Skep's whole environment.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { connect } from 'node:net';
import type { Readable } from 'node:stream';
import { findExecutable, isExecutable, SkepError } from '../shared/index.js';
import { RotatingLogFile } from './log-file.js';
import { serverEnvironment } from './server-env.js';
import type { Runtime, RuntimeHealth, ServerExit, ServerHandle, ServerSpec } from './types.js';

export interface ProcessRuntimeOptions {
  logMaxBytes: number;
  logFiles: number;
  /** How long an HTTP server may take to accept connections (ms). */
  readyTimeoutMs?: number;
  /** Grace period between SIGTERM and SIGKILL on stop (ms). */
  stopGraceMs?: number;
}

export interface ProcessCommand {
  command: string;
  args: string[];
}

/** Maps a workload image to the command that runs it, or throws `bad_request`. */
export function processCommand(image: string, args: readonly string[]): ProcessCommand {
  const scheme = /^([a-z]+):\/\/(.*)$/.exec(image);
  if (scheme === null) {
    throw new SkepError(
      'bad_request',
      `the process runtime cannot run the container image '${image}'; use npx://<package>, uvx://<package> or cmd://<executable>`,
    );
  }
  const target = scheme[2] ?? '';
  if (target === '') throw new SkepError('bad_request', `'${image}' names no package or executable`);
  switch (scheme[1]) {
    case 'npx':
      return { command: 'npx', args: ['-y', target, ...args] };
    case 'uvx':
      return { command: 'uvx', args: [target, ...args] };
    case 'cmd':
      return { command: target, args: [...args] };
    default:
      throw new SkepError(
        'bad_request',
        `unknown scheme '${scheme[1]}://' in '${image}'; use npx://, uvx:// or cmd://`,
      );
  }
}

/** What to tell the user when `command` is not installed (ENOENT at spawn, or the check before it). */
function missingExecutable(command: string): string {
  const hint =
    command === 'uvx'
      ? ' (uvx comes with uv: install uv)'
      : command === 'npx'
        ? ' (npx comes with Node.js and npm)'
        : command.includes('/')
          ? ''
          : ' (install it, or give its full path: cmd:///path/to/program)';
  return `cannot start '${command}': it was not found${command.includes('/') ? '' : ' on PATH'}${hint}`;
}

/**
 * Refuses, before anything is written, a `cmd://` workload whose program does not exist
 * (`env` is the environment it would start with). npx:// and uvx:// may run in a container,
 * so they are checked only when they start.
 */
export function checkLocalExecutable(image: string, env: NodeJS.ProcessEnv): void {
  const { command } = processCommand(image, []);
  if (!image.startsWith('cmd://')) return;
  // A relative path with a slash is relative to the runner's directory: left to the start.
  if (command.includes('/') && !command.startsWith('/')) return;
  const found = command.startsWith('/') ? isExecutable(command) : findExecutable(command, env) !== undefined;
  if (!found) throw new SkepError('executable_not_found', missingExecutable(command));
}

function waitForPort(port: number, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      if (child.exitCode !== null || child.signalCode !== null) {
        reject(new Error(`server exited before listening on port ${port}`));
        return;
      }
      const socket = connect({ port, host: '127.0.0.1' });
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() > deadline)
          reject(new Error(`server did not listen on port ${port} within ${timeoutMs} ms`));
        else setTimeout(attempt, 100);
      });
    };
    attempt();
  });
}

export class ProcessRuntime implements Runtime {
  readonly name = 'process' as const;
  readonly #options: ProcessRuntimeOptions;

  constructor(options: ProcessRuntimeOptions) {
    this.#options = options;
  }

  async health(): Promise<RuntimeHealth> {
    return { ok: true, detail: 'local processes' };
  }

  async start(spec: ServerSpec): Promise<ServerHandle> {
    const { command, args } = processCommand(spec.image, spec.args);
    const http = spec.transport !== 'stdio';
    if (http && (spec.targetPort === undefined || spec.targetPort === 0)) {
      throw new SkepError('bad_request', `an ${spec.transport} server needs a target port`);
    }
    // Only the allow-listed part of the runner's environment, plus what the run configuration names.
    const env = serverEnvironment(process.env, spec.env);
    if (http) {
      env['PORT'] = String(spec.targetPort);
      env['MCP_PORT'] = String(spec.targetPort);
    }
    const log = new RotatingLogFile(spec.logFile, {
      maxBytes: this.#options.logMaxBytes,
      files: this.#options.logFiles,
    });
    const child = spawn(command, args, {
      env,
      ...(spec.cwd === undefined ? {} : { cwd: spec.cwd }),
      stdio: [http ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      windowsHide: true,
    });

    const exited = new Promise<ServerExit>((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
      child.once('error', (err) => {
        log.write(`[skep] cannot start ${command}: ${err.message}\n`);
        resolve({ code: null, signal: null });
      });
    });
    void exited.then(() => log.close());
    const pipeToLog = (stream: Readable | null) => stream?.on('data', (chunk: Buffer) => log.write(chunk));
    pipeToLog(child.stderr);
    if (http) pipeToLog(child.stdout);

    // Wait for 'spawn' (or the spawn error) so a missing executable fails here, clearly.
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', () => resolve());
      child.once('error', (err) => {
        const code = (err as NodeJS.ErrnoException).code;
        reject(
          code === 'ENOENT'
            ? new SkepError('executable_not_found', missingExecutable(command), { cause: err })
            : new SkepError('bad_request', `cannot start '${command}': ${code ?? err.message}`, {
                cause: err,
              }),
        );
      });
    });

    const graceMs = this.#options.stopGraceMs ?? 5000;
    let stopping: Promise<void> | undefined;
    const stop = (): Promise<void> => {
      stopping ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      })();
      return stopping;
    };

    let url: string | undefined;
    if (http) {
      try {
        await waitForPort(spec.targetPort as number, child, this.#options.readyTimeoutMs ?? 60_000);
      } catch (err) {
        await stop();
        throw err;
      }
      url = `http://127.0.0.1:${spec.targetPort}${spec.transport === 'sse' ? '/sse' : '/mcp'}`;
    }

    const handle: ServerHandle = {
      id: String(child.pid),
      exited,
      stop,
      ...(http || child.stdin === null || child.stdout === null
        ? {}
        : { stdio: { stdin: child.stdin, stdout: child.stdout } }),
      ...(url === undefined ? {} : { url }),
    };
    return handle;
  }
}
