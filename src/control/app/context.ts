/**
 * The composition root: builds every domain service once, from the config. `skep serve` hands
 * it to the HTTP routes (route modules receive this object and nothing else); a CLI command
 * builds it for the length of one command.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { ClientsService } from '../../clients/index.js';
import type { SkepConfig } from '../../config/index.js';
import { GroupService } from '../../groups/index.js';
import { RegistryService, type RegistryTokenStore } from '../../registry/index.js';
import { type Runtime, type RuntimeHealth, RuntimeSelector } from '../../dataplane/runtime/index.js';
import { SecretsService } from '../../secrets/index.js';
import {
  definedOnly,
  isSkepError,
  type Logger,
  SKEP_VERSION,
  SkepError,
  silentLogger,
} from '../../shared/index.js';
import { registrySkillCatalog, SkillsService } from '../../skills/index.js';
import { openStore, type Store } from '../../store/index.js';
import { type ResolveRegistryServer, WorkloadManager } from '../../workloads/index.js';

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
  /** `skep serve`: remove containers of this Skep home whose workload is gone from the store. */
  removeOrphanContainers?: boolean;
}

const SERVER_TRANSPORTS = new Set(['stdio', 'sse', 'streamable-http']);

/**
 * Adapts the registry to the workload engine's narrow seam: a registry entry becomes the
 * image (or remote URL), transport, args and default env of a new workload. The entry's
 * tool list is catalog metadata, not a filter, so it is not passed on. Secret env vars get
 * no value here; the user supplies them as secret references.
 */
export function registryResolver(registry: RegistryService): ResolveRegistryServer {
  const resolve: ResolveRegistryServer = async (name) => {
    let found: Awaited<ReturnType<RegistryService['findServer']>>;
    try {
      found = await registry.findServer(name);
    } catch (err) {
      if (isSkepError(err) && err.code === 'server_not_found') return undefined;
      throw err;
    }
    const entry = found.is_remote ? found.remote_server : found.server;
    const env: Record<string, string> = {};
    for (const v of entry.env_vars ?? []) {
      if (v.secret !== true && v.default !== undefined && v.default !== '') env[v.name] = v.default;
    }
    const transport = SERVER_TRANSPORTS.has(entry.transport)
      ? (entry.transport as 'stdio' | 'sse' | 'streamable-http')
      : undefined;
    return {
      image: found.is_remote ? '' : found.server.image,
      ...(found.is_remote ? { url: found.remote_server.url } : {}),
      ...definedOnly({ transport }),
      ...(found.is_remote || found.server.args === undefined ? {} : { args: found.server.args }),
      ...(Object.keys(env).length === 0 ? {} : { env }),
      ...(found.is_remote || found.server.target_port === undefined
        ? {}
        : { target_port: found.server.target_port }),
      ...(found.is_remote || found.server.permissions === undefined
        ? {}
        : { permissions: found.server.permissions }),
      ...(entry.env_vars === undefined || entry.env_vars.length === 0 ? {} : { envVars: entry.env_vars }),
      ...(found.is_remote || found.server.provenance === undefined
        ? {}
        : { provenance: found.server.provenance }),
    };
  };
  resolve.similar = (name) => registry.similarServerNames(name);
  return resolve;
}

/** The secrets store as the registry login's token store (its refresh token lives there). */
export function registryTokenStore(secrets: SecretsService): RegistryTokenStore {
  return {
    get: (name) => secrets.get(name),
    create: (name, value) => secrets.create(name, value),
    update: (name, value) => secrets.update(name, value),
    delete: (name) => secrets.delete(name),
    assertWritable() {
      const { provider_type, capabilities } = secrets.details();
      if (!capabilities.can_write) {
        throw new SkepError(
          'secrets_read_only',
          `registry login keeps its refresh token in the secrets store, and the ${provider_type} provider ` +
            'cannot store one; set up the encrypted provider (POST /api/v1beta/secrets {"provider_type": "encrypted"})',
        );
      }
    },
  };
}

export function createContext(config: SkepConfig, options: ContextOptions = {}): ApiContext {
  const logger = options.logger ?? silentLogger;
  const store = openStore(config.paths.databaseFile);
  const groups = new GroupService(store);
  const secrets = new SecretsService({ store, paths: config.paths, env: options.env ?? process.env });
  const skills = new SkillsService({
    store,
    groups,
    storeDir: join(config.paths.dataDir, 'skills', 'oci'),
    logger,
    // The registry's skill entries: their `provenance` is the signer an install must match. Read
    // at call time (the registry is built just below).
    catalog: registrySkillCatalog(() => registry),
    ...definedOnly({ env: options.env }),
  });
  const registry = new RegistryService({
    store,
    cacheDir: config.paths.cacheDir,
    logger,
    tokens: registryTokenStore(secrets),
  });
  // The container runtime is detected lazily (first image workload or /health), once.
  const runtimes = new RuntimeSelector({
    config,
    logger,
    ...definedOnly({ env: options.env }),
  });
  const workloads = new WorkloadManager({
    store,
    config,
    groups,
    containers: {
      check: async (image) => {
        await runtimes.forImage(image);
      },
      remove: async (name) => {
        await (await runtimes.container())?.removeWorkload(name);
      },
    },
    secretLookup: secrets.lookup(),
    logger,
    resolveRegistryServer: options.resolveRegistryServer ?? registryResolver(registry),
  });
  groups.attachMembers(workloads);
  // Client configs follow the workloads: every start/stop/removal/port or group change re-syncs.
  const clients = new ClientsService({
    store,
    groups,
    logger,
    env: options.env ?? process.env,
    listWorkloads: () =>
      workloads.list({ all: true }).map((w) => {
        const vmcp = workloads.rows.get(w.name)?.config.vmcp;
        return vmcp === undefined
          ? w
          : Object.assign({}, w, {
              virtual: { serves: vmcp.groupRef ?? w.group, clientEntries: vmcp.clientEntries ?? 'virtual' },
            });
      }),
  });
  workloads.onChange(() => {
    void clients.syncClientConfigs().catch(() => undefined);
  });
  const runtime = options.runtime;
  let closed = false;
  const orphanSweep =
    options.removeOrphanContainers === true
      ? runtimes
          .container()
          .then((engine) => engine?.removeOrphans(new Set(workloads.rows.list().map((r) => r.name))))
          .catch((err: unknown) => logger.warn({ err }, 'cannot remove orphaned containers'))
      : Promise.resolve();
  return {
    config,
    store,
    logger,
    version: SKEP_VERSION,
    nonce: randomBytes(16).toString('hex'),
    groups,
    secrets,
    skills,
    workloads,
    clients,
    registry,
    async runtimeHealth() {
      if (runtime === undefined) return runtimes.health();
      return { ...(await runtime.health()), runtime: runtime.name };
    },
    async close() {
      if (closed) return;
      closed = true;
      await orphanSweep;
      await workloads.close();
      await clients.close();
      await registry.close();
      secrets.close();
      store.close();
    },
  };
}
