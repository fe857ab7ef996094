/**
 * The sources of the MCPRegistry server, read on their own schedules, and the union a registry of
 * several sources (or of a git or kubernetes source, or a filtered one) serves: one upstream
 * registry document per registry, written atomically to the server's home and served from there
 * (the registry service re-reads a file when it changes). In the union the first source named in
 * `registries[].sources` wins when two carry a server of the same name; the clash is logged. A
 * source that cannot be read keeps its last good copy (logged, retried within 30 s).
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_LIMIT, RegistryService } from '../../registry/index.js';
import { isRecord, type Logger } from '../../shared/index.js';
import { openStore, type Store } from '../../store/index.js';
import type { KubeClient } from './kube.js';
import {
  filterRegistryDocument,
  MAX_REGISTRY_SOURCE_BYTES,
  type RegistryPlan,
  type RegistrySourceSpec,
} from './registry-config.js';
import { readKubernetesSource } from './registry-kubernetes.js';

/** How often a file source is re-read; an API or git source without `syncPolicy`; a kubernetes source. */
const FILE_TTL_MS = 5_000;
const DEFAULT_TTL_MS = 10 * 60_000;
const KUBERNETES_TTL_MS = 10_000;
/** A source that failed is tried again after at most this long. */
const RETRY_MS = 30_000;

export interface SourceContext {
  /** The server's own folder (git clones, the union files). */
  home: string;
  logger: Logger;
  /** The API server client (kubernetes sources), created on first use. */
  kube: () => KubeClient;
  /** The pod's namespace (a kubernetes source without `namespaces`). */
  namespace: () => string;
}

interface SourceState {
  spec: RegistrySourceSpec;
  doc: Record<string, unknown> | undefined;
  due: number;
}

/** Reads an API source whole, page by page, through a registry service of its own. */
async function readApiSource(endpoint: string, ctx: SourceContext): Promise<unknown> {
  const store: Store = openStore(':memory:');
  const service = new RegistryService({
    store,
    cacheDir: join(ctx.home, 'cache'),
    logger: ctx.logger,
    ttlMs: 0,
  });
  try {
    // An in-cluster registry API is on a private address by design.
    await service.configure('default', { api_url: endpoint, allow_private_ip: true });
    const servers: unknown[] = [];
    for (let page = 1; ; page++) {
      const got = await service.listCatalogServers({ page, limit: MAX_LIMIT });
      servers.push(...got.items);
      if (got.items.length < MAX_LIMIT) break;
    }
    const skills: unknown[] = [];
    for (let page = 1; ; page++) {
      const got = await service.listCatalogSkills({ page, limit: MAX_LIMIT });
      skills.push(...got.items);
      if (got.items.length < MAX_LIMIT) break;
    }
    return { version: '1.0.0', meta: { last_updated: new Date().toISOString() }, data: { servers, skills } };
  } finally {
    await service.close();
    store.close();
  }
}

/**
 * Fetches a `file.url` source: redirects not followed, bounded in size and in time: `file.timeout`
 * covers the whole exchange, headers and body, so a server that answers slowly or stalls mid-body
 * is abandoned too.
 */
async function readUrlSource(url: string, timeoutMs: number): Promise<unknown> {
  try {
    return await fetchUrlSource(url, timeoutMs);
  } catch (err) {
    if ((err as Error).name === 'TimeoutError')
      throw new Error(`GET ${url}: no complete answer within ${timeoutMs} ms (file.timeout)`, {
        cause: err,
      });
    throw err;
  }
}

async function fetchUrlSource(url: string, timeoutMs: number): Promise<unknown> {
  const res = await fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
  if (res.status !== 200) {
    await res.body?.cancel();
    throw new Error(`GET ${url}: HTTP ${res.status}`);
  }
  if (res.body === null) throw new Error(`GET ${url}: no body`);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += chunk.length;
    if (size > MAX_REGISTRY_SOURCE_BYTES) {
      await res.body.cancel();
      throw new Error(`GET ${url}: larger than ${MAX_REGISTRY_SOURCE_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

async function readSource(spec: RegistrySourceSpec, ctx: SourceContext): Promise<unknown> {
  switch (spec.kind) {
    case 'file':
      return JSON.parse(readFileSync(spec.path, 'utf8'));
    case 'url':
      return readUrlSource(spec.url, spec.timeoutMs);
    case 'data':
      return spec.doc;
    case 'api':
      return readApiSource(spec.endpoint, ctx);
    case 'git': {
      // isomorphic-git is loaded only by a server with a git source.
      const { readGitSource } = await import('./registry-git.js');
      return JSON.parse(
        await readGitSource({
          repository: spec.repository,
          ref: spec.ref,
          path: spec.path,
          workDir: ctx.home,
          ...(spec.auth === undefined ? {} : { auth: spec.auth }),
        }),
      );
    }
    case 'kubernetes':
      return readKubernetesSource(
        ctx.kube(),
        spec.namespaces.length > 0 ? spec.namespaces : [ctx.namespace()],
      );
  }
}

const ttlOf = (spec: RegistrySourceSpec) =>
  spec.kind === 'file' || spec.kind === 'data'
    ? Math.min(spec.ttlMs ?? FILE_TTL_MS, FILE_TTL_MS)
    : spec.kind === 'kubernetes'
      ? KUBERNETES_TTL_MS
      : (spec.ttlMs ?? DEFAULT_TTL_MS);

/** The key that makes two entries of a list the same entry. */
const KEYS: Record<string, (item: Record<string, unknown>) => string> = {
  servers: (s) => String(s['name']),
  skills: (s) => `${String(s['namespace'])}/${String(s['name'])}`,
  groups: (g) => String(g['name']),
};

/** The union of upstream documents, first one wins per entry; `clash` hears every loser. */
export function unionDocuments(
  docs: Array<{ source: string; doc: Record<string, unknown> }>,
  clash: (list: string, key: string, kept: string, dropped: string) => void,
): Record<string, unknown> {
  const data: Record<string, Record<string, unknown>[]> = {};
  for (const [list, keyOf] of Object.entries(KEYS)) {
    const kept = new Map<string, string>();
    const out: Record<string, unknown>[] = [];
    for (const { source, doc } of docs) {
      const items = isRecord(doc['data']) ? doc['data'][list] : undefined;
      if (!Array.isArray(items)) continue;
      for (const item of items) {
        if (!isRecord(item)) continue;
        const key = keyOf(item);
        const first = kept.get(key);
        if (first !== undefined) {
          clash(list, key, first, source);
          continue;
        }
        kept.set(key, source);
        out.push(item);
      }
    }
    if (out.length > 0 || list === 'servers') data[list] = out;
  }
  return { version: '1.0.0', meta: { last_updated: new Date().toISOString() }, data };
}

/** Every source of the configuration, read when due; and the union file of each merged registry. */
export class RegistrySync {
  readonly #ctx: SourceContext;
  readonly #sources = new Map<string, SourceState>();
  readonly #merged: Array<{ plan: RegistryPlan; path: string; written: string | undefined }> = [];
  readonly #now: () => number;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #closed = false;

  constructor(merged: RegistryPlan[], ctx: SourceContext, now: () => number = Date.now) {
    this.#ctx = ctx;
    this.#now = now;
    for (const plan of merged) {
      for (const spec of plan.sources)
        if (!this.#sources.has(spec.name)) this.#sources.set(spec.name, { spec, doc: undefined, due: 0 });
      this.#merged.push({ plan, path: join(ctx.home, `registry-${plan.name}.json`), written: undefined });
    }
  }

  /** The file a merged registry is served from. */
  pathOf(name: string): string {
    const found = this.#merged.find((m) => m.plan.name === name);
    if (found === undefined) throw new TypeError(`registry ${name} is not merged`);
    return found.path;
  }

  /** Reads every source once and writes the union files, then keeps them current. */
  async start(): Promise<void> {
    if (this.#sources.size === 0) return;
    await this.#tick();
    const every = Math.max(
      250,
      Math.min(FILE_TTL_MS, ...[...this.#sources.values()].map((s) => ttlOf(s.spec))),
    );
    this.#timer = setInterval(() => {
      if (this.#running === undefined)
        this.#running = this.#tick().finally(() => (this.#running = undefined));
    }, every);
    this.#timer.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    await this.#running;
  }

  async #tick(): Promise<void> {
    const now = this.#now();
    const changed = await Promise.all(
      [...this.#sources.values()].filter((s) => s.due <= now).map((s) => this.#read(s, now)),
    );
    if (this.#closed || (!changed.includes(true) && this.#merged.every((m) => m.written !== undefined)))
      return;
    for (const merged of this.#merged) this.#write(merged);
  }

  /** Reads one source; true when its content changed. */
  async #read(state: SourceState, now: number): Promise<boolean> {
    const { spec } = state;
    try {
      const raw = await readSource(spec, this.#ctx);
      if (!isRecord(raw) || !isRecord(raw['data']))
        throw new Error('not an upstream registry document ({version, meta, data: {servers}})');
      const doc = (spec.filter === undefined ? raw : filterRegistryDocument(raw, spec.filter)) as Record<
        string,
        unknown
      >;
      state.due = now + ttlOf(spec);
      const before = JSON.stringify(state.doc?.['data']);
      state.doc = doc;
      return JSON.stringify(doc['data']) !== before;
    } catch (err) {
      state.due = now + Math.min(RETRY_MS, ttlOf(spec));
      this.#ctx.logger.warn(
        { source: spec.name, kind: spec.kind, err: (err as Error).message },
        state.doc === undefined
          ? 'registry source cannot be read; its entries are missing until it can'
          : 'registry source cannot be read; serving its last good copy',
      );
      return false;
    }
  }

  #write(merged: { plan: RegistryPlan; path: string; written: string | undefined }): void {
    const docs = merged.plan.sources.flatMap((spec) => {
      const doc = this.#sources.get(spec.name)?.doc;
      return doc === undefined ? [] : [{ source: spec.name, doc }];
    });
    const union = unionDocuments(docs, (list, key, kept, dropped) =>
      this.#ctx.logger.warn(
        { registry: merged.plan.name, list, entry: key, kept, dropped },
        'registry sources clash: the first source named in registries[].sources wins',
      ),
    );
    // last_updated moves on every write; compare the content only.
    const text = JSON.stringify(union['data']);
    if (text === merged.written) return;
    const tmp = `${merged.path}.tmp`;
    writeFileSync(tmp, JSON.stringify(union), { mode: 0o600 });
    renameSync(tmp, merged.path);
    merged.written = text;
  }
}
