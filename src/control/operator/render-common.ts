/**
 * Pieces every render module shares: the object and result types, the names and labels that tie a
 * rendered object to its custom resource (owner reference, selector), and the strategic merge of a
 * user's podTemplateSpec into a generated pod template.
 */
import { EXTAUTH_API_VERSION } from '../../schemas/extauth/index.js';
import { keyOf } from './render-index.js';

type Node = Record<string, unknown>;

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: Node[];
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

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

export const nameOf = (cr: Node) => String((cr['metadata'] as Node)['name']);

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
function ownerRefs(cr: Node): Node[] | undefined {
  const meta = cr['metadata'] as Node;
  if (typeof meta['uid'] !== 'string') return undefined;
  return [
    {
      apiVersion: EXTAUTH_API_VERSION,
      kind: cr['kind'],
      name: meta['name'],
      uid: meta['uid'],
      controller: true,
      blockOwnerDeletion: true,
    },
  ];
}

export function meta(cr: Node, name: string, namespace: string, extra: Node = {}): K8sObject['metadata'] {
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

/** Strategic-merge of the user's podTemplateSpec into the generated one (lists by their merge key). */
export function mergePodTemplate(base: Node, patch: Node | undefined): Node {
  if (patch === undefined) return base;
  const merge = (a: unknown, b: unknown, key = ''): unknown => {
    const mergeKey = MERGE_KEYS[key];
    if (Array.isArray(a) && Array.isArray(b) && mergeKey !== undefined) {
      const out = a.map((x) => ({ ...(x as Node) }));
      for (const item of b as Node[]) {
        const i = out.findIndex((x) => x[mergeKey] === item[mergeKey]);
        if (i >= 0) out[i] = merge(out[i], item) as Node;
        else out.push(item);
      }
      return out;
    }
    if (
      a !== null &&
      typeof a === 'object' &&
      !Array.isArray(a) &&
      b !== null &&
      typeof b === 'object' &&
      !Array.isArray(b)
    ) {
      const out: Node = { ...(a as Node) };
      for (const [k, v] of Object.entries(b as Node)) out[k] = k in out ? merge(out[k], v, k) : v;
      return out;
    }
    return b;
  };
  return merge(base, patch) as Node;
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
