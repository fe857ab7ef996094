/**
 * `skep operator registry-server --config /config/config.yaml`: the registry API of an MCPRegistry
 * pod. It serves the registry routes of `skep serve` (the native `/api/v1beta/registry…` shape and
 * the MCP registry `/registry/{name}/v0.1/…` API) for every registry of the configuration, each at
 * its own name, from the sources it names, and nothing else: every method but GET and HEAD is
 * refused (405), so the pod cannot be reconfigured or logged in through its Service. With
 * `auth.mode: anonymous` who may reach the Service is decided by the cluster (NetworkPolicies,
 * ingress); with `auth.mode: oauth` every request needs a bearer token (registry-oauth.ts).
 *
 * A registry of one plain file or one registry API is served from it directly (as `skep serve`
 * does); any other (several sources, git, kubernetes, a filter) from the union file RegistrySync
 * keeps current.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyRequest } from 'fastify';
import { parse as parseYaml } from 'yaml';
import type { ApiContext } from '../app/index.js';
import { RegistryService } from '../../registry/index.js';
import { createLogger, SkepError } from '../../shared/index.js';
import { openStore, type Store } from '../../store/index.js';
import { createKubeClient, type KubeClient, loadKubeConfig } from './kube.js';
import {
  parseRegistryServerConfig,
  type RegistryPlan,
  type RegistryServerConfig,
} from './registry-config.js';
import { podNamespace } from './registry-kubernetes.js';
import { createRegistryOAuth, METADATA_PATH } from './registry-oauth.js';
import { RegistrySync } from './registry-sync.js';

export interface RegistryServerOptions {
  configFile: string;
  host?: string;
  port?: number;
  env?: NodeJS.ProcessEnv;
  /** The API server client of kubernetes sources (default: the pod's service account). */
  kube?: KubeClient;
  /** The pod's namespace (default: read from its service-account namespace file). */
  namespace?: string;
}

export interface RunningRegistryServer {
  url: string;
  close(): Promise<void>;
}

/** A registry served straight from its one source, or undefined when it needs the union file. */
function directSource(
  plan: RegistryPlan,
):
  | { update: { local_path?: string; api_url?: string; allow_private_ip?: boolean }; ttlMs?: number }
  | undefined {
  const [only, ...more] = plan.sources;
  if (only === undefined || more.length > 0 || only.filter !== undefined) return undefined;
  if (only.kind === 'file') return { update: { local_path: only.path } };
  // An in-cluster registry API is on a private address by design.
  if (only.kind === 'api')
    return {
      update: { api_url: only.endpoint, allow_private_ip: true },
      ...(only.ttlMs === undefined ? {} : { ttlMs: only.ttlMs }),
    };
  return undefined;
}

/**
 * The registry a request names (`/registry/{name}/…`, `/api/v1beta/registry/{name}…`), which picks
 * the routes of that registry's service; undefined for the paths of no registry.
 */
function registryNameOf(url: string): string | undefined {
  const path = url.split('?')[0] ?? '';
  const m = /^\/(?:registry|api\/v1beta\/registry)\/([^/]+)/.exec(path);
  if (m === null) return undefined;
  try {
    return decodeURIComponent(m[1] as string);
  } catch {
    return undefined;
  }
}

function readConfig(file: string): { config: RegistryServerConfig; ignored: string[] } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new SkepError('invalid_config', `cannot read ${file}: ${(err as Error).message}`);
  }
  let config: unknown;
  try {
    config = parseYaml(text);
  } catch (err) {
    throw new SkepError('invalid_config', `${file} is not YAML: ${(err as Error).message}`);
  }
  const parsed = parseRegistryServerConfig(config);
  if (parsed.config === undefined)
    throw new SkepError('invalid_config', `${file}: ${parsed.problems.join('; ')}`);
  return { config: parsed.config, ignored: parsed.ignored };
}

/** Starts the server; resolves once it listens. */
export async function startRegistryServer(options: RegistryServerOptions): Promise<RunningRegistryServer> {
  const env = options.env ?? process.env;
  const { config, ignored } = readConfig(options.configFile);
  const home = env['SKEP_HOME'] || '/tmp/skep';
  mkdirSync(join(home, 'cache'), { recursive: true, mode: 0o700 });
  const logger = createLogger({ name: 'registry-server', level: env['SKEP_RUNNER_LOG_LEVEL'] ?? 'info' });
  for (const note of ignored) logger.warn(note);
  // Before anything starts: a provider that cannot be set up (an unreadable secret file) stops here.
  const oauth = config.auth.mode === 'oauth' ? await createRegistryOAuth(config.auth, logger) : undefined;

  let kube = options.kube;
  let namespace = options.namespace;
  const sync = new RegistrySync(
    config.registries.filter((plan) => directSource(plan) === undefined),
    {
      home,
      logger,
      kube: () => (kube ??= createKubeClient(loadKubeConfig())),
      namespace: () => (namespace ??= podNamespace()),
    },
  );
  const stores: Store[] = [];
  const services = new Map<string, RegistryService>();
  const closeAll = async () => {
    await sync.close();
    for (const service of services.values()) await service.close();
    for (const store of stores) store.close();
  };
  try {
    await sync.start();
    for (const [i, plan] of config.registries.entries()) {
      const direct = directSource(plan);
      const store = openStore(join(home, `registry-${i}.db`));
      stores.push(store);
      const registry = new RegistryService({
        name: plan.name,
        // The union file of a merged registry is empty while none of its sources has entries.
        ...(direct === undefined ? { allowEmpty: true } : {}),
        store,
        cacheDir: join(home, 'cache'),
        logger,
        ...(direct?.ttlMs === undefined ? {} : { ttlMs: direct.ttlMs }),
      });
      services.set(plan.name, registry);
      await registry.configure(plan.name, direct?.update ?? { local_path: sync.pathOf(plan.name) });
    }
  } catch (err) {
    await closeAll();
    throw err;
  }

  // The API's modules, loaded on demand as `skep serve` does (the operator's other commands need none).
  const { handleError, sendError } = await import('../api/errors.js');
  const { registryRoutes } = await import('../api/routes/registry.js');
  type SkepApp = Parameters<typeof registryRoutes>[0];
  // Each registry's routes are the same paths; a route constraint picks the service by the name in
  // the path (find-my-way's custom constraint strategies).
  const app = Fastify({
    loggerInstance: logger,
    bodyLimit: 1024,
    routerOptions: {
      constraints: {
        skepRegistry: {
          name: 'skepRegistry',
          storage() {
            const handlers = new Map<string, unknown>();
            return {
              get: (name: string) => (handlers.get(name) ?? null) as never,
              set: (name: string, store: unknown) => void handlers.set(name, store),
            };
          },
          // undefined (a path of no registry) is "not derived": only routes without the constraint match.
          deriveConstraint: (req: { url?: string | undefined }) => registryNameOf(req.url ?? '') as string,
          mustMatchWhenDerived: false,
          validate(value: unknown) {
            if (typeof value !== 'string') throw new TypeError('a registry name is a string');
          },
        },
      },
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  const skepApp = app as unknown as SkepApp;
  skepApp.setErrorHandler(handleError);
  skepApp.setNotFoundHandler((request, reply) => {
    const name = registryNameOf(request.url);
    return name !== undefined && !services.has(name)
      ? sendError(
          reply,
          404,
          'registry_not_found',
          `registry ${name} does not exist; this server serves ${[...services.keys()].join(', ')}`,
        )
      : sendError(reply, 404, 'not_found', `no route ${request.method} ${request.url.split('?')[0]}`);
  });
  skepApp.addHook('onRequest', async (request, reply) => {
    if (request.method !== 'GET' && request.method !== 'HEAD')
      return sendError(
        reply,
        405,
        'method_not_allowed',
        'this registry is read-only: only GET and HEAD are served',
      );
    return oauth?.check(request, reply);
  });
  skepApp.get('/health', async () => ({ status: 'ok' }));
  if (oauth !== undefined) {
    // RFC 9728 §3: at the well-known path, and with the resource's own path appended.
    const metadata = async (request: FastifyRequest) => oauth.metadata(request);
    skepApp.get(METADATA_PATH, metadata);
    skepApp.get(`${METADATA_PATH}/*`, metadata);
  }
  // The native list of registries spans every service (its path names no registry).
  skepApp.get('/api/v1beta/registry', async () => ({
    registries: (await Promise.all([...services.values()].map((s) => s.listRegistries()))).flat(),
  }));
  for (const [name, registry] of services) {
    await skepApp.register(async (scope) => {
      scope.addHook('onRoute', (route) => {
        route.constraints = { ...route.constraints, skepRegistry: name };
      });
      // The registry routes read only `ctx.registry`.
      const ctx: Pick<ApiContext, 'registry'> = { registry };
      await registryRoutes(scope, ctx as ApiContext);
    });
  }
  let address: string;
  try {
    address = await skepApp.listen({ host: options.host ?? '0.0.0.0', port: options.port ?? 8080 });
  } catch (err) {
    await closeAll();
    throw err;
  }
  return {
    url: address,
    close: async () => {
      await skepApp.close();
      await closeAll();
    },
  };
}
