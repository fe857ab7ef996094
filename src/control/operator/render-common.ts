/**
 * Pieces every render module shares: the object and result types, the names and labels that tie a
 * rendered object to its custom resource (owner reference, selector), and the strategic merge of a
 * user's podTemplateSpec into a generated pod template.
 *
 * Rendered objects are typed with the Kubernetes API's own types as `kubernetes-models` packages
 * them (generated from the upstream OpenAPI document). Only their types are imported
 * (`import type`, which `verbatimModuleSyntax` erases), so the package stays a devDependency
 * and adds nothing to the bundle.
 */
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { EXTAUTH_API_VERSION } from '../../schemas/extauth/index.js';
import { isRecord } from '../../shared/index.js';
import { keyOf } from './render-index.js';

type Node = Record<string, unknown>;

/**
 * Kubernetes ObjectMeta (meta/v1), as a mapped type: unlike the interface it is assignable to
 * the index-signature shapes the API client reads (`KubeObject`).
 */
export type ObjectMeta = {
  [K in keyof NonNullable<IConfigMap['metadata']>]: NonNullable<IConfigMap['metadata']>[K];
};

/** The metadata of a rendered object: it always has a name and a namespace. */
export type RenderedMeta = ObjectMeta & { name: string; namespace: string };

/**
 * A Kubernetes type as rendered: its metadata named and namespaced. A mapped type (`Omit`), so it
 * is also a `K8sObject`, which interfaces such as `IDeployment` are not (no index signature).
 */
export type Rendered<T extends { metadata?: ObjectMeta }> = Omit<T, 'metadata'> & { metadata: RenderedMeta };

/**
 * Any object the operator applies, as the controller and `skep operator render` see it: the
 * objects of every rendered kind, read by field name.
 */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta & { name: string; [k: string]: unknown };
  [k: string]: unknown;
}

/**
 * A custom resource that passed validation against its kind's schema, with that schema's
 * static spec type. A type alias (not an interface), so it is also a plain JSON object (`Node`).
 */
export type CustomResource<Spec> = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; uid?: string; generation?: number; [k: string]: unknown };
  spec: Spec;
  [k: string]: unknown;
};

export interface RenderResult {
  objects: K8sObject[];
  /** Per resource: its status URL, for the controller. */
  urls: Map<string, string>;
  problems: Array<{ resource: string; problem: string }>;
  /**
   * What rendered with a part left out (a VirtualMCPServer's member whose auth cannot be
   * expressed is not served): the resource still renders; the controller reports these.
   */
  warnings: Array<{ resource: string; problem: string }>;
  /** Documents of other API groups, left alone (`Kind/name` and why). */
  skipped: Array<{ resource: string; reason: string }>;
}

/** The metadata of a custom resource (validated: an object with a name). */
const metadataOf = (cr: Node): Node => (isRecord(cr['metadata']) ? cr['metadata'] : {});

export const nameOf = (cr: Node) => String(metadataOf(cr)['name']);

/** The labels that select the pods of a custom resource (a subset of `labelsFor`). */
export function selectorOf(cr: Node): Record<string, string> {
  return {
    'app.kubernetes.io/name': String(cr['kind']).toLowerCase(),
    'app.kubernetes.io/instance': nameOf(cr),
  };
}

export function labelsFor(kind: string, name: string): Record<string, string> {
  return {
    'app.kubernetes.io/name': kind.toLowerCase(),
    'app.kubernetes.io/instance': name,
    'app.kubernetes.io/managed-by': 'skep-operator',
    'app.kubernetes.io/part-of': 'skep',
  };
}

/** Owner reference to the custom resource; only when it has a uid (objects read from a cluster). */
function ownerRefs(cr: Node): ObjectMeta['ownerReferences'] {
  const uid = metadataOf(cr)['uid'];
  if (typeof uid !== 'string') return undefined;
  return [
    {
      apiVersion: EXTAUTH_API_VERSION,
      kind: String(cr['kind']),
      name: nameOf(cr),
      uid,
      controller: true,
      blockOwnerDeletion: true,
    },
  ];
}

export function meta(cr: Node, name: string, namespace: string, extra: ObjectMeta = {}): RenderedMeta {
  const owners = ownerRefs(cr);
  return {
    name,
    namespace,
    labels: labelsFor(String(cr['kind']), nameOf(cr)),
    ...(owners === undefined ? {} : { ownerReferences: owners }),
    ...extra,
  };
}

/**
 * The lists a strategic merge patch of a PodTemplateSpec merges by key (Kubernetes' patchMergeKey
 * of the core/v1 types); every other list replaces the generated one.
 */
const MERGE_KEYS: Record<string, string> = {
  containers: 'name',
  initContainers: 'name',
  volumes: 'name',
  env: 'name',
  imagePullSecrets: 'name',
  volumeMounts: 'mountPath',
  ports: 'containerPort',
};

/** The strategic merge of `b` into `a` at field `key`. */
function merge(a: unknown, b: unknown, key = ''): unknown {
  const mergeKey = MERGE_KEYS[key];
  if (Array.isArray(a) && Array.isArray(b) && mergeKey !== undefined) {
    const out: unknown[] = a.map((x: unknown) => (isRecord(x) ? { ...x } : x));
    for (const item of b) {
      const i = out.findIndex((x) => isRecord(x) && isRecord(item) && x[mergeKey] === item[mergeKey]);
      if (i >= 0) out[i] = merge(out[i], item);
      else out.push(item);
    }
    return out;
  }
  if (isRecord(a) && isRecord(b)) {
    const out: Node = { ...a };
    for (const [k, v] of Object.entries(b)) out[k] = k in out ? merge(out[k], v, k) : v;
    return out;
  }
  return b;
}

/**
 * Strategic-merge of the user's podTemplateSpec into the generated one (lists by their merge
 * key). The patch is the resource's validated `podTemplateSpec` (the CRD's schema of a
 * PodTemplateSpec), so the merge is again a `T`: the one assertion of the render modules, at the
 * one place untyped user input joins a typed object.
 */
export function mergePodTemplate<T extends object>(base: T, patch: unknown): T {
  if (!isRecord(patch)) return base;
  return merge(base, patch) as T;
}

/** The result of one resource: its objects, its status URL, and what went wrong. */
export function rendered(
  kind: string,
  namespace: string,
  name: string,
  objects: K8sObject[],
  url: string,
  problems: string[],
  warnings: string[] = [],
): RenderResult {
  const resource = keyOf(kind, namespace, name);
  return {
    objects,
    urls: new Map([[resource, url]]),
    problems: problems.map((problem) => ({ resource, problem })),
    warnings: warnings.map((problem) => ({ resource, problem })),
    skipped: [],
  };
}
