/**
 * The process runtime (the embedded default): each server is a local child process.
 * `npx://<package>` runs `npx -y <package>`, `uvx://<package>` runs `uvx <package>`,
 * `cmd://<executable>` runs the executable; `args` follow. Stdio servers keep stdin and
 * stdout for the proxy; stderr (and, for HTTP servers, stdout) goes to the workload's log
 * file with size rotation. HTTP servers (sse / streamable-http) get their port through
 * `PORT` and `MCP_PORT` and are ready once the port accepts connections. The server's
 * environment is built from an allow-list (`server-env.ts`), never Skep's whole environment.
 *
 * An `npx://` registry package (a name with a version, range or tag) runs from the shared
 * package store (`npm-store.ts`) when the runtime knows Skep's folders: the spec is resolved
 * to an exact version, installed once into the store (sandboxed like the server when the
 * server is), and its bin starts directly — `node <bin file> args`, with no `npm exec`
 * process between the runner and the server. Other specs (`file:`, git, URLs) run through
 * `npx -y -- <spec>` as before. A `uvx://` package (`name` or `name@<version>`) runs from the
 * uv store (`uv-store.ts`) the same way: installed once by the `uv` beside `uvx`, its entry
 * point started directly. Each start records the entry it runs (`package-refs.ts`), so that
 * pruning keeps it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { readdirSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, isAbsolute, join, relative, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import {
  definedOnly,
  findExecutable,
  isExecutable,
  isSkepError,
  type Logger,
  SkepError,
} from '../../shared/index.js';
import { RotatingLogFile } from './log-file.js';
import {
  binCommand,
  nodeToolsBeside,
  NpmStore,
  parseRegistrySpec,
  plainNpmRunner,
  registryDigest,
  registryTagLookup,
  type StoreEntry,
  storeKey,
} from './npm-store.js';
import { recordPackageRef } from './package-refs.js';
import { checkPackageSpec } from './package-spec.js';
import {
  type PreparedSandbox,
  prepareSandbox,
  type SandboxPaths,
  sandboxedPid,
  sandboxNetwork,
  sandboxNpmRunner,
} from './sandbox/bwrap-sandbox.js';
import { closeInheritedFds } from './sandbox/inherited-fds.js';
import { chooseSandbox, type SandboxChoice } from './sandbox/select.js';
import { serverEnvironment } from './server-env.js';
import {
  indexDigest,
  parseUvSpec,
  plainUvRunner,
  uvBeside,
  type UvSpec,
  UvStore,
  type UvStoreEntry,
  uvStoreKey,
} from './uv-store.js';
import type { Runtime, RuntimeHealth, ServerExit, ServerHandle, ServerSpec } from './types.js';

export interface ProcessRuntimeOptions {
  logMaxBytes: number;
  logFiles: number;
  /** How long an HTTP server may take to accept connections (ms). */
  readyTimeoutMs?: number;
  /** Grace period between SIGTERM and SIGKILL on stop (ms). */
  stopGraceMs?: number;
  /**
   * The sandbox of local servers (`sandbox/`): `runtime.sandbox` and Skep's folders (hidden
   * from servers; workload homes live in the data folder). Unset: `off` — never sandboxed, and
   * a profile that asks for isolation is refused.
   */
  sandbox?: { setting: string; paths: SandboxPaths };
  logger?: Logger;
}

export interface ProcessCommand {
  command: string;
  args: string[];
}

/** spawn(2)/execve(2) errors that say the program cannot be run by this user as it is. */
const UNEXECUTABLE = new Set(['EACCES', 'EPERM', 'ENOEXEC', 'ENOTDIR', 'EISDIR']);

/** Maps a workload image to the command that runs it, or throws `runtime_unavailable` (a container image) or
 * `invalid_reference` (no or an unknown scheme target). */
export function processCommand(image: string, args: readonly string[]): ProcessCommand {
  const scheme = /^([a-z]+):\/\/(.*)$/.exec(image);
  if (scheme === null) {
    throw new SkepError(
      'runtime_unavailable',
      `the process runtime cannot run the container image '${image}'; use npx://<package>, uvx://<package> or cmd://<executable>`,
    );
  }
  const target = scheme[2] ?? '';
  if (target === '') throw new SkepError('invalid_reference', `'${image}' names no package or executable`);
  switch (scheme[1] ?? '') {
    case 'npx':
      checkPackageSpec(image, 'npx', target);
      // `--` ends npx's options (XBD §12.2, guideline 10): the package and its arguments follow.
      return { command: 'npx', args: ['-y', '--', target, ...args] };
    case 'uvx':
      checkPackageSpec(image, 'uvx', target);
      return { command: 'uvx', args: [target, ...args] };
    case 'cmd':
      return { command: target, args: [...args] };
    default:
      throw new SkepError(
        'invalid_reference',
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

/**
 * Ready once `port` accepts a connection. Through the sandbox's inbound relay a connection is
 * accepted at once, so there (`http`) ready means an HTTP answer, any status.
 */
function waitForPort(port: number, child: ChildProcess, timeoutMs: number, http = false): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const retry = () => {
      if (Date.now() > deadline)
        reject(new Error(`server did not listen on port ${port} within ${timeoutMs} ms`));
      else setTimeout(attempt, http ? 50 : 100);
    };
    const attempt = () => {
      if (child.exitCode !== null || child.signalCode !== null) {
        reject(new Error(`server exited before listening on port ${port}`));
        return;
      }
      if (http) {
        const req = httpRequest(
          { host: '127.0.0.1', port, path: '/', method: 'GET', timeout: 2000 },
          (res) => {
            res.resume();
            resolve();
          },
        );
        req.on('timeout', () => req.destroy(new Error('timeout')));
        req.on('error', retry);
        req.end();
        return;
      }
      const socket = connect({ port, host: '127.0.0.1' });
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => {
        socket.destroy();
        retry();
      });
    };
    attempt();
  });
}

/** The absolute path of `command` as the server would find it (`env`'s PATH), or `executable_not_found`. */
function resolveProgram(command: string, env: NodeJS.ProcessEnv, cwd: string | undefined): string {
  const found = command.includes('/')
    ? isExecutable(resolve(cwd ?? process.cwd(), command))
      ? resolve(cwd ?? process.cwd(), command)
      : undefined
    : findExecutable(command, env);
  if (found === undefined) throw new SkepError('executable_not_found', missingExecutable(command));
  return found;
}

/** A package store's progress: every line to the server's log; an install or a wait also to the workload's status. */
function storeLog(log: RotatingLogFile, onProgress: ((message: string) => void) | undefined) {
  return (line: string): void => {
    log.write(`${line}\n`);
    const step = /^\[skep\] ((?:npm|uv) store: (?:installing .+|another start is installing .+))$/.exec(
      line,
    )?.[1];
    if (step !== undefined) onProgress?.(step);
  };
}

interface UvStoreStart {
  cacheDir: string;
  workload: string;
  workloadEnv: Readonly<Record<string, string>>;
  sandboxed: boolean;
  log: (line: string) => void;
}

/**
 * The uv store entry a `uvx://` start runs (`uv-store.ts`), or undefined to run `uvx <spec>`
 * as before: no `uv` beside `uvx`; uv cannot resolve or install the package here (for a
 * sandboxed server, one without a wheel: its build would run package code outside the
 * sandbox); or, sandboxed, the entry's interpreter lies in a folder the sandbox hides.
 */
async function uvStoreEntry(
  spec: UvSpec,
  uvx: string,
  start: UvStoreStart,
): Promise<UvStoreEntry | undefined> {
  const uv = uvBeside(uvx);
  if (!isExecutable(uv)) {
    start.log(`[skep] uv store: no uv beside ${uvx}; running uvx`);
    return undefined;
  }
  const run = plainUvRunner(uv, process.env, start.workloadEnv, start.log);
  const store = new UvStore(start.cacheDir);
  const digest = indexDigest(start.workloadEnv);
  let entry: UvStoreEntry;
  try {
    const version = await store.resolve(spec, run, start.log, digest);
    // Recorded before anything is installed: a prune meanwhile keeps the entry.
    recordPackageRef(start.cacheDir, start.workload, {
      store: 'uv',
      key: uvStoreKey(spec.name, version, digest),
    });
    entry = await store.ensure(spec.name, version, run, start.log, { wheelsOnly: start.sandboxed, digest });
  } catch (err) {
    // uv could not resolve or install it here (no wheel for a sandboxed server, an index
    // only uvx's own settings reach): uvx runs it as before, and says what fails if it does.
    if (!isSkepError(err) || err.code !== 'bad_gateway') throw err;
    start.log(
      `[skep] uv store: ${err.message}; ${start.sandboxed ? 'uvx installs it inside the sandbox instead' : 'running uvx instead'}`,
    );
    return undefined;
  }
  const python = entryInterpreter(entry.dir);
  if (start.sandboxed && (python === undefined || isWithin(python, homedir()))) {
    start.log(
      `[skep] uv store: the entry's Python (${python ?? 'not found'}) is in a folder the sandbox hides; running uvx`,
    );
    return undefined;
  }
  return entry;
}

/** The real path of the interpreter of an entry's tool environment, or undefined. */
function entryInterpreter(dir: string): string | undefined {
  try {
    const tools = readdirSync(join(dir, 'tools')).filter((n) => !n.startsWith('.'));
    return realpathSync(join(dir, 'tools', tools[0] ?? '', 'bin', 'python'));
  } catch {
    return undefined;
  }
}

function isWithin(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
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

  /** Sandboxed or not (and why not) for `spec`; throws `sandbox_unavailable` when it must be and cannot. */
  #sandboxFor(
    spec: Pick<ServerSpec, 'sandbox' | 'permissionProfile' | 'permissionProfileName' | 'isolateNetwork'>,
  ): SandboxChoice {
    return chooseSandbox({
      setting: this.#options.sandbox?.setting ?? 'off',
      override: spec.sandbox,
      profile: spec.permissionProfile,
      profileName: spec.permissionProfileName,
      isolateNetwork: spec.isolateNetwork !== false,
    });
  }

  async start(spec: ServerSpec): Promise<ServerHandle> {
    if (spec.imageVerification !== undefined) {
      throw new SkepError(
        'invalid_config',
        `image_verification checks container images; '${spec.image}' runs as a local process: remove image_verification`,
      );
    }
    const { command, args } = processCommand(spec.image, spec.args);
    const http = spec.transport !== 'stdio';
    if (http && (spec.targetPort === undefined || spec.targetPort === 0)) {
      throw new SkepError('invalid_config', `an ${spec.transport} server needs a target port`);
    }
    const choice = this.#sandboxFor(spec);
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
    let launch = { command, args, env, cwd: spec.cwd };
    let entry: StoreEntry | undefined;
    const registry = spec.image.startsWith('npx://') ? parseRegistrySpec(spec.image.slice(6)) : undefined;
    const paths = this.#options.sandbox?.paths;
    if (registry !== undefined && paths !== undefined) {
      try {
        const tools = nodeToolsBeside(resolveProgram(command, env, spec.cwd));
        const writeLog = storeLog(log, spec.onProgress);
        const run = choice.sandboxed
          ? sandboxNpmRunner({ binary: choice.binary, paths, spec, npm: tools.npm, log: writeLog })
          : plainNpmRunner(tools.npm, env, writeLog);
        const store = new NpmStore(paths.cacheDir);
        // With the host's network (no sandbox, or one that shares it) a tag is asked of the
        // registry directly, without starting npm; npm answers anything else.
        const direct = !choice.sandboxed || sandboxNetwork(spec).kind === 'host';
        const registryUrl =
          env['npm_config_registry'] ?? env['NPM_CONFIG_REGISTRY'] ?? 'https://registry.npmjs.org/';
        // The workload's own registry variables key its entries; Skep's inherited ones (npm
        // sets npm_config_userconfig for every script it runs) are the same for all workloads.
        const digest = registryDigest(spec.env);
        const version = await store.resolve(
          registry,
          run,
          writeLog,
          direct ? registryTagLookup(registryUrl) : undefined,
          digest,
        );
        // Recorded before anything is installed: a prune meanwhile keeps the entry.
        recordPackageRef(paths.cacheDir, spec.name, {
          store: 'npm',
          key: storeKey(registry.name, version, digest),
        });
        entry = await store.ensure(registry.name, version, run, writeLog, digest);
        // As npx does, the package's own bins come first on its PATH.
        const path = [join(entry.dir, 'node_modules', '.bin'), env['PATH'] ?? ''].join(delimiter);
        launch = { ...launch, ...binCommand(entry, tools.node, spec.args), env: { ...env, PATH: path } };
        log.write(
          `[skep] running ${entry.name}@${entry.version}'s bin ${entry.bin} directly from the package store\n`,
        );
      } catch (err) {
        log.close();
        throw err;
      }
    }
    const uvSpec = spec.image.startsWith('uvx://') ? parseUvSpec(spec.image.slice(6)) : undefined;
    let uvEntry: UvStoreEntry | undefined;
    if (uvSpec !== undefined && paths !== undefined) {
      try {
        uvEntry = await uvStoreEntry(uvSpec, resolveProgram(command, env, spec.cwd), {
          cacheDir: paths.cacheDir,
          workload: spec.name,
          // The server's environment: the uv settings of Skep's own (allow-listed) and the workload's.
          workloadEnv: env,
          sandboxed: choice.sandboxed,
          log: storeLog(log, spec.onProgress),
        });
      } catch (err) {
        log.close();
        throw err;
      }
      if (uvEntry !== undefined) {
        launch = { ...launch, command: uvEntry.file, args: [...spec.args] };
        log.write(
          `[skep] running ${uvEntry.name}==${uvEntry.version}'s entry point ${uvEntry.bin} directly from the package store\n`,
        );
      }
    }
    const storeDir = entry?.dir ?? uvEntry?.dir;
    let sandbox: PreparedSandbox | undefined;
    if (choice.sandboxed) {
      try {
        sandbox = await prepareSandbox({
          binary: choice.binary,
          paths: paths as SandboxPaths,
          spec,
          command: launch.command,
          args: launch.args,
          resolved: storeDir === undefined ? resolveProgram(command, env, spec.cwd) : launch.command,
          log: (line) => log.write(`${line}\n`),
          ...definedOnly({ packageDir: storeDir }),
        });
      } catch (err) {
        log.close();
        throw err;
      }
      launch = { command: sandbox.command, args: sandbox.args, env: sandbox.env, cwd: sandbox.cwd };
      log.write(`[skep] sandboxed with bubblewrap (network: ${sandboxNetwork(spec).kind})\n`);
    } else {
      log.write(`[skep] not sandboxed: ${choice.reason}\n`);
    }
    this.#options.logger?.info(
      {
        workload: spec.name,
        sandboxed: choice.sandboxed,
        ...(choice.sandboxed ? {} : { reason: choice.reason }),
      },
      choice.sandboxed ? 'server sandboxed with bubblewrap' : 'server not sandboxed',
    );
    // Descriptors this process inherited without close-on-exec would reach the server (and
    // through bwrap, the sandbox): closed here, in the same synchronous step as the spawn.
    closeInheritedFds();
    const child = spawn(launch.command, launch.args, {
      env: launch.env,
      ...definedOnly({ cwd: launch.cwd }),
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
    void exited.then(async () => {
      await sandbox?.close();
      log.close();
    });
    const pipeToLog = (stream: Readable | null) => stream?.on('data', (chunk: Buffer) => log.write(chunk));
    pipeToLog(child.stderr);
    if (http) pipeToLog(child.stdout);

    // Wait for 'spawn' (or the spawn error) so a missing executable fails here, clearly.
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', () => resolve());
      child.once('error', (err) => {
        const code = (err as NodeJS.ErrnoException).code;
        // A program that is missing, or that this user cannot execute, stays so on a retry;
        // anything else (EMFILE, EAGAIN, ...) may pass.
        reject(
          code === 'ENOENT'
            ? new SkepError('executable_not_found', missingExecutable(command), { cause: err })
            : new SkepError(
                code !== undefined && UNEXECUTABLE.has(code) ? 'executable_not_found' : 'unavailable',
                `cannot start '${command}': ${code ?? err.message}`,
                { cause: err },
              ),
        );
      });
    });

    const graceMs = this.#options.stopGraceMs ?? 5000;
    let stopping: Promise<void> | undefined;
    const stop = (): Promise<void> => {
      stopping ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        // bwrap does not pass signals on: the server inside gets SIGTERM itself; SIGKILL to
        // bwrap then ends the whole sandbox (--die-with-parent).
        const inner = sandbox === undefined || child.pid === undefined ? undefined : sandboxedPid(child.pid);
        if (inner === undefined) child.kill('SIGTERM');
        else {
          try {
            process.kill(inner, 'SIGTERM');
          } catch {
            child.kill('SIGTERM');
          }
        }
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      })();
      return stopping;
    };

    let url: string | undefined;
    if (http) {
      try {
        await sandbox?.attach();
        await waitForPort(
          spec.targetPort as number,
          child,
          this.#options.readyTimeoutMs ?? 60_000,
          sandbox?.bridged === true,
        );
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
      ...definedOnly({ url }),
    };
    return handle;
  }
}
