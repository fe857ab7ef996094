/**
 * An in-process FAKE of the Kubernetes API server, because no real API server can run on
 * these machines. It is a real HTTP server on 127.0.0.1 speaking enough of the API for the
 * real @kubernetes/client-node client: list (namespaced and cluster-wide), watch (chunked
 * newline-delimited events from a resourceVersion), both filtered by a `labelSelector`, get, create (POST, 409 when it exists),
 * merge-patch, PUT and the
 * status subresource (resourceVersion optimistic locking → 409 Conflict), delete with
 * finalizers (deletionTimestamp, removal when the last finalizer goes), `generation` bumps on
 * spec changes, and core/v1 Secrets. Tests can inject 409s to exercise conflict retries, end
 * every open watch (`endWatches`, as the API server's request timeout does), and compact the
 * event history (`compact`) so that a watch from an older resourceVersion is answered as the
 * real API server answers it: HTTP 200, one `ERROR` event with a 410 `Expired` Status, end.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };

interface Watcher {
  resource: string;
  namespace: string | undefined;
  /** The watch's `labelSelector` (every object when absent). */
  selector: string | null;
  res: ServerResponse;
}

/**
 * Whether `obj`'s labels match a Kubernetes label selector: comma-separated requirements
 * `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k` (exists) and `!k`.
 */
function matchesLabels(obj: Obj, selector: string | null): boolean {
  if (selector === null || selector.trim() === '') return true;
  const labels = (obj.metadata['labels'] ?? {}) as Record<string, string | undefined>;
  const requirements = selector.match(/[^,(]+(\([^)]*\))?/g) ?? [];
  return requirements.every((raw) => {
    const r = raw.trim();
    const set = /^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(r);
    if (set !== null) {
      const values = set[3]!.split(',').map((v) => v.trim());
      const value = labels[set[1]!];
      const member = value !== undefined && values.includes(value);
      return set[2] === 'in' ? member : !member;
    }
    const eq = /^([^!=]+)(==|=|!=)(.*)$/.exec(r);
    if (eq !== null) {
      const value = labels[eq[1]!.trim()];
      return eq[2] === '!=' ? value !== eq[3]!.trim() : value === eq[3]!.trim();
    }
    return r.startsWith('!') ? labels[r.slice(1)] === undefined : labels[r] !== undefined;
  });
}

interface Event {
  rv: number;
  resource: string;
  namespace: string;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: Obj;
}

interface Route {
  resource: string; // "group/version/plural" or "core/v1/secrets"
  namespace: string | undefined;
  name: string | undefined;
  status: boolean;
  apiVersion: string;
}

export interface RequestRecord {
  method: string;
  path: string;
  status: number;
  /** `performance.now()` when it was answered (watches: when the stream started). */
  at: number;
}

function parseRoute(pathname: string): Route | undefined {
  const parts = pathname.split('/').filter(Boolean);
  let apiVersion: string;
  let rest: string[];
  if (parts[0] === 'api' && parts[1] === 'v1') {
    apiVersion = 'v1';
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 3) {
    apiVersion = `${parts[1]}/${parts[2]}`;
    rest = parts.slice(3);
  } else {
    return undefined;
  }
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [plural, name, sub] = rest;
  if (plural === undefined || (sub !== undefined && sub !== 'status') || rest.length > 3) return undefined;
  return {
    resource: `${apiVersion === 'v1' ? 'core/v1' : apiVersion}/${plural}`,
    namespace,
    name,
    status: sub === 'status',
    apiVersion,
  };
}

/** RFC 7386 JSON merge patch. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

const clone = <T>(v: T): T => structuredClone(v);

export class FakeKubeApi {
  private server: Server | undefined;
  private rv = 100;
  private readonly objects = new Map<string, Obj>(); // resource|ns|name
  private readonly events: Event[] = [];
  private readonly watchers = new Set<Watcher>();
  private readonly conflicts = new Map<string, number>(); // "METHOD status|main resource" → remaining
  /** Every request served, in order. */
  readonly requests: RequestRecord[] = [];
  /** Resources whose list/watch answer 404 (a CRD that is not installed). */
  readonly missingResources = new Set<string>();
  port = 0;
  /** Watches from a resourceVersion below this get 410 Gone (`compact`). */
  private compactedRv = 0;
  private goneAs: 'event' | 'status' = 'event';
  /** When true, every watch ends right after replaying the history (a server that drops watches). */
  endWatchesAtOnce = false;
  /** While set, list requests (not watches) wait for it: a slow API server, held by the test. */
  private listsHeld: Promise<void> | undefined;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      void this.handle(req, res).catch((err: unknown) => {
        this.reply(req, res, 500, this.statusBody(500, 'InternalError', String(err)));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    for (const w of this.watchers) w.res.end();
    this.watchers.clear();
    await new Promise<void>((resolve) => {
      this.server?.close(() => resolve());
      this.server?.closeAllConnections();
    });
  }

  /** A KubeConfig pointing the real client at this fake. */
  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server: `http://127.0.0.1:${this.port}`, skipTLSVerify: true }],
      users: [{ name: 'tester', token: 'fake-token' }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'tester' }],
      currentContext: 'fake',
    });
    return kc;
  }

  /** The next `count` writes of this kind answer 409 Conflict ('status' or 'main' PUT/PATCH). */
  injectConflicts(target: 'status' | 'main', count: number): void {
    this.conflicts.set(target, (this.conflicts.get(target) ?? 0) + count);
  }

  /** Holds every list request until the returned function is called. */
  holdLists(): () => void {
    let release!: () => void;
    this.listsHeld = new Promise<void>((resolve) => (release = resolve));
    return () => {
      this.listsHeld = undefined;
      release();
    };
  }

  /** Ends every open watch stream cleanly; returns how many were open. */
  endWatches(): number {
    const open = this.watchers.size;
    for (const w of this.watchers) w.res.end();
    this.watchers.clear();
    return open;
  }

  /**
   * Forgets the event history up to now (etcd compaction): older resourceVersions expire,
   * answered as an `ERROR` event (the API server's way) or, with `'status'`, as HTTP 410.
   */
  compact(goneAs: 'event' | 'status' = 'event'): void {
    this.goneAs = goneAs;
    this.compactedRv = this.rv;
    this.events.splice(0);
  }

  /** Direct store access for tests (no HTTP). */
  getObject(resource: string, namespace: string, name: string): Obj | undefined {
    const o = this.objects.get(`${resource}|${namespace}|${name}`);
    return o === undefined ? undefined : clone(o);
  }

  create(resource: string, obj: Obj): Obj {
    const ns = String(obj.metadata['namespace'] ?? 'default');
    const name = String(obj.metadata['name']);
    if (this.objects.has(`${resource}|${ns}|${name}`)) throw new Error(`exists: ${resource} ${ns}/${name}`);
    const stored = clone(obj);
    stored.metadata = {
      ...stored.metadata,
      namespace: ns,
      uid: randomUUID(),
      generation: 1,
      creationTimestamp: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    };
    return this.commit(resource, ns, name, stored, 'ADDED');
  }

  /** Updates the main resource as a client would with a PUT (spec changes bump generation). */
  update(resource: string, namespace: string, name: string, mutate: (o: Obj) => void): Obj {
    const current = this.getObject(resource, namespace, name);
    if (current === undefined) throw new Error('not found');
    mutate(current);
    return this.writeMain(
      resource,
      namespace,
      name,
      current,
      this.objects.get(`${resource}|${namespace}|${name}`)!,
    );
  }

  /** DELETE semantics: with finalizers only marks the object; without, removes it. */
  delete(resource: string, namespace: string, name: string): void {
    const key = `${resource}|${namespace}|${name}`;
    const current = this.objects.get(key);
    if (current === undefined) return;
    const finalizers = (current.metadata['finalizers'] as string[] | undefined) ?? [];
    if (finalizers.length === 0) {
      this.remove(resource, namespace, name);
      return;
    }
    if (current.metadata['deletionTimestamp'] !== undefined) return;
    const next = clone(current);
    next.metadata['deletionTimestamp'] = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    this.commit(resource, namespace, name, next, 'MODIFIED');
  }

  putSecret(namespace: string, name: string, data: Record<string, string | Buffer>): void {
    const encoded = Object.fromEntries(
      Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
    );
    const key = `core/v1/secrets|${namespace}|${name}`;
    const existing = this.objects.get(key);
    const obj: Obj = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace, ...(existing?.metadata ?? {}) },
      data: encoded,
    };
    this.commit('core/v1/secrets', namespace, name, obj, existing === undefined ? 'ADDED' : 'MODIFIED');
  }

  private remove(resource: string, namespace: string, name: string): void {
    const key = `${resource}|${namespace}|${name}`;
    const current = this.objects.get(key);
    if (current === undefined) return;
    this.objects.delete(key);
    const gone = clone(current);
    gone.metadata['resourceVersion'] = String(++this.rv);
    this.emit({ rv: this.rv, resource, namespace, type: 'DELETED', object: gone });
  }

  private commit(resource: string, namespace: string, name: string, obj: Obj, type: Event['type']): Obj {
    obj.metadata['resourceVersion'] = String(++this.rv);
    this.objects.set(`${resource}|${namespace}|${name}`, clone(obj));
    this.emit({ rv: this.rv, resource, namespace, type, object: clone(obj) });
    return clone(obj);
  }

  private emit(event: Event): void {
    this.events.push(event);
    for (const w of this.watchers) {
      if (
        w.resource === event.resource &&
        (w.namespace === undefined || w.namespace === event.namespace) &&
        matchesLabels(event.object, w.selector)
      ) {
        w.res.write(`${JSON.stringify({ type: event.type, object: event.object })}\n`);
      }
    }
  }

  private takeConflict(target: 'status' | 'main'): boolean {
    const left = this.conflicts.get(target) ?? 0;
    if (left <= 0) return false;
    this.conflicts.set(target, left - 1);
    return true;
  }

  /** Main-resource write: status is ignored (status subresource), generation follows spec. */
  private writeMain(resource: string, ns: string, name: string, next: Obj, current: Obj): Obj {
    const isCustom = !resource.startsWith('core/');
    if (isCustom) {
      next.status = current['status'];
      if (JSON.stringify(next['spec']) !== JSON.stringify(current['spec'])) {
        next.metadata['generation'] = Number(current.metadata['generation'] ?? 1) + 1;
      } else {
        next.metadata['generation'] = current.metadata['generation'];
      }
    }
    for (const k of ['uid', 'creationTimestamp', 'namespace', 'name']) next.metadata[k] = current.metadata[k];
    if (current.metadata['deletionTimestamp'] !== undefined)
      next.metadata['deletionTimestamp'] = current.metadata['deletionTimestamp'];
    const finalizers = (next.metadata['finalizers'] as string[] | undefined) ?? [];
    if (next.metadata['deletionTimestamp'] !== undefined && finalizers.length === 0) {
      this.objects.set(`${resource}|${ns}|${name}`, next);
      this.remove(resource, ns, name);
      return next;
    }
    return this.commit(resource, ns, name, next, 'MODIFIED');
  }

  private statusBody(code: number, reason: string, message: string) {
    return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
  }

  private reply(req: IncomingMessage, res: ServerResponse, status: number, body: unknown): void {
    this.requests.push({ method: req.method ?? '', path: req.url ?? '', status, at: performance.now() });
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  private async body(req: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    return text === '' ? undefined : JSON.parse(text);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const route = parseRoute(url.pathname);
    if (route === undefined)
      return this.reply(req, res, 404, this.statusBody(404, 'NotFound', 'no such path'));
    const { resource, namespace, name } = route;
    if (this.missingResources.has(resource)) {
      return this.reply(
        req,
        res,
        404,
        this.statusBody(404, 'NotFound', 'the server could not find the requested resource'),
      );
    }
    const method = req.method ?? 'GET';
    const key = `${resource}|${namespace}|${name}`;

    if (method === 'GET' && name === undefined) {
      if (url.searchParams.get('watch') === 'true') return this.watch(req, res, route, url.searchParams);
      await this.listsHeld;
      const items = [...this.objects.entries()]
        .filter(
          ([k]) =>
            k.startsWith(`${resource}|`) &&
            (namespace === undefined || k.startsWith(`${resource}|${namespace}|`)),
        )
        .map(([, o]) => o)
        .filter((o) => matchesLabels(o, url.searchParams.get('labelSelector')));
      return this.reply(req, res, 200, {
        apiVersion: route.apiVersion,
        kind: 'List',
        metadata: { resourceVersion: String(this.rv) },
        items,
      });
    }
    if (method === 'POST' && name === undefined && namespace !== undefined) {
      const body = (await this.body(req)) as Obj;
      const objName = String(body?.metadata?.['name'] ?? '');
      if (this.objects.has(`${resource}|${namespace}|${objName}`))
        return this.reply(
          req,
          res,
          409,
          this.statusBody(409, 'AlreadyExists', `${resource} "${objName}" already exists`),
        );
      return this.reply(
        req,
        res,
        201,
        this.create(resource, { ...body, metadata: { ...body.metadata, namespace } }),
      );
    }
    if (name === undefined || namespace === undefined)
      return this.reply(req, res, 405, this.statusBody(405, 'MethodNotAllowed', method));
    if (method === 'POST') return this.reply(req, res, 405, this.statusBody(405, 'MethodNotAllowed', method));

    const current = this.objects.get(key);
    if (current === undefined)
      return this.reply(req, res, 404, this.statusBody(404, 'NotFound', `${resource} "${name}" not found`));

    if (method === 'GET') return this.reply(req, res, 200, current);
    if (method === 'DELETE') {
      this.delete(resource, namespace, name);
      return this.reply(req, res, 200, this.objects.get(key) ?? current);
    }
    if (method !== 'PUT' && method !== 'PATCH')
      return this.reply(req, res, 405, this.statusBody(405, 'MethodNotAllowed', method));

    const body = (await this.body(req)) as Obj;
    if (method === 'PATCH' && req.headers['content-type'] !== 'application/merge-patch+json') {
      return this.reply(
        req,
        res,
        415,
        this.statusBody(415, 'UnsupportedMediaType', String(req.headers['content-type'])),
      );
    }
    const wantedRv = (body?.metadata as Record<string, unknown> | undefined)?.['resourceVersion'];
    const stale = wantedRv !== undefined && wantedRv !== current.metadata['resourceVersion'];
    if (stale || this.takeConflict(route.status ? 'status' : 'main')) {
      return this.reply(
        req,
        res,
        409,
        this.statusBody(
          409,
          'Conflict',
          `Operation cannot be fulfilled on ${resource} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
        ),
      );
    }
    const next = (method === 'PATCH' ? mergePatch(clone(current), body) : clone(body)) as Obj;
    if (route.status) {
      // Status subresource: only .status changes.
      const updated = clone(current);
      updated['status'] = next['status'];
      return this.reply(req, res, 200, this.commit(resource, namespace, name, updated, 'MODIFIED'));
    }
    return this.reply(req, res, 200, this.writeMain(resource, namespace, name, next, current));
  }

  private watch(req: IncomingMessage, res: ServerResponse, route: Route, params: URLSearchParams): void {
    const fromRv = params.get('resourceVersion');
    const selector = params.get('labelSelector');
    const since = fromRv === null || fromRv === '' ? this.rv : Number(fromRv);
    const expired = since < this.compactedRv;
    const gone = this.statusBody(410, 'Expired', `too old resource version: ${since} (${this.compactedRv})`);
    const status = expired && this.goneAs === 'status' ? 410 : 200;
    this.requests.push({ method: 'WATCH', path: req.url ?? '', status, at: performance.now() });
    if (status === 410) {
      res.writeHead(410, { 'content-type': 'application/json' });
      res.end(JSON.stringify(gone));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    if (expired) {
      res.end(`${JSON.stringify({ type: 'ERROR', object: gone })}\n`);
      return;
    }
    for (const e of this.events) {
      if (
        e.rv > since &&
        e.resource === route.resource &&
        (route.namespace === undefined || route.namespace === e.namespace) &&
        matchesLabels(e.object, selector)
      ) {
        res.write(`${JSON.stringify({ type: e.type, object: e.object })}\n`);
      }
    }
    if (this.endWatchesAtOnce) {
      res.end();
      return;
    }
    const watcher: Watcher = { resource: route.resource, namespace: route.namespace, selector, res };
    this.watchers.add(watcher);
    req.on('close', () => this.watchers.delete(watcher));
  }
}
