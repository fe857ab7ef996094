/**
 * Prepares one sandboxed start of a local server (docs/sandbox.md): the workload's home, the layout
 * (`bwrap-args.ts`), the network (none, the host's, or an allow-list through the runner's filtering
 * proxy), the relays and, for package servers, the package fetch.
 *
 * Network, from the permission profile (as the container runtime reads it):
 * `network.mode: none`, or isolation with an empty outbound list → a network namespace with
 * nothing in it; an outbound allow-list → the same, plus `HTTP(S)_PROXY` at a relay to the
 * runner's filtering proxy (`egress-proxy.ts`); `insecure_allow_all` (the default `network`
 * profile) or `isolate_network: false` → the host's network. An HTTP server in its own
 * namespace is reached through an inbound relay on its target port.
 *
 * Package servers (`npx://`, `uvx://`) whose sandbox restricts the network: the package is
 * fetched first, in the same sandbox (same home, so the same cache), by a separate run whose
 * network reaches only the package registry (npm: `npm_config_registry` or
 * registry.npmjs.org; uv: pypi.org and files.pythonhosted.org, or the `UV_DEFAULT_INDEX` /
 * `UV_INDEX_URL` host) through the filtering proxy; install scripts run there too, sandboxed.
 * The server then runs offline (`npm_config_offline`, `UV_OFFLINE`) with its own profile, so
 * a profile without network never reaches the registry. With the host's network, npx and uvx
 * fetch as usual, inside the sandbox.
 *
 * Registry packages of `npx://` use the shared package store instead (`npm-store.ts`): npm
 * (`npm view`, `npm install`) runs in a sandbox of its own whose network reaches only the
 * registry and whose only writable place is a fresh folder beside the store's entries (its
 * home and npm cache inside it; the install's staging folder), so install scripts run
 * sandboxed and cannot touch another package's entry. The server then runs its package's bin
 * directly, with the store entry bound read-only at its own path and its own home as always.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, isAbsolute, join } from 'node:path';
import { definedOnly, SkepError } from '../../../shared/index.js';
import { NPM_TIMEOUT_MS, type NpmRunner, npmRunEnv } from '../npm-store.js';
import { bindsFor, deniesEverything, outboundPolicy, resolvePermissionProfile } from '../docker/profile.js';
import { serverEnvironment } from '../server-env.js';
import type { ServerSpec } from '../types.js';
import {
  argumentMounts,
  type BwrapLayout,
  bwrapArgs,
  defaultHiddenDirs,
  hiddenAgain,
  type Mount,
  profileMounts,
  programMounts,
  resolverMounts,
} from './bwrap-args.js';
import { type EgressProxy, type EgressRules, startEgressProxy } from './egress-proxy.js';
import {
  EGRESS_SOCKET,
  INBOUND_SOCKET,
  type InboundBridge,
  type RelayPlan,
  type RelayProgram,
  relayLaunch,
  relayProgram,
  SANDBOX_PROXY_PORT,
  SANDBOX_SOCKET_DIR,
  startInboundBridge,
} from './forwarder.js';
import {
  createHiddenDirs,
  ensureSandboxRunDir,
  hiddenPathsOf,
  isWithin,
  resolvedPath,
  type SandboxPaths,
} from './hidden-paths.js';
import { closeInheritedFds } from './inherited-fds.js';

export type { SandboxPaths } from './hidden-paths.js';

export type SandboxNetwork = { kind: 'none' } | { kind: 'host' } | { kind: 'filtered'; rules: EgressRules };

/** The sandbox network a profile asks for (see the module comment). */
export function sandboxNetwork(
  spec: Pick<ServerSpec, 'permissionProfile' | 'permissionProfileName' | 'isolateNetwork'>,
): SandboxNetwork {
  const profile = resolvePermissionProfile(spec.permissionProfile, spec.permissionProfileName);
  if (profile.network?.mode === 'none') return { kind: 'none' };
  const policy = outboundPolicy(profile);
  if (spec.isolateNetwork === false || policy.allowAll) return { kind: 'host' };
  if (deniesEverything(policy)) return { kind: 'none' };
  return { kind: 'filtered', rules: { hosts: policy.hosts, ports: policy.ports } };
}

/** Where the server's caches and settings would point on the host: inside, they default into the sandbox home. */
const LOCATION_VARS = [
  'XDG_CACHE_HOME',
  'XDG_CONFIG_HOME',
  'XDG_DATA_HOME',
  'npm_config_cache',
  'npm_config_prefix',
  'npm_config_userconfig',
  'npm_config_globalconfig',
  'NPM_CONFIG_CACHE',
  'NPM_CONFIG_PREFIX',
  'NPM_CONFIG_USERCONFIG',
  'UV_CACHE_DIR',
  'UV_TOOL_DIR',
  'UV_TOOL_BIN_DIR',
  'UV_PYTHON_INSTALL_DIR',
  'TEMP',
  'TMP',
];
const PROXY_VARS = ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'NO_PROXY'].flatMap((v) => [
  v,
  v.toLowerCase(),
]);

function sandboxEnv(
  configured: Record<string, string>,
  home: string,
  network: SandboxNetwork,
): Record<string, string> {
  const env = serverEnvironment(process.env, {});
  for (const name of LOCATION_VARS) delete env[name];
  // The host's proxy is not reachable from a namespace of its own.
  if (network.kind !== 'host') for (const name of PROXY_VARS) delete env[name];
  Object.assign(env, configured);
  env['HOME'] = home;
  env['TMPDIR'] = '/tmp';
  if (network.kind === 'filtered') {
    const proxy = `http://127.0.0.1:${SANDBOX_PROXY_PORT}`;
    for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy']) env[name] = proxy;
    env['NO_PROXY'] = env['no_proxy'] = 'localhost,127.0.0.1,::1';
  }
  return env;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** The registry a package fetch may reach. */
function registryRules(scheme: string, env: Record<string, string>): EgressRules {
  const hostOf = (url: string | undefined) => {
    try {
      return url === undefined || url === '' ? undefined : new URL(url);
    } catch {
      return undefined;
    }
  };
  const urls =
    scheme === 'npx'
      ? [hostOf(env['npm_config_registry'] ?? env['NPM_CONFIG_REGISTRY'] ?? 'https://registry.npmjs.org/')]
      : [
          hostOf(env['UV_DEFAULT_INDEX'] ?? env['UV_INDEX_URL'] ?? 'https://pypi.org/simple'),
          hostOf('https://files.pythonhosted.org/'),
        ];
  const hosts: string[] = [];
  const ports = new Set<number>();
  for (const url of urls) {
    if (url === undefined) continue;
    hosts.push(url.hostname);
    ports.add(url.port !== '' ? Number(url.port) : url.protocol === 'http:' ? 80 : 443);
  }
  return { hosts, ports: [...ports] };
}

export interface SandboxStartOptions {
  /** The bwrap binary (probed). */
  binary: string;
  paths: SandboxPaths;
  spec: ServerSpec;
  /** The command and arguments outside any sandbox (`processCommand`). */
  command: string;
  args: string[];
  /** Absolute path of `command` on the server's PATH. */
  resolved: string;
  /** Writes a line to the server's log. */
  log: (line: string) => void;
  /** The package store entry the command runs from (`npm-store.ts`): bound read-only, nothing fetched. */
  packageDir?: string;
}

export interface PreparedSandbox {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** An HTTP server listening in its own network namespace: reached through the inbound relay. */
  bridged: boolean;
  /** Starts the host side of the inbound relay (HTTP servers in their own namespace). */
  attach(): Promise<void>;
  /** Stops the relays and the filtering proxy, removes the socket folder; idempotent. */
  close(): Promise<void>;
}

/** A workload's home folder in the sandbox (kept between starts: caches, the server's own files). */
function sandboxHome(paths: SandboxPaths, name: string): string {
  return join(paths.dataDir, 'sandbox', name, 'home');
}

/** Removes a deleted workload's sandbox folder (its home); a missing one is fine. */
export function removeSandboxHome(paths: SandboxPaths, name: string): void {
  // A sandboxed process dies with its runner, but asynchronously (bwrap's --die-with-parent):
  // one still writing (an npm cache) while this runs makes a directory non-empty again.
  rmSync(join(paths.dataDir, 'sandbox', name), {
    recursive: true,
    force: true,
    maxRetries: 5,
    retryDelay: 100,
  });
}

/** Sets everything up for one sandboxed start; the caller spawns `command args` with `env`. */
export async function prepareSandbox(options: SandboxStartOptions): Promise<PreparedSandbox> {
  const { spec, paths } = options;
  const profile = resolvePermissionProfile(spec.permissionProfile, spec.permissionProfileName);
  const network = sandboxNetwork(spec);
  const realHome = process.env['HOME'] ?? homedir();
  // A service account's HOME may not exist (`/nonexistent`): the sandbox's home then appears
  // in its private /tmp, where a mount point can be made.
  const userHome = isDirectory(realHome) ? realHome : '/tmp/home';
  // Every hidden folder exists before the sandbox starts, so each is hidden now and stays
  // hidden (one made later, in a place the sandbox shows, would be visible).
  const runDir = ensureSandboxRunDir();
  const hidden = createHiddenDirs(hiddenPathsOf(paths));
  const hide = defaultHiddenDirs(userHome, hidden.dirs);
  const home = sandboxHome(paths, spec.name);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const http = spec.transport !== 'stdio';
  const bridged = http && network.kind !== 'host';
  const needsRelay = bridged || network.kind === 'filtered';
  const scheme = /^([a-z]+):\/\//.exec(spec.image)?.[1] ?? '';
  const packageSpec = spec.image.slice(scheme.length + 3);

  const configured = { ...spec.env };
  if (http) configured['PORT'] = configured['MCP_PORT'] = String(spec.targetPort);
  const env = sandboxEnv(configured, userHome, network);
  const fetchFirst =
    (scheme === 'npx' || scheme === 'uvx') && network.kind !== 'host' && options.packageDir === undefined;
  if (fetchFirst) {
    if (scheme === 'npx') env['npm_config_offline'] = 'true';
    else env['UV_OFFLINE'] = '1';
  }

  // The relay in the sandbox (`forwarder.ts`): perl when there is one, else Node.
  const relay = relayProgram(env, hide);
  if (needsRelay || fetchFirst) {
    options.log(
      relay.kind === 'perl'
        ? `[skep] sandbox: network relay in perl (${relay.path})`
        : '[skep] sandbox: network relay in Node (no perl on PATH outside the hidden folders: a slower start)',
    );
  }
  // The program is what the user asked to run: it stays visible, and so does a `file:` package.
  const programs = [options.resolved, process.execPath];
  const local = /^file:(.+)$/.exec(packageSpec)?.[1];
  if (scheme === 'npx' && local !== undefined && isAbsolute(local)) programs.push(local);
  const { readOnly, readWrite } = profileMounts(bindsFor(profile), hidden, hide);
  const pathDirs = (env['PATH'] ?? '').split(delimiter);
  const never = [userHome, '/', '/home', '/root', '/tmp', '/var/tmp', ...hidden.dirs];
  // A program inside a hidden folder is not shown: that would show the folder's files.
  const outsideHidden = (mounts: Mount[]) =>
    mounts.filter((m) => {
      const inside = hidden.dirs.some((dir) => isWithin(resolvedPath(m.src), dir));
      if (inside) options.log(`[skep] sandbox: ${m.src} is not shown: it is inside Skep's own folders`);
      return !inside;
    });
  const scripts = scheme === 'cmd' ? outsideHidden(argumentMounts(options.args, hide, never)) : [];
  const programsShown = outsideHidden(programMounts(programs, pathDirs, hide));
  // As npx does, the package's own bins come first on the server's PATH (after the PATH
  // folders were checked: these are in the store entry, shown by its own bind).
  if (options.packageDir !== undefined)
    env['PATH'] = [join(options.packageDir, 'node_modules', '.bin'), ...pathDirs].join(delimiter);
  for (const m of scripts)
    options.log(`[skep] sandbox: ${m.src} is visible read-only (it holds the program)`);
  // A folder named as an argument is data: say why the server will not find it.
  const shown = [...readOnly, ...readWrite].map((m) => m.dest);
  for (const arg of options.args) {
    if (!isAbsolute(arg) || !isDirectory(arg) || !hide.some((dir) => isWithin(arg, dir))) continue;
    if (shown.some((dest) => isWithin(arg, dest))) continue;
    options.log(
      `[skep] sandbox: ${arg} (an argument) is not visible to the server; grant it with skep run --volume ${arg}, or list it in the permission profile's read or write`,
    );
  }
  const layout = (shareNetwork: boolean, socketDir?: string): BwrapLayout => {
    const shown = [...programsShown, ...scripts, ...(shareNetwork ? resolverMounts(hide) : [])];
    return {
      hide,
      home: { src: home, dest: userHome },
      programs: shown,
      readOnly,
      readWrite,
      ...hiddenAgain([...shown, ...readOnly, ...readWrite], hidden, hide),
      shareNetwork,
      ...definedOnly({ socketDir }),
      ...(options.packageDir === undefined
        ? {}
        : { store: [{ mount: { src: options.packageDir, dest: options.packageDir }, writable: false }] }),
    };
  };

  if (fetchFirst) await fetchPackage(options, scheme, packageSpec, layout, env, relay, runDir);

  let socketDir: string | undefined;
  let egress: EgressProxy | undefined;
  let bridge: InboundBridge | undefined;
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      await Promise.all([bridge?.close(), egress?.close()]);
      if (socketDir !== undefined) rmSync(socketDir, { recursive: true, force: true });
    })();
    return closing;
  };
  try {
    let command = options.resolved;
    let args = options.args;
    if (needsRelay) {
      socketDir = mkdtempSync(join(runDir, 'sbx-'));
      if (network.kind === 'filtered') {
        egress = await startEgressProxy(join(socketDir, EGRESS_SOCKET), network.rules, (line) =>
          options.log(`[egress] ${line}`),
        );
      }
      const plan: RelayPlan = {};
      if (network.kind === 'filtered')
        plan.egress = { port: SANDBOX_PROXY_PORT, socket: `${SANDBOX_SOCKET_DIR}/${EGRESS_SOCKET}` };
      if (bridged)
        plan.inbound = { socket: `${SANDBOX_SOCKET_DIR}/${INBOUND_SOCKET}`, port: spec.targetPort as number };
      const launch = relayLaunch(relay, plan, command, args);
      Object.assign(env, launch.env);
      command = launch.command;
      args = launch.args;
    }
    const inbound = socketDir === undefined ? undefined : join(socketDir, INBOUND_SOCKET);
    return {
      command: options.binary,
      args: bwrapArgs(layout(network.kind === 'host', socketDir), command, args),
      env,
      cwd: home,
      bridged,
      async attach() {
        if (bridged && inbound !== undefined)
          bridge = await startInboundBridge(spec.targetPort as number, inbound);
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

export interface NpmSandboxOptions {
  /** The bwrap binary (probed). */
  binary: string;
  paths: SandboxPaths;
  /** The workload (its `npm_config_*` variables reach npm: a registry, its credentials). */
  spec: Pick<ServerSpec, 'env'>;
  /** The npm to run (beside the npx that would have run). */
  npm: string;
  /** Writes a line to the server's log. */
  log: (line: string) => void;
}

/**
 * Runs npm in a sandbox whose network reaches only the npm registry (through the filtering
 * proxy) and where only the folder it is given is writable (its home and npm cache inside).
 */
export function sandboxNpmRunner(options: NpmSandboxOptions): NpmRunner {
  return async (npmArgs, writable) => {
    const realHome = process.env['HOME'] ?? homedir();
    const userHome = isDirectory(realHome) ? realHome : '/tmp/home';
    const runDir = ensureSandboxRunDir();
    const hidden = createHiddenDirs(hiddenPathsOf(options.paths));
    const hide = defaultHiddenDirs(userHome, hidden.dirs);
    const npmVars = Object.fromEntries(
      Object.entries(options.spec.env).filter(([k]) => /^npm_config_/i.test(k)),
    );
    const rules = registryRules('npx', npmVars);
    const env = npmRunEnv(sandboxEnv(npmVars, userHome, { kind: 'filtered', rules }), writable);
    const relay = relayProgram(env, hide);
    const pathDirs = (env['PATH'] ?? '').split(delimiter);
    const programs = programMounts([options.npm, process.execPath], pathDirs, hide).filter(
      (m) => !hidden.dirs.some((dir) => isWithin(resolvedPath(m.src), dir)),
    );
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const code = await runRegistryOnly({
      binary: options.binary,
      rules,
      relay,
      runDir,
      command: options.npm,
      args: npmArgs,
      env,
      layout: (socketDir) => ({
        hide,
        home: { src: join(writable, 'home'), dest: userHome },
        programs,
        readOnly: [],
        readWrite: [],
        ...hiddenAgain(programs, hidden, hide),
        shareNetwork: false,
        socketDir,
        store: [{ mount: { src: writable, dest: writable }, writable: true }],
      }),
      cwd: writable,
      timeoutMs: NPM_TIMEOUT_MS,
      log: options.log,
      stdout: (c) => out.push(c),
      stderr: (c) => {
        err.push(c);
        options.log(c.toString('utf8').trimEnd());
      },
    });
    return {
      code,
      stdout: Buffer.concat(out).toString('utf8'),
      stderr: Buffer.concat(err).toString('utf8'),
    };
  };
}

/** One run of a program in a sandbox whose only network is the package registry. */
interface RegistryOnlyRun {
  /** The bwrap binary (probed). */
  binary: string;
  /** The registry hosts the filtering proxy lets through. */
  rules: EgressRules;
  relay: RelayProgram;
  /** Where the run's socket folder is made. */
  runDir: string;
  command: string;
  args: readonly string[];
  /** The program's environment; the relay's variables are added to it. */
  env: Record<string, string>;
  /** The sandbox's layout, given the socket folder the egress proxy listens in. */
  layout: (socketDir: string) => BwrapLayout;
  cwd: string;
  /** The run is killed after this long, ms. */
  timeoutMs: number;
  /** Writes a line to the server's log (the egress proxy's refusals). */
  log: (line: string) => void;
  stdout: (chunk: Buffer) => void;
  stderr: (chunk: Buffer) => void;
}

/**
 * Runs `command` in a bwrap sandbox without the host's network: the relay inside forwards its
 * proxy port to a filtering proxy (on a unix socket in a fresh folder) that lets only the
 * registry through. Resolves with the exit code (null when it could not start or was killed
 * by the timeout), after its output has been read; the proxy and the folder are gone then.
 */
async function runRegistryOnly(run: RegistryOnlyRun): Promise<number | null> {
  const socketDir = mkdtempSync(join(run.runDir, 'sbx-'));
  let egress: EgressProxy | undefined;
  try {
    egress = await startEgressProxy(join(socketDir, EGRESS_SOCKET), run.rules, (line) =>
      run.log(`[egress] ${line}`),
    );
    const launch = relayLaunch(
      run.relay,
      { egress: { port: SANDBOX_PROXY_PORT, socket: `${SANDBOX_SOCKET_DIR}/${EGRESS_SOCKET}` } },
      run.command,
      [...run.args],
    );
    closeInheritedFds();
    const child = spawn(run.binary, bwrapArgs(run.layout(socketDir), launch.command, launch.args), {
      env: { ...run.env, ...launch.env },
      cwd: run.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', run.stdout);
    child.stderr.on('data', run.stderr);
    const timer = setTimeout(() => child.kill('SIGKILL'), run.timeoutMs);
    const code = await new Promise<number | null>((resolve) => {
      child.once('error', () => resolve(null));
      child.once('close', (c) => resolve(c));
    });
    clearTimeout(timer);
    return code;
  } finally {
    await egress?.close();
    rmSync(socketDir, { recursive: true, force: true });
  }
}

/** How long a package fetch may take, ms. */
const FETCH_TIMEOUT_MS = 10 * 60_000;

/** Fetches the package in the sandbox with the registry as the only destination. */
async function fetchPackage(
  options: SandboxStartOptions,
  scheme: string,
  packageSpec: string,
  layout: (shareNetwork: boolean, socketDir?: string) => BwrapLayout,
  serverEnv: Record<string, string>,
  relay: RelayProgram,
  runDir: string,
): Promise<void> {
  const rules = registryRules(scheme, serverEnv);
  // npx: install into the npx cache exactly as `npx -y <spec>` will look it up, running nothing
  // of the package but its install scripts; uvx: `uv tool install`, which uvx then uses.
  const [command, args] =
    scheme === 'npx'
      ? [options.resolved, ['-y', `--package=${packageSpec}`, '--', 'true']]
      : [join(options.resolved, '..', 'uv'), ['tool', 'install', packageSpec]];
  options.log(
    `[skep] sandbox: fetching ${scheme}://${packageSpec} (network: ${rules.hosts.join(', ')} only)`,
  );
  const env: Record<string, string> = {
    ...serverEnv,
    HTTP_PROXY: `http://127.0.0.1:${SANDBOX_PROXY_PORT}`,
    HTTPS_PROXY: `http://127.0.0.1:${SANDBOX_PROXY_PORT}`,
    http_proxy: `http://127.0.0.1:${SANDBOX_PROXY_PORT}`,
    https_proxy: `http://127.0.0.1:${SANDBOX_PROXY_PORT}`,
    // The update check would be one more registry request (and a notice in the log).
    npm_config_update_notifier: 'false',
  };
  delete env['npm_config_offline'];
  delete env['UV_OFFLINE'];
  const output: Buffer[] = [];
  const keep = (chunk: Buffer) => {
    output.push(chunk);
    options.log(chunk.toString('utf8').trimEnd());
  };
  const code = await runRegistryOnly({
    binary: options.binary,
    rules,
    relay,
    runDir,
    command,
    args,
    env,
    layout: (socketDir) => layout(false, socketDir),
    cwd: sandboxHome(options.paths, options.spec.name),
    timeoutMs: FETCH_TIMEOUT_MS,
    log: options.log,
    stdout: keep,
    stderr: keep,
  });
  if (code !== 0) {
    const tail = Buffer.concat(output).toString('utf8').trim().split('\n').slice(-3).join(' | ');
    throw new SkepError(
      'bad_gateway',
      `cannot fetch ${scheme}://${packageSpec} in the sandbox: ${tail || `exit ${code}`}`,
    );
  }
}

/**
 * The server process inside a bwrap started as `bwrapPid`: bwrap's child is the new pid
 * namespace's init, whose child runs the command. A graceful stop signals it (bwrap does not
 * pass signals on; killing bwrap kills the sandbox at once). Linux `/proc/<pid>/task/<pid>/children`.
 */
export function sandboxedPid(bwrapPid: number): number | undefined {
  const childrenOf = (pid: number) => {
    try {
      return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
        .trim()
        .split(/\s+/)
        .map(Number)
        .filter((n) => Number.isInteger(n) && n > 0);
    } catch {
      return [];
    }
  };
  const init = childrenOf(bwrapPid)[0];
  return init === undefined ? undefined : childrenOf(init)[0];
}
