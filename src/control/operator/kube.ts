/**
 * The narrow slice of the Kubernetes API the operator uses, on @kubernetes/client-node 1.4
 * (custom objects and Leases through the generic object paths, Secrets, watch). Everything else in the operator depends on the
 * `KubeClient` interface, not on client-node.
 */
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  Watch,
} from '@kubernetes/client-node';
import { type ErrorCode, isRecord } from '../../shared/index.js';

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    deletionTimestamp?: string;
    finalizers?: string[];
    annotations?: Record<string, string>;
    [key: string]: unknown;
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

export interface ResourceType {
  group: string;
  version: string;
  plural: string;
  /** List and watch only the objects with these labels (`name=value,...`), e.g. those the operator renders. */
  labelSelector?: string;
}

const WATCH_EVENT_TYPES = ['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR'] as const;
export type WatchEventType = (typeof WATCH_EVENT_TYPES)[number];
const isWatchEventType = (phase: string): phase is WatchEventType =>
  WATCH_EVENT_TYPES.some((t) => t === phase);

/** An object as the API serves it: an object whose metadata has a name. */
export const isKubeObject = (value: unknown): value is KubeObject =>
  isRecord(value) && isRecord(value['metadata']) && typeof value['metadata']['name'] === 'string';

/** The API server's answer, checked to be an object (client-node types custom objects as `any`). */
function kubeObject(value: unknown, what: string): KubeObject {
  if (isKubeObject(value)) return value;
  throw new KubeHttpError(502, `${what}: the API server answered with no object (metadata.name)`);
}

export interface KubeClient {
  list(type: ResourceType, namespace?: string): Promise<{ items: KubeObject[]; resourceVersion: string }>;
  /** Streams events after `resourceVersion`; `done` runs once when the stream ends. Returns a stopper. */
  watch(
    type: ResourceType,
    resourceVersion: string,
    namespace: string | undefined,
    onEvent: (type: WatchEventType, object: KubeObject) => void,
    done: (err: unknown) => void,
  ): Promise<() => void>;
  get(type: ResourceType, namespace: string, name: string): Promise<KubeObject | undefined>;
  /** RFC 7386 merge patch; include `metadata.resourceVersion` for an optimistic lock. */
  mergePatch(type: ResourceType, namespace: string, name: string, patch: unknown): Promise<KubeObject>;
  /** PUT on the status subresource; fails with 409 when `metadata.resourceVersion` is stale. */
  replaceStatus(type: ResourceType, object: KubeObject): Promise<KubeObject>;
  /** POST; fails with 409 when the object exists. */
  create(type: ResourceType, namespace: string, object: KubeObject): Promise<KubeObject>;
  /** PUT of the whole object; fails with 409 when `metadata.resourceVersion` is stale. */
  replace(type: ResourceType, object: KubeObject): Promise<KubeObject>;
  readSecret(namespace: string, name: string): Promise<Record<string, Buffer> | undefined>;
}

/** HTTP status of an API error, or undefined for transport errors. */
export function statusOf(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  if (err instanceof KubeHttpError) return err.statusCode;
  const code = isRecord(err) ? err['statusCode'] : undefined;
  return typeof code === 'number' ? code : undefined;
}

export function loadKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault(); // KUBECONFIG, ~/.kube/config, then in-cluster service account
  return kc;
}

export function createKubeClient(kc: KubeConfig): KubeClient {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  const watcher = new Watch(kc);
  const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  const notFoundAsUndefined = async <T>(p: Promise<T>): Promise<T | undefined> => {
    try {
      return await p;
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
  };
  /** A PUT of `object` to its own namespace and name. */
  const putOf = (type: ResourceType, object: KubeObject) => {
    const { name, namespace = 'default' } = object.metadata;
    return { ...type, namespace, name, body: object };
  };
  return {
    async list(type, namespace) {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- client-node types custom objects as `any`
      const res: any =
        namespace === undefined
          ? await custom.listClusterCustomObject({ ...type })
          : await custom.listNamespacedCustomObject({ ...type, namespace });
      const items: unknown[] = Array.isArray(res?.items) ? res.items : [];
      return {
        items: items.filter(isKubeObject),
        resourceVersion: String(res?.metadata?.resourceVersion ?? ''),
      };
    },
    async watch(type, resourceVersion, namespace, onEvent, done) {
      const path =
        namespace === undefined
          ? `/apis/${type.group}/${type.version}/${type.plural}`
          : `/apis/${type.group}/${type.version}/namespaces/${namespace}/${type.plural}`;
      const controller = await watcher.watch(
        path,
        Object.assign(
          { resourceVersion, allowWatchBookmarks: true },
          type.labelSelector === undefined ? {} : { labelSelector: type.labelSelector },
        ),
        // `obj` as sent: an object, or the Status of an ERROR event.
        (phase: string, obj: KubeObject) => {
          if (isWatchEventType(phase)) onEvent(phase, obj);
        },
        done,
      );
      return () => controller.abort();
    },
    async get(type, namespace, name) {
      const found: unknown = await notFoundAsUndefined(
        custom.getNamespacedCustomObject({ ...type, namespace, name }),
      );
      return found === undefined ? undefined : kubeObject(found, `get ${type.plural} ${namespace}/${name}`);
    },
    async mergePatch(type, namespace, name, patch) {
      const patched: unknown = await custom.patchNamespacedCustomObject(
        { ...type, namespace, name, body: patch },
        mergePatch,
      );
      return kubeObject(patched, `patch ${type.plural} ${namespace}/${name}`);
    },
    async replaceStatus(type, object) {
      const replaced: unknown = await custom.replaceNamespacedCustomObjectStatus(putOf(type, object));
      return kubeObject(replaced, `status of ${type.plural} ${object.metadata.name}`);
    },
    async create(type, namespace, object) {
      const created: unknown = await custom.createNamespacedCustomObject({
        ...type,
        namespace,
        body: object,
      });
      return kubeObject(created, `create ${type.plural} ${namespace}/${object.metadata.name}`);
    },
    async replace(type, object) {
      const replaced: unknown = await custom.replaceNamespacedCustomObject(putOf(type, object));
      return kubeObject(replaced, `replace ${type.plural} ${object.metadata.name}`);
    },
    async readSecret(namespace, name) {
      const secret = await notFoundAsUndefined(core.readNamespacedSecret({ namespace, name }));
      if (secret === undefined) return undefined;
      return Object.fromEntries(
        Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')]),
      );
    },
  };
}

/** Built-in kinds the workload controller writes (or reads), with their API paths' plural names. */
export const BUILTIN_PLURALS: Record<string, string> = {
  ConfigMap: 'configmaps',
  Service: 'services',
  ServiceAccount: 'serviceaccounts',
  Deployment: 'deployments',
  StatefulSet: 'statefulsets',
  PersistentVolumeClaim: 'persistentvolumeclaims',
  Role: 'roles',
  RoleBinding: 'rolebindings',
};

/** Get/create/replace of namespaced objects of any apiVersion (core `v1` or `group/version`). */
export interface ObjectClient {
  get(apiVersion: string, kind: string, namespace: string, name: string): Promise<KubeObject | undefined>;
  create(object: KubeObject & { apiVersion: string; kind: string }): Promise<KubeObject>;
  /** PUT with the object's `metadata.resourceVersion` (409 when stale). */
  replace(object: KubeObject & { apiVersion: string; kind: string }): Promise<KubeObject>;
}

/** The API server refused a request; `code` is the error table's code for its HTTP status. */
export class KubeHttpError extends Error {
  override readonly name = 'KubeHttpError';
  readonly code: ErrorCode;
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
    this.code = codeForStatus(statusCode);
  }
}

function codeForStatus(status: number): ErrorCode {
  switch (status) {
    case 400:
      return 'bad_request';
    case 422:
      // Unprocessable: the object failed the API server's validation.
      return 'invalid_config';
    case 401:
      return 'unauthorized';
    case 403:
      return 'forbidden';
    case 404:
      return 'not_found';
    case 409:
      return 'conflict';
    case 429:
      return 'rate_limited';
    case 503:
      return 'unavailable';
    case 504:
      return 'gateway_timeout';
    default:
      return 'bad_gateway';
  }
}

export function createObjectClient(kc: KubeConfig): ObjectClient {
  const server = kc.getCurrentCluster()?.server;
  if (server === undefined) throw new Error('the kubeconfig names no cluster');
  const path = (apiVersion: string, kind: string, namespace: string, name?: string) => {
    const plural = BUILTIN_PLURALS[kind];
    if (plural === undefined) throw new Error(`no API path known for kind ${kind}`);
    const base = apiVersion === 'v1' ? '/api/v1' : `/apis/${apiVersion}`;
    return `${base}/namespaces/${encodeURIComponent(namespace)}/${plural}${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;
  };
  const call = async (method: string, url: string, body?: unknown): Promise<KubeObject | undefined> => {
    const init = await kc.applyToFetchOptions({});
    const headers = new Headers(init.headers as ConstructorParameters<typeof Headers>[0]);
    headers.set('accept', 'application/json');
    if (body !== undefined) headers.set('content-type', 'application/json');
    const res = await fetch(new URL(url, server), {
      ...(init as RequestInit),
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (method === 'GET' && res.status === 404) return undefined;
    if (!res.ok) throw new KubeHttpError(res.status, `${method} ${url}: ${res.status} ${text.slice(0, 300)}`);
    return kubeObject(JSON.parse(text), `${method} ${url}`);
  };
  return {
    get: (apiVersion, kind, namespace, name) => call('GET', path(apiVersion, kind, namespace, name)),
    async create(object) {
      const ns = object.metadata.namespace ?? 'default';
      return (await call('POST', path(object.apiVersion, object.kind, ns), object))!;
    },
    async replace(object) {
      const ns = object.metadata.namespace ?? 'default';
      return (await call('PUT', path(object.apiVersion, object.kind, ns, object.metadata.name), object))!;
    },
  };
}
