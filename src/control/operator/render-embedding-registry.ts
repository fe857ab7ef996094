/**
 * EmbeddingServer and MCPRegistry → Kubernetes objects.
 *
 *  - EmbeddingServer `<n>`: StatefulSet `<n>` (container `embedding`, `--model-id <model> --port
 *    <port>` then `spec.args`; `MODEL_ID`, `HF_TOKEN` from `hfTokenSecretRef`, `spec.env`; probes
 *    GET /health; with `modelCache` a volume claim template `model-cache` mounted at /data with
 *    `HF_HOME=/data`) and Service `<n>` on `port`, as the reference renders them.
 *  - MCPRegistry `<n>`: ConfigMap `<n>-registry-server-config` (`config.yaml` = `configYAML`),
 *    Deployment, Service and ServiceAccount `<n>-api` (with a kubernetes source also Role and
 *    RoleBinding `<n>-api`: list the workloads of its namespace). The container `registry-api` runs
 *    Skep's own registry API (`skep operator registry-server`: the registry routes of `skep serve`,
 *    read-only) over the sources the configuration names; `spec.volumes`/`volumeMounts` carry
 *    their files.
 */
import { parse as parseYaml } from 'yaml';
import type { EmbeddingServerSpec, MCPRegistrySpec } from '../../schemas/operator/index.js';
import { isRecord } from '../../shared/index.js';
import {
  type K8sObject,
  labelsFor,
  mergePodTemplate,
  meta,
  nameOf,
  rendered,
  type RenderResult,
  selectorOf,
} from './render-common.js';
import { MODEL_CACHE_CLAIM } from './embedding-status.js';
import { type Index } from './render-index.js';
import {
  dataChecksumOf,
  kubernetesNamespaces,
  parseRegistryServerConfig,
  REGISTRY_CONFIG_DIR,
  REGISTRY_PORT,
} from './registry-config.js';
import { REGISTRY_LISTED_GROUP, REGISTRY_LISTED_KINDS } from './registry-kubernetes.js';

type Node = Record<string, unknown>;

/** A ResourceMetadataOverrides block applied to metadata (labels keep the selector keys). */
function overlay(
  metadata: Node,
  o: { labels?: Record<string, string>; annotations?: Record<string, string> } | undefined,
): void {
  if (o === undefined) return;
  const labels = { ...((metadata['labels'] ?? {}) as Record<string, string>) };
  const keep = { name: labels['app.kubernetes.io/name'], instance: labels['app.kubernetes.io/instance'] };
  Object.assign(labels, o.labels ?? {});
  if (keep.name !== undefined) labels['app.kubernetes.io/name'] = keep.name;
  if (keep.instance !== undefined) labels['app.kubernetes.io/instance'] = keep.instance;
  metadata['labels'] = labels;
  if (o.annotations !== undefined)
    metadata['annotations'] = {
      ...((metadata['annotations'] ?? {}) as Record<string, string>),
      ...o.annotations,
    };
}

const quantities = (r: EmbeddingServerSpec['resources']): Node | undefined => {
  if (r === undefined) return undefined;
  const one = (q: { cpu?: string; memory?: string } | undefined) =>
    q === undefined ? undefined : (JSON.parse(JSON.stringify({ cpu: q.cpu, memory: q.memory })) as Node);
  const out = JSON.parse(JSON.stringify({ limits: one(r.limits), requests: one(r.requests) })) as Node;
  return Object.keys(out).length === 0 ? undefined : out;
};

export function renderEmbeddingServer(cr: Node, index: Index): RenderResult {
  const namespace = index.ns(cr);
  const name = nameOf(cr);
  const spec = (cr['spec'] ?? {}) as EmbeddingServerSpec;
  const model = spec.model ?? 'BAAI/bge-small-en-v1.5';
  const port = spec.port ?? 8080;
  const cache = spec.modelCache !== undefined && spec.modelCache.enabled !== false;
  const env: Node[] = [{ name: 'MODEL_ID', value: model }];
  if (spec.hfTokenSecretRef !== undefined)
    env.push({
      name: 'HF_TOKEN',
      valueFrom: { secretKeyRef: { name: spec.hfTokenSecretRef.name, key: spec.hfTokenSecretRef.key } },
    });
  for (const e of spec.env ?? []) env.push({ name: e.name, value: e.value });
  if (cache) env.push({ name: 'HF_HOME', value: '/data' });
  const probe = (initialDelaySeconds: number, periodSeconds: number, timeoutSeconds: number) => ({
    httpGet: { path: '/health', port },
    initialDelaySeconds,
    periodSeconds,
    timeoutSeconds,
    failureThreshold: 3,
  });
  const resources = quantities(spec.resources);
  const container: Node = {
    name: 'embedding',
    image: spec.image ?? 'ghcr.io/huggingface/text-embeddings-inference:cpu-latest',
    imagePullPolicy: spec.imagePullPolicy ?? 'IfNotPresent',
    args: ['--model-id', model, '--port', String(port), ...(spec.args ?? [])],
    env,
    ports: [{ name: 'http', containerPort: port, protocol: 'TCP' }],
    livenessProbe: probe(60, 30, 10),
    readinessProbe: probe(30, 10, 5),
    ...(cache ? { volumeMounts: [{ name: MODEL_CACHE_CLAIM, mountPath: '/data' }] } : {}),
    ...(resources === undefined ? {} : { resources }),
  };
  const o = spec.resourceOverrides;
  const podMeta: Node = { labels: labelsFor('EmbeddingServer', name) };
  overlay(podMeta, o?.statefulSet?.podTemplateMetadataOverrides);
  const template = mergePodTemplate(
    { metadata: podMeta, spec: { containers: [container] } },
    spec.podTemplateSpec as Node | undefined,
  );
  const stsMeta = meta(cr, name, namespace) as unknown as Node;
  overlay(stsMeta, o?.statefulSet);
  const statefulSet: K8sObject = {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: stsMeta as K8sObject['metadata'],
    spec: {
      replicas: spec.replicas ?? 1,
      serviceName: name,
      selector: { matchLabels: selectorOf(cr) },
      template,
      ...(cache
        ? {
            volumeClaimTemplates: [
              (() => {
                const m: Node = { name: MODEL_CACHE_CLAIM, labels: labelsFor('EmbeddingServer', name) };
                overlay(m, o?.persistentVolumeClaim);
                return {
                  metadata: m,
                  spec: {
                    accessModes: [spec.modelCache?.accessMode ?? 'ReadWriteOnce'],
                    resources: { requests: { storage: spec.modelCache?.size ?? '10Gi' } },
                    ...(spec.modelCache?.storageClassName === undefined
                      ? {}
                      : { storageClassName: spec.modelCache.storageClassName }),
                  },
                };
              })(),
            ],
          }
        : {}),
    },
  };
  const svcMeta = meta(cr, name, namespace) as unknown as Node;
  overlay(svcMeta, o?.service);
  const service: K8sObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: svcMeta as K8sObject['metadata'],
    spec: {
      selector: selectorOf(cr),
      ports: [{ name: 'http', port, targetPort: port, protocol: 'TCP' }],
    },
  };
  const url = `http://${name}.${namespace}.svc.cluster.local:${port}`;
  return rendered('EmbeddingServer', namespace, name, [statefulSet, service], url, []);
}

export interface RegistryRenderOptions {
  /** The image of the registry-api container (Skep's). */
  image: string;
}

export function renderRegistry(cr: Node, index: Index, o: RegistryRenderOptions): RenderResult {
  const namespace = index.ns(cr);
  const name = nameOf(cr);
  const spec = cr['spec'] as MCPRegistrySpec;
  const problems: string[] = [];
  const warnings: string[] = [];
  let config: unknown;
  try {
    config = parseYaml(spec.configYAML);
  } catch (err) {
    problems.push(`spec.configYAML: not YAML (${(err as Error).message})`);
  }
  let listed: Set<string> | undefined;
  if (config !== undefined) {
    const parsed = parseRegistryServerConfig(config);
    problems.push(...parsed.problems.map((p) => `spec.configYAML: ${p}`));
    warnings.push(...parsed.ignored.map((p) => `spec.configYAML: ${p}`));
    if (parsed.config !== undefined) listed = kubernetesNamespaces(parsed.config);
  }
  const api = `${name}-api`;
  // A kubernetes source lists workloads with the pod's service-account token: the Role below in
  // the registry's own namespace; other namespaces are granted by whoever chose them.
  for (const other of [...(listed ?? [])].filter((ns) => ns !== '' && ns !== namespace))
    warnings.push(
      `spec.configYAML: kubernetes source namespace ${other}: grant ServiceAccount ${namespace}/${api} list on ${REGISTRY_LISTED_KINDS.map((k) => k.plural).join(', ')} (${REGISTRY_LISTED_GROUP}) there; the operator renders the Role of ${namespace} only`,
    );
  const listsOwn = listed !== undefined && (listed.has('') || listed.has(namespace));
  const rbac: K8sObject[] =
    listed === undefined
      ? []
      : [
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'Role',
            metadata: meta(cr, api, namespace),
            rules: listsOwn
              ? [
                  {
                    apiGroups: [REGISTRY_LISTED_GROUP],
                    resources: REGISTRY_LISTED_KINDS.map((k) => k.plural),
                    verbs: ['get', 'list', 'watch'],
                  },
                ]
              : [],
          },
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'RoleBinding',
            metadata: meta(cr, api, namespace),
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: api },
            subjects: [{ kind: 'ServiceAccount', name: api, namespace }],
          },
        ];
  // The token is mounted only when the server talks to the API server.
  const automount = listed !== undefined;
  if (spec.pgpassSecretRef !== undefined)
    warnings.push(
      "spec.pgpassSecretRef: not used: Skep's registry server keeps no database (it serves the sources read-only)",
    );
  const data = { 'config.yaml': spec.configYAML };
  const cm: K8sObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: meta(cr, `${name}-registry-server-config`, namespace),
    data,
  };
  const pullSecrets = (spec.imagePullSecrets ?? []).map((s) => ({ name: s.name }));
  const sa: K8sObject = {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: meta(cr, api, namespace),
    automountServiceAccountToken: automount,
    ...(pullSecrets.length > 0 ? { imagePullSecrets: pullSecrets } : {}),
  };
  const userVolumes = (spec.volumes ?? []) as Node[];
  const userMounts = (spec.volumeMounts ?? []) as Node[];
  for (const [i, v] of userVolumes.entries())
    if (!isRecord(v) || typeof v['name'] !== 'string' || v['name'] === 'config' || v['name'] === 'tmp')
      problems.push(`spec.volumes[${i}]: needs a name other than config and tmp`);
  const get = { httpGet: { path: '/health', port: 'http' } };
  const podSpec: Node = {
    serviceAccountName: api,
    automountServiceAccountToken: automount,
    ...(pullSecrets.length > 0 ? { imagePullSecrets: pullSecrets } : {}),
    containers: [
      {
        name: 'registry-api',
        image: o.image,
        args: [
          'operator',
          'registry-server',
          '--config',
          `${REGISTRY_CONFIG_DIR}/config.yaml`,
          '--port',
          String(REGISTRY_PORT),
        ],
        // The image's HOME and SKEP_HOME (/var/lib/skep, owned by its non-root user) hold the
        // server's small store and the source cache, as for the runner containers.
        ports: [{ name: 'http', containerPort: REGISTRY_PORT, protocol: 'TCP' }],
        volumeMounts: [
          // The file alone (as the reference mounts it): /config stays a plain directory, so the
          // registry files of `spec.volumeMounts` can be mounted under it (/config/registry/…).
          {
            name: 'config',
            mountPath: `${REGISTRY_CONFIG_DIR}/config.yaml`,
            subPath: 'config.yaml',
            readOnly: true,
          },
          { name: 'tmp', mountPath: '/tmp' },
          ...userMounts,
        ],
        readinessProbe: { ...get, periodSeconds: 5 },
        livenessProbe: { ...get, periodSeconds: 10 },
        resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { cpu: '500m', memory: '256Mi' } },
        securityContext: {
          allowPrivilegeEscalation: false,
          runAsNonRoot: true,
          runAsUser: 65532,
          runAsGroup: 65532,
          capabilities: { drop: ['ALL'] },
        },
      },
    ],
    volumes: [
      { name: 'config', configMap: { name: `${name}-registry-server-config` } },
      { name: 'tmp', emptyDir: { medium: 'Memory', sizeLimit: '64Mi' } },
      ...userVolumes,
    ],
  };
  // The reference's imagePullSecrets are atomic: the podTemplateSpec's list replaces this one.
  const template = mergePodTemplate(
    {
      metadata: {
        labels: labelsFor('MCPRegistry', name),
        annotations: { 'skep.dev/config-hash': dataChecksumOf(data) },
      },
      spec: podSpec,
    },
    spec.podTemplateSpec as Node | undefined,
  );
  // displayName names the registry for people (`kubectl describe`); the API serves
  // the registries of configYAML by their own names.
  const described =
    spec.displayName === undefined ? {} : { annotations: { 'skep.dev/display-name': spec.displayName } };
  const deployment: K8sObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(cr, api, namespace, described),
    spec: {
      replicas: 1,
      selector: { matchLabels: selectorOf(cr) },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template,
    },
  };
  const service: K8sObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(cr, api, namespace, described),
    spec: {
      selector: selectorOf(cr),
      ports: [{ name: 'http', port: REGISTRY_PORT, targetPort: 'http', protocol: 'TCP' }],
    },
  };
  const url = `http://${api}.${namespace}.svc.cluster.local:${REGISTRY_PORT}`;
  return rendered(
    'MCPRegistry',
    namespace,
    name,
    [cm, sa, ...rbac, deployment, service],
    url,
    problems,
    warnings,
  );
}
