/**
 * Finding a container engine and choosing the runtime. Candidates, in order: `DOCKER_HOST`,
 * the current docker context (`~/.docker/config.json` `currentContext` →
 * `~/.docker/contexts/meta/<sha256(name)>/meta.json`), `/var/run/docker.sock`, Docker Desktop
 * on Linux, Podman rootful and rootless, Colima, Rancher Desktop, OrbStack. The first that
 * answers `/_ping` wins (toolhive#1333 and #5120 were about sockets that were never tried).
 * Config `runtime.type` (`auto|process|docker`) and `runtime.docker_host` force the choice.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { SkepConfig } from '../../config/index.js';
import { definedOnly, type Logger, SkepError, silentLogger } from '../../shared/index.js';
import { pingEngine } from './docker/client.js';
import type { DockerRuntime } from './docker/docker-runtime.js';
import { ProcessRuntime } from './process.js';
import type { Runtime, RuntimeHealth } from './types.js';

export interface SocketCandidate {
  /** Where the address came from, for logs and `/health`. */
  source: string;
  host: string;
}

/** The engine addresses worth trying, most specific first; duplicates removed. */
export function engineCandidates(
  env: NodeJS.ProcessEnv = process.env,
  home = env['HOME'] ?? homedir(),
): SocketCandidate[] {
  const out: SocketCandidate[] = [];
  const add = (source: string, host: string | undefined) => {
    if (host === undefined || host === '') return;
    if (!out.some((c) => c.host === host)) out.push({ source, host });
  };
  add('DOCKER_HOST', env['DOCKER_HOST']);
  const context = dockerContextHost(env, home);
  if (context !== undefined) add(`docker context '${context.name}'`, context.host);
  add('docker', 'unix:///var/run/docker.sock');
  add('docker desktop', `unix://${join(home, '.docker', 'desktop', 'docker.sock')}`);
  add('podman (rootful)', 'unix:///run/podman/podman.sock');
  const runtimeDir =
    env['XDG_RUNTIME_DIR'] ??
    (typeof process.getuid === 'function' ? `/run/user/${process.getuid()}` : undefined);
  if (runtimeDir !== undefined)
    add('podman (rootless)', `unix://${join(runtimeDir, 'podman', 'podman.sock')}`);
  add('colima', `unix://${join(home, '.colima', 'default', 'docker.sock')}`);
  add('rancher desktop', `unix://${join(home, '.rd', 'docker.sock')}`);
  add('orbstack', `unix://${join(home, '.orbstack', 'run', 'docker.sock')}`);
  return out;
}

/** The current docker context's endpoint, unless it is the implicit `default` context. */
function dockerContextHost(env: NodeJS.ProcessEnv, home: string): { name: string; host: string } | undefined {
  const configDir = env['DOCKER_CONFIG'] ?? join(home, '.docker');
  let name = env['DOCKER_CONTEXT'];
  if (name === undefined) {
    try {
      const config = JSON.parse(readFileSync(join(configDir, 'config.json'), 'utf8')) as {
        currentContext?: unknown;
      };
      if (typeof config.currentContext === 'string') name = config.currentContext;
    } catch {
      return undefined;
    }
  }
  if (name === undefined || name === '' || name === 'default') return undefined;
  // Docker stores a context's metadata under the hex SHA-256 of its name.
  const digest = createHash('sha256').update(name).digest('hex');
  try {
    const meta = JSON.parse(
      readFileSync(join(configDir, 'contexts', 'meta', digest, 'meta.json'), 'utf8'),
    ) as {
      Endpoints?: { docker?: { Host?: unknown } };
    };
    const host = meta.Endpoints?.docker?.Host;
    return typeof host === 'string' ? { name, host } : undefined;
  } catch {
    return undefined;
  }
}

/** The first candidate whose engine answers `/_ping`; unix sockets that do not exist are skipped quickly. */
export async function findEngine(
  candidates: SocketCandidate[],
  timeoutMs = 1500,
): Promise<SocketCandidate | undefined> {
  for (const candidate of candidates) {
    if (candidate.host.startsWith('unix://') && !existsSync(candidate.host.slice('unix://'.length))) continue;
    if (await pingEngine(candidate.host, timeoutMs)) return candidate;
  }
  return undefined;
}

export interface RuntimeSelectorOptions {
  config: SkepConfig;
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
  /**
   * Level of the "no container engine answered" line (default `info`). A workload's runner
   * says it at `debug`: `skep serve` says it once for all of them.
   */
  engineMissLevel?: 'info' | 'debug';
}

/**
 * Chooses, once and lazily, between the container runtime and the process runtime.
 * `auto`: the container runtime when an engine answers, else processes. `docker`: the
 * container runtime only (health reports it unusable when the engine does not answer).
 * `process`: never containers. A `runtime.docker_host` is the only candidate when set.
 */
/** How long a "no container engine" answer is trusted before probing again, ms. */
const ABSENT_RECHECK_MS = 10_000;

export class RuntimeSelector {
  readonly #config: SkepConfig;
  readonly #env: NodeJS.ProcessEnv;
  readonly #logger: Logger;
  readonly #missLevel: 'info' | 'debug';
  readonly #process: ProcessRuntime;
  #container: Promise<DockerRuntime | undefined> | undefined;
  /** When detection last found no engine (ms since epoch; 0 = never). */
  #lastMiss = 0;

  constructor(options: RuntimeSelectorOptions) {
    this.#config = options.config;
    this.#env = options.env ?? process.env;
    this.#logger = options.logger ?? silentLogger;
    this.#missLevel = options.engineMissLevel ?? 'info';
    this.#process = new ProcessRuntime({
      logMaxBytes: options.config.workloads.log_max_bytes,
      logFiles: options.config.workloads.log_files,
      sandbox: { setting: options.config.runtime.sandbox ?? 'auto', paths: options.config.paths },
      logger: this.#logger,
    });
  }

  get mode(): 'auto' | 'process' | 'docker' {
    return this.#config.runtime.type;
  }

  /** The container runtime, when configured and answering; detection runs once. */
  container(): Promise<DockerRuntime | undefined> {
    if (this.mode === 'process') return Promise.resolve(undefined);
    // After "no engine", ask again only after a pause (every /health would probe otherwise).
    if (this.#container === undefined && Date.now() - this.#lastMiss < ABSENT_RECHECK_MS) {
      return Promise.resolve(undefined);
    }
    this.#container ??= this.#detect();
    return this.#container;
  }

  async #detect(): Promise<DockerRuntime | undefined> {
    const forced = this.#config.runtime.docker_host;
    const candidates =
      forced === undefined ? engineCandidates(this.#env) : [{ source: 'runtime.docker_host', host: forced }];
    const found = await findEngine(candidates);
    if (found === undefined) {
      if (this.#lastMiss === 0) {
        this.#logger[this.#missLevel](
          { tried: candidates.map((c) => c.host) },
          'no container engine answered',
        );
      }
      // Not cached as absent forever: an engine started later is found on a later call.
      this.#lastMiss = Date.now();
      this.#container = undefined;
      return undefined;
    }
    this.#logger.info({ engine: found.host, source: found.source }, 'container engine found');
    const runtime = this.#config.runtime;
    // Loaded only once an engine answers: a process-only runner never parses it.
    const { DockerRuntime } = await import('./docker/docker-runtime.js');
    return new DockerRuntime({
      host: found.host,
      source: found.source,
      instance: instanceId(this.#config.paths.stateDir),
      logMaxBytes: this.#config.workloads.log_max_bytes,
      logFiles: this.#config.workloads.log_files,
      allowPrivileged: runtime.allow_privileged,
      ...definedOnly({
        nodeImage: runtime.node_image,
        uvxImage: runtime.uvx_image,
        egressImage: runtime.egress_image,
      }),
      logger: this.#logger,
    });
  }

  /** The runtime in use for `/health`: the container runtime when one is (or must be) used. */
  async health(): Promise<RuntimeHealth & { runtime: string }> {
    if (this.mode === 'process') return { ok: true, runtime: 'process', detail: 'local processes' };
    const container = await this.container();
    if (container !== undefined) return { ...(await container.health()), runtime: 'docker' };
    if (this.mode === 'docker') {
      const where = this.#config.runtime.docker_host ?? 'any known socket';
      return { ok: false, runtime: 'docker', reason: `no container engine answers at ${where}` };
    }
    return { ok: true, runtime: 'process', detail: 'no container engine found; local processes' };
  }

  /**
   * The runtime that runs `image`: container images always need the container runtime;
   * `npx://`/`uvx://` run in a container when a base image is configured and an engine
   * answers, else as processes (unless `runtime.type` is `docker`); `cmd://` is a process.
   */
  async forImage(image: string): Promise<Runtime> {
    const scheme = /^([a-z]+):\/\//.exec(image)?.[1];
    if (scheme === 'cmd' || this.mode === 'process') {
      if (scheme === undefined) throw containerNeeded(image, 'runtime.type is process');
      return this.#process;
    }
    const container = await this.container();
    if (scheme === undefined) {
      if (container === undefined) throw containerNeeded(image, 'no container engine answers');
      return container;
    }
    const base =
      scheme === 'npx'
        ? this.#config.runtime.node_image
        : scheme === 'uvx'
          ? this.#config.runtime.uvx_image
          : undefined;
    if (container !== undefined && base !== undefined) return container;
    if (this.mode === 'docker' && container === undefined) {
      throw new SkepError('runtime_unavailable', `runtime.type is docker but no container engine answers`);
    }
    return this.#process;
  }
}

function containerNeeded(image: string, why: string): SkepError {
  return new SkepError(
    'runtime_unavailable',
    `'${image}' is a container image and needs a container engine (Docker or Podman), but ${why}; start one, set runtime.docker_host, or use npx://, uvx:// or cmd://`,
  );
}

/** A short stable id of this Skep home, so two homes sharing one engine never touch each other's containers. */
export function instanceId(stateDir: string): string {
  return createHash('sha256').update(stateDir).digest('hex').slice(0, 8);
}
