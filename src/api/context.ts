/**
 * The composition root of `skep serve`: builds every domain service once, from the config,
 * and hands them to the HTTP routes. Route modules receive this object and nothing else.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { ClientsService } from '../clients/index.js';
import type { SkepConfig } from '../config/index.js';
import { GroupService } from '../groups/index.js';
import { RegistryService } from '../registry/index.js';
import type { Runtime, RuntimeHealth } from '../runtime/index.js';
import { SecretsService } from '../secrets/index.js';
import { type Logger, SKEP_VERSION, silentLogger } from '../shared/index.js';
import { SkillsService } from '../skills/index.js';
import { openStore, type Store } from '../store/index.js';
import { type ResolveRegistryServer, WorkloadManager } from '../workloads/index.js';

export interface ApiContext {
  readonly config: SkepConfig;
  readonly store: Store;
  readonly logger: Logger;
  readonly version: string;
  /** 16 random bytes, hex: identifies this `skep serve` process (health header, discovery file). */
  readonly nonce: string;
  readonly groups: GroupService;
  readonly secrets: SecretsService;
  readonly skills: SkillsService;
  /** Workload lifecycle; `workloads.onChange(listener)` is the hook for client-config sync. */
  readonly workloads: WorkloadManager;
  /** Client registration; keeps registered clients' MCP configs in step with the workloads. */
  readonly clients: ClientsService;
  /** The server and skill registry (`default`): built-in catalog, file, URL or v0.1 API source. */
  readonly registry: RegistryService;
  /** Reports whether the workload runtime is usable (drives `/health`). */
  runtimeHealth(): Promise<RuntimeHealth & { runtime: string }>;
  /** Releases everything the context opened; idempotent. */
  close(): Promise<void>;
}

export interface ContextOptions {
  logger?: Logger;
  runtime?: Runtime;
  /** Environment for secrets (SKEP_SECRETS_PASSWORD, SKEP_SECRET_*) and client config locations (HOME, XDG_CONFIG_HOME, APPDATA); defaults to process.env. */
  env?: NodeJS.ProcessEnv;
  /** Registry seam for `skep run <server-name>` and create with `registry` + `server`. */
  resolveRegistryServer?: ResolveRegistryServer;
}

export function createContext(config: SkepConfig, options: ContextOptions = {}): ApiContext {
  const store = openStore(config.paths.databaseFile);
  const groups = new GroupService(store);
  const secrets = new SecretsService({ store, paths: config.paths, env: options.env ?? process.env });
  const skills = new SkillsService({
    store,
    groups,
    storeDir: join(config.paths.dataDir, 'skills', 'oci'),
    ...(options.env === undefined ? {} : { env: options.env }),
  });
  const workloads = new WorkloadManager({
    store,
    config,
    groups,
    secretLookup: secrets.lookup(),
    logger: options.logger ?? silentLogger,
    ...(options.resolveRegistryServer === undefined ? {} : { resolveRegistryServer: options.resolveRegistryServer }),
  });
  groups.attachMembers(workloads);
  // Client configs follow the workloads: every start/stop/removal/port or group change re-syncs.
  const clients = new ClientsService({
    store,
    groups,
    logger: options.logger ?? silentLogger,
    env: options.env ?? process.env,
    listWorkloads: () => workloads.list({ all: true }),
  });
  workloads.onChange(() => {
    void clients.syncClientConfigs().catch(() => undefined);
  });
  const registry = new RegistryService({
    store,
    cacheDir: config.paths.cacheDir,
    logger: options.logger ?? silentLogger,
  });
  const runtime = options.runtime;
  let closed = false;
  return {
    config,
    store,
    logger: options.logger ?? silentLogger,
    version: SKEP_VERSION,
    nonce: randomBytes(16).toString('hex'),
    groups,
    secrets,
    skills,
    workloads,
    clients,
    registry,
    async runtimeHealth() {
      if (runtime === undefined) return { ok: true, runtime: 'process' };
      return { ...(await runtime.health()), runtime: runtime.name };
    },
    async close() {
      if (closed) return;
      closed = true;
      await workloads.close();
      await clients.close();
      await registry.close();
      secrets.close();
      store.close();
    },
  };
}
