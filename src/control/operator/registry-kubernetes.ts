/**
 * A `kubernetes` source of the MCPRegistry server: the MCPServer, VirtualMCPServer and
 * MCPRemoteProxy objects of the listed namespaces (the pod's own by default) that opt in, as
 * registry entries in the upstream `server.json` shape, as the reference's registry server builds
 * them. An object opts in with the annotations `<prefix>/registry-export: "true"`,
 * `<prefix>/registry-description` and `<prefix>/registry-url` (the URL clients connect to;
 * `registry-title` is optional), where the prefix is `skep.dev` or the reference's
 * `toolhive.stacklok.dev`. The entry is named `com.toolhive.k8s.<namespace>/<name>` (the
 * reference's names, so clients find the same entries). The objects are listed through the API
 * server with the pod's service-account token (the operator renders the Role it needs) each time
 * the source is read.
 */
import { readFileSync } from 'node:fs';
import { EXTENSION_KEY } from '../../schemas/registry/index.js';
import type { KubeClient, KubeObject } from './kube.js';

/** The group and version of Skep's workload kinds. */
const GROUP = 'skep.dev';
const VERSION = 'v1beta1';
/** What a kubernetes source lists; the Role the operator renders grants exactly these. */
export const REGISTRY_LISTED_KINDS = [
  { kind: 'MCPServer', plural: 'mcpservers' },
  { kind: 'VirtualMCPServer', plural: 'virtualmcpservers' },
  { kind: 'MCPRemoteProxy', plural: 'mcpremoteproxies' },
] as const;
export const REGISTRY_LISTED_GROUP = GROUP;

const PREFIXES = ['skep.dev', 'toolhive.stacklok.dev'];
const PUBLISHER_PROVIDED = 'io.modelcontextprotocol.registry/publisher-provided';
/** The service-account namespace file of a pod (Kubernetes mounts it with the token). */
export const POD_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

function annotation(obj: KubeObject, key: string): string | undefined {
  const annotations = obj.metadata.annotations ?? {};
  for (const prefix of PREFIXES) {
    const v = annotations[`${prefix}/${key}`];
    if (v !== undefined) return v;
  }
  return undefined;
}

/** Reverse-DNS-safe parts, as the reference sanitises them (lowercase, other characters → '-'). */
const sanitize = (text: string, allowed: RegExp) =>
  text
    .toLowerCase()
    .replace(allowed, '-')
    .replace(/^[-._]+|[-._]+$/g, '');

export function entryName(namespace: string, name: string): string {
  return `com.toolhive.k8s.${sanitize(namespace, /[^a-z0-9.-]/g)}/${sanitize(name, /[^a-z0-9._-]/g)}`;
}

/** The version of an image tag that looks like a release (`1.2.3`, `v1.2`), else undefined. */
function tagVersion(image: string): string | undefined {
  const ref = image.split('@')[0] ?? '';
  const slash = ref.lastIndexOf('/');
  const colon = ref.lastIndexOf(':');
  if (colon <= slash) return undefined;
  const tag = ref.slice(colon + 1);
  return /^v?[0-9]+(\.[0-9]+){1,2}([-+][0-9A-Za-z.-]+)?$/.test(tag) ? tag.replace(/^v/, '') : undefined;
}

/** The registry entry of one object, or undefined when it does not opt in. */
export function entryOf(kind: string, obj: KubeObject): Record<string, unknown> | undefined {
  if (annotation(obj, 'registry-export') !== 'true') return undefined;
  const description = annotation(obj, 'registry-description');
  const url = annotation(obj, 'registry-url');
  if (description === undefined || description === '' || url === undefined || url === '') return undefined;
  const namespace = obj.metadata.namespace ?? '';
  const spec = obj.spec ?? {};
  const image = kind === 'MCPServer' && typeof spec['image'] === 'string' ? spec['image'] : undefined;
  const transport = typeof spec['transport'] === 'string' ? spec['transport'] : undefined;
  const title = annotation(obj, 'registry-title');
  // A stdio server is reached through its proxy, over streamable HTTP unless proxyMode says SSE.
  const served =
    transport === undefined || transport === 'stdio'
      ? typeof spec['proxyMode'] === 'string'
        ? spec['proxyMode']
        : 'streamable-http'
      : transport;
  return {
    name: entryName(namespace, obj.metadata.name),
    description,
    version: (image === undefined ? undefined : tagVersion(image)) ?? '1.0.0',
    ...(title === undefined ? {} : { title }),
    remotes: [{ type: 'streamable-http', url }],
    ...(image === undefined
      ? {}
      : { packages: [{ registryType: 'oci', identifier: image, transport: { type: served } }] }),
    _meta: {
      [PUBLISHER_PROVIDED]: {
        [EXTENSION_KEY]: {
          [url]: {
            status: 'active',
            metadata: {
              kubernetes: {
                kind,
                namespace,
                name: obj.metadata.name,
                ...(obj.metadata.uid === undefined ? {} : { uid: obj.metadata.uid }),
                ...(image === undefined ? {} : { image }),
                ...(transport === undefined ? {} : { transport }),
              },
            },
          },
        },
      },
    },
  };
}

/** The namespace of the pod this runs in (its service-account namespace file). */
export function podNamespace(file = POD_NAMESPACE_FILE): string {
  const text = readFileSync(file, 'utf8').trim();
  if (text === '' || text.length > 253) throw new Error(`${file}: not a namespace name`);
  return text;
}

/** Lists the opted-in objects of the namespaces as an upstream registry document. */
export async function readKubernetesSource(kube: KubeClient, namespaces: string[]): Promise<unknown> {
  const servers: Record<string, unknown>[] = [];
  for (const namespace of namespaces)
    for (const { kind, plural } of REGISTRY_LISTED_KINDS) {
      const { items } = await kube.list({ group: GROUP, version: VERSION, plural }, namespace);
      for (const obj of items) {
        const entry = entryOf(kind, obj);
        if (entry !== undefined) servers.push(entry);
      }
    }
  return { version: '1.0.0', meta: { last_updated: new Date().toISOString() }, data: { servers } };
}
