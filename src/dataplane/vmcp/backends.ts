/**
 * Which backends the virtual MCP server serves, and whether each is up (as ToolHive's vMCP checks).
 * Backends are the config's static `backends[]` when it lists them, else the other workloads of
 * the group: `discover` is called every `pollMs` (for workloads, a read of the store, the way
 * runners watch their own record), so a workload that starts, stops or moves to another port
 * is seen within that time, and a probe of its proxy's `/health` (every
 * `healthCheckInterval`, with `healthCheckTimeout`) plus the outcome of real calls decide
 * whether it is healthy: `unhealthyThreshold` consecutive failures take it out of the lists,
 * one success brings it back. A workload whose status is not `running` is out at once, so
 * its calls fail fast instead of waiting for a timeout.
 */
import { EventEmitter } from 'node:events';
import type { Logger } from '../../shared/index.js';
import { poolFor } from './backend-client.js';
import type { ResolvedVmcpConfig } from './config.js';

export interface BackendInfo {
  readonly name: string;
  /** The workload's MCP endpoint (`http://host:port/mcp`). */
  readonly url: string;
  /** The workload's run configuration, for discovered outgoing auth (none for static backends). */
  readonly runConfig: unknown;
  /**
   * How health is probed: `health` (default) asks a Skep proxy's `/health`; `reachable` (a remote
   * server reached directly, which has no such endpoint) counts any HTTP answer at `url`.
   */
  readonly probe?: 'health' | 'reachable';
}

export type BackendHealth = 'unknown' | 'healthy' | 'unhealthy';

interface State {
  info: BackendInfo;
  health: BackendHealth;
  failures: number;
  /** The probe in flight, so that `start` can wait for the first one. */
  probing: Promise<void> | undefined;
}

export interface BackendSetOptions {
  /** The running workloads of the group (the caller leaves out the virtual workload itself). */
  discover: () => BackendInfo[];
  config: ResolvedVmcpConfig;
  logger: Logger;
  /** How often the store is read, ms (default 500). */
  pollMs?: number;
}

/** Emits `change` when the set of healthy backends (or one's URL) changes. */
export class BackendSet extends EventEmitter {
  readonly #states = new Map<string, State>();
  readonly #options: BackendSetOptions;
  readonly #timers: NodeJS.Timeout[] = [];
  #up: BackendInfo[] = [];
  #closed = false;

  constructor(options: BackendSetOptions) {
    super();
    this.#options = options;
  }

  /** Reads the store once, probes what it found and starts the watch. */
  async start(): Promise<void> {
    this.#refresh();
    await Promise.all([...this.#states.values()].map((s) => this.#probe(s)));
    const poll = setInterval(() => this.#refresh(), this.#options.pollMs ?? 500);
    poll.unref();
    this.#timers.push(poll);
    const interval = this.#options.config.healthCheckIntervalMs;
    if (interval > 0) {
      const probe = setInterval(() => {
        for (const s of this.#states.values()) void this.#probe(s);
      }, interval);
      probe.unref();
      this.#timers.push(probe);
    }
  }

  close(): void {
    this.#closed = true;
    for (const t of this.#timers) clearInterval(t);
  }

  /** Healthy backends, sorted by name (the same array until the set changes). */
  get up(): readonly BackendInfo[] {
    return this.#up;
  }

  /** Every backend the store lists as running, with its health (for the status). */
  states(): Array<{ name: string; health: BackendHealth }> {
    return [...this.#states.values()].map((s) => ({ name: s.info.name, health: s.health }));
  }

  isUp(name: string): boolean {
    return this.#states.get(name)?.health === 'healthy';
  }

  /** A call could not reach the backend: counts like a failed probe. */
  reportUnreachable(name: string): void {
    const s = this.#states.get(name);
    if (s !== undefined) this.#failed(s, 'a call could not reach it');
  }

  #refresh(): void {
    if (this.#closed) return;
    let found: BackendInfo[];
    try {
      found = this.#options.discover();
    } catch (err) {
      this.#options.logger.warn({ err }, 'cannot read the group’s workloads; keeping the last known set');
      return;
    }
    const seen = new Set<string>();
    let changed = false;
    for (const info of found) {
      seen.add(info.name);
      const s = this.#states.get(info.name);
      if (s === undefined || s.info.url !== info.url) {
        const state: State = { info, health: 'unknown', failures: 0, probing: undefined };
        this.#states.set(info.name, state);
        if (s?.health === 'healthy') changed = true;
        void this.#probe(state);
      } else {
        s.info = info;
      }
    }
    for (const [name, s] of this.#states) {
      if (seen.has(name)) continue;
      this.#states.delete(name);
      if (s.health === 'healthy') changed = true;
      this.#options.logger.info({ backend: name }, 'backend left the group or stopped');
    }
    if (changed) this.#recompute();
  }

  #probe(s: State): Promise<void> {
    if (this.#closed) return Promise.resolve();
    s.probing ??= this.#probeOnce(s).finally(() => {
      s.probing = undefined;
    });
    return s.probing;
  }

  async #probeOnce(s: State): Promise<void> {
    const url = new URL(s.info.url);
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), this.#options.config.healthCheckTimeoutMs);
    try {
      const reachable = s.info.probe === 'reachable';
      const res = await poolFor(url.origin).request({
        method: 'GET',
        path: reachable ? url.pathname + url.search : '/health',
        signal: abort.signal,
      });
      await res.body.dump();
      if (res.statusCode === 200 || (reachable && res.statusCode < 500)) this.#succeeded(s);
      else this.#failed(s, `health answered HTTP ${res.statusCode}`);
    } catch (err) {
      this.#failed(s, (err as Error).message);
    } finally {
      clearTimeout(timer);
    }
  }

  #succeeded(s: State): void {
    s.failures = 0;
    if (this.#states.get(s.info.name) !== s || s.health === 'healthy') return;
    s.health = 'healthy';
    this.#options.logger.info({ backend: s.info.name }, 'backend healthy');
    this.#recompute();
  }

  #failed(s: State, why: string): void {
    s.failures++;
    if (this.#states.get(s.info.name) !== s) return;
    // A backend that never passed a check is out until it does.
    if (s.health === 'healthy' && s.failures < this.#options.config.unhealthyThreshold) return;
    if (s.health === 'unhealthy') return;
    const was = s.health;
    s.health = 'unhealthy';
    this.#options.logger.warn({ backend: s.info.name, why }, 'backend unhealthy');
    if (was === 'healthy') this.#recompute();
  }

  #recompute(): void {
    const up: BackendInfo[] = [];
    for (const s of this.#states.values()) if (s.health === 'healthy') up.push(s.info);
    up.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    this.#up = up;
    this.emit('change');
  }
}
