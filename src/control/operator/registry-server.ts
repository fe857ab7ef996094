/**
 * `skep operator registry-server --config /config/config.yaml`: the registry API of an MCPRegistry
 * pod. It serves the registry routes of `skep serve` (the native `/api/v1beta/registry…` shape and
 * the MCP registry `/registry/{name}/v0.1/…` API) from the one source the configuration names, and
 * nothing else: every method but GET and HEAD is refused (405), so the pod cannot be reconfigured
 * or logged in through its Service. No API token: like the reference's registry server in
 * anonymous mode, who may reach the Service is decided by the cluster (NetworkPolicies, ingress).
 */
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify from 'fastify';
import { parse as parseYaml } from 'yaml';
import type { ApiContext } from '../app/index.js';
import { RegistryService } from '../../registry/index.js';
import { createLogger, SkepError } from '../../shared/index.js';
import { openStore } from '../../store/index.js';
import { filterRegistryDocument, type RegistryFilter, registrySource } from './registry-config.js';

/**
 * A file source with a `filter`: the server serves a filtered copy, written atomically next to its
 * store and rewritten when the source file changes (checked every few seconds).
 */
function filteredCopy(source: string, filter: RegistryFilter, home: string): { path: string; stop(): void } {
  const path = join(home, 'filtered-registry.json');
  let seen = '';
  const refresh = () => {
    let stamp: string;
    try {
      const st = statSync(source);
      stamp = `${st.mtimeMs}:${st.size}`;
    } catch {
      return; // a missing file is reported by the registry on the next read of the copy
    }
    if (stamp === seen) return;
    seen = stamp;
    let doc: unknown;
    try {
      doc = JSON.parse(readFileSync(source, 'utf8'));
    } catch {
      doc = undefined;
    }
    if (doc === undefined) return;
    const tmp = `${path}.tmp`;
    writeFileSync(tmp, JSON.stringify(filterRegistryDocument(doc, filter)), { mode: 0o600 });
    renameSync(tmp, path);
  };
  refresh();
  const timer = setInterval(refresh, 5_000);
  timer.unref();
  return { path, stop: () => clearInterval(timer) };
}

export interface RegistryServerOptions {
  configFile: string;
  host?: string;
  port?: number;
  env?: NodeJS.ProcessEnv;
}

export interface RunningRegistryServer {
  url: string;
  close(): Promise<void>;
}

/** Starts the server; resolves once it listens. */
export async function startRegistryServer(options: RegistryServerOptions): Promise<RunningRegistryServer> {
  const env = options.env ?? process.env;
  let text: string;
  try {
    text = readFileSync(options.configFile, 'utf8');
  } catch (err) {
    throw new SkepError('invalid_config', `cannot read ${options.configFile}: ${(err as Error).message}`);
  }
  let config: unknown;
  try {
    config = parseYaml(text);
  } catch (err) {
    throw new SkepError('invalid_config', `${options.configFile} is not YAML: ${(err as Error).message}`);
  }
  const { source, problems } = registrySource(config);
  if (source === undefined)
    throw new SkepError('invalid_config', `${options.configFile}: ${problems.join('; ')}`);
  const home = env['SKEP_HOME'] || '/tmp/skep';
  mkdirSync(join(home, 'cache'), { recursive: true, mode: 0o700 });
  const logger = createLogger({ name: 'registry-server', level: env['SKEP_RUNNER_LOG_LEVEL'] ?? 'info' });
  const store = openStore(join(home, 'registry.db'));
  const registry = new RegistryService({
    store,
    cacheDir: join(home, 'cache'),
    logger,
    ...(source.ttlMs === undefined ? {} : { ttlMs: source.ttlMs }),
  });
  const filtered =
    source.filter !== undefined && source.update.local_path !== undefined
      ? filteredCopy(source.update.local_path, source.filter, home)
      : undefined;
  await registry.configure(
    'default',
    filtered === undefined ? source.update : { ...source.update, local_path: filtered.path },
  );
  // The API's modules, loaded on demand as `skep serve` does (the operator's other commands need none).
  const { handleError, sendError } = await import('../api/errors.js');
  const { registryRoutes } = await import('../api/routes/registry.js');
  type SkepApp = Parameters<typeof registryRoutes>[0];
  const app = Fastify({ loggerInstance: logger, bodyLimit: 1024 }).withTypeProvider<TypeBoxTypeProvider>();
  const skepApp = app as unknown as SkepApp;
  skepApp.setErrorHandler(handleError);
  skepApp.addHook('onRequest', async (request, reply) => {
    if (request.method !== 'GET' && request.method !== 'HEAD')
      return sendError(
        reply,
        405,
        'method_not_allowed',
        'this registry is read-only: only GET and HEAD are served',
      );
    return undefined;
  });
  skepApp.get('/health', async () => ({ status: 'ok' }));
  // The registry routes read only `ctx.registry`.
  const ctx: Pick<ApiContext, 'registry'> = { registry };
  await registryRoutes(skepApp, ctx as ApiContext);
  const address = await skepApp.listen({ host: options.host ?? '0.0.0.0', port: options.port ?? 8080 });
  return {
    url: address,
    close: async () => {
      filtered?.stop();
      await skepApp.close();
      await registry.close();
      store.close();
    },
  };
}
