/**
 * Custom resources → the Kubernetes objects that run them. A pure function of its input: `skep
 * operator render -f` prints its output, and the controller applies exactly the same objects.
 * Names follow ToolHive's operator:
 *
 *  - MCPServer `<n>`: ConfigMap `<n>-runconfig` (`runconfig.json`), Deployment `<n>`, Service
 *    `mcp-<n>-proxy`, ServiceAccount `<n>-proxy-runner`.
 *  - MCPRemoteProxy `<n>`: ConfigMap `<n>-runconfig`, Deployment `<n>`, Service
 *    `mcp-<n>-remote-proxy`, ServiceAccount `<n>-remote-proxy-runner`.
 *  - VirtualMCPServer `<n>`: ConfigMap `<n>-vmcp-config` (`runconfig.json`, whose `vmcp` block
 *    lists the group's members as static backends), Deployment `<n>`, Service `vmcp-<n>`,
 *    ServiceAccount `<n>-vmcp` (no Role: the pod never reads the Kubernetes API).
 *  - MCPServerEntry and MCPGroup create nothing.
 *
 * How a pod runs (Skep's choice: ToolHive's proxy runner instead creates a StatefulSet for the
 * server through the Kubernetes API):
 *  - stdio MCPServer: one container `mcp` from the server's image; the Skep runner starts the
 *    server as a child process in it. An init container from the runner image copies a
 *    self-contained runner (node, the shared libraries it was loaded with, the bundle and its
 *    dependencies) into an emptyDir at `/skep`, and `mcp` runs it through the copied dynamic
 *    loader, so the server's image needs no Node and no particular libc.
 *  - streamable-http / sse MCPServer: container `mcp` (the server, on mcpPort) and container
 *    `skep-runner` (the runner image) proxying to it over the pod's loopback.
 *  - MCPRemoteProxy: container `skep-runner` only; VirtualMCPServer: container `vmcp` only.
 * The runner reads `/etc/runconfig/runconfig.json` (`skep operator pod-runner`). Secret
 * values never enter a ConfigMap: the run configuration names environment variables that
 * the Deployment fills from `secretKeyRef`, or files from Secret volumes. A changed run
 * configuration or a changed referenced MCPExternalAuthConfig (`configHash`) changes the
 * pod-template annotations, which rolls the Deployment.
 */
import { createHash } from 'node:crypto';
import { stringify } from 'yaml';
import { EXTAUTH_KIND } from '../../schemas/extauth/index.js';
import type {
  MCPRemoteProxySpec,
  MCPServerSpec,
  VirtualMCPServerSpec,
} from '../../schemas/workloads/index.js';
import { canonicalJson, configHash } from './config-hash.js';
import { formatProblem } from './validate.js';
import { buildRunConfigAuth, envName, type SecretEnv, type SecretFile } from './runconfig.js';
import { type BackendAuthStrategy, parseVmcpConfig } from '../../dataplane/vmcp/index.js';
import { vmcpStrategyFor } from './vmcp-auth.js';
import { foreignResource, validateResource } from './resource-validate.js';
import { isRecord } from '../../shared/index.js';
import { documentValue, Index, keyOf, secretReader } from './render-index.js';
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

export { type K8sObject, mergePodTemplate, type RenderResult } from './render-common.js';
import { type RefPaths, resolveSharedRefs, type SharedRefFields } from './shared-refs.js';
import { renderEmbeddingServer, renderRegistry } from './render-embedding-registry.js';
import { createImageCommandReader, type ImageCommand, type ImageCommandReader } from './image-command.js';

type Node = Record<string, unknown>;

export const DEFAULT_RUNNER_IMAGE = 'ghcr.io/skep-dev/skep:latest';
/** Env var of the operator naming the runner image (Helm value `operator.runnerImage`). */
export const RUNNER_IMAGE_ENV = 'SKEP_RUNNER_IMAGE';

export const RUNCONFIG_DIR = '/etc/runconfig';
export const RUNCONFIG_KEY = 'runconfig.json';
export const VMCP_CONFIG_DIR = '/etc/vmcp-config';
export const VMCP_PORT = 4483;
/** Where the init container puts the self-contained runner in a stdio server's container. */
export const RUNNER_COPY_DIR = '/skep';

export const ANNOTATIONS = {
  contentChecksum: 'skep.dev/content-checksum',
  runconfigChecksum: 'skep.dev/runconfig-checksum',
  externalAuthHash: 'skep.dev/external-auth-config-hash',
  authServerHash: 'skep.dev/auth-server-config-hash',
  generation: 'skep.dev/generation',
  compositeToolsHash: 'skep.dev/composite-tools-hash',
} as const;

/** In-cluster base URL of an EmbeddingServer's Service (what its status.url says). */
export function embeddingServerUrl(emb: Node, namespace: string): string {
  const port = Number(((emb['spec'] ?? {}) as Node)['port'] ?? 8080);
  return `http://${nameOf(emb)}.${namespace}.svc.cluster.local:${port}`;
}

export interface RenderOptions {
  runnerImage?: string;
  /** Namespace of resources that name none. */
  namespace?: string;
  /** Image of the vMCP pod (default: the runner image; it runs `skep operator pod-runner`). */
  vmcpImage?: string;
  /**
   * Reads a stdio image's entrypoint when its MCPServer names no `command` (default: from the
   * image's registry, cached by digest).
   */
  readImageCommand?: ImageCommandReader;
  /** Never read a registry: a stdio MCPServer without `command` is a problem naming its image. */
  offline?: boolean;
  /** Reads a Secret absent from the documents (the controller: from the API), for image pull secrets. */
  readSecret?: (namespace: string, name: string) => Promise<Record<string, Buffer> | undefined>;
}

/** The options every render function sees. */
interface Resolved {
  runnerImage: string;
  namespace: string;
  vmcpImage: string;
  readImageCommand: ImageCommandReader | undefined;
  readSecret: RenderOptions['readSecret'];
}

let defaultReader: ImageCommandReader | undefined;
/** One reader per process, so its digest cache serves every reconcile. */
function defaultImageCommandReader(): ImageCommandReader {
  defaultReader ??= createImageCommandReader();
  return defaultReader;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Stable checksum of a ConfigMap's data (sorted keys). */
export function dataChecksum(data: Record<string, string>): string {
  return sha256(canonicalJson(data));
}

interface PodWiring {
  env: Node[];
  volumes: Node[];
  mounts: Node[];
}

/** Secret env vars and files → container env (secretKeyRef) and read-only Secret volumes. */
function wireSecrets(env: SecretEnv[], files: SecretFile[]): PodWiring {
  const out: PodWiring = { env: [], volumes: [], mounts: [] };
  for (const e of env)
    out.env.push({
      name: e.name,
      valueFrom: { secretKeyRef: { name: e.secretRef.name, key: e.secretRef.key } },
    });
  files.forEach((f, i) => {
    const slash = f.path.lastIndexOf('/');
    const volume = `secret-file-${i}`;
    out.volumes.push({
      name: volume,
      secret: {
        secretName: f.secretRef.name,
        items: [{ key: f.secretRef.key, path: f.path.slice(slash + 1) }],
        defaultMode: 0o400,
      },
    });
    out.mounts.push({ name: volume, mountPath: f.path, subPath: f.path.slice(slash + 1), readOnly: true });
  });
  return out;
}

/** The runner's only writable place (its private store, logs): small, in memory, mode 1777. */
const TMP_VOLUME = { name: 'tmp', emptyDir: { medium: 'Memory', sizeLimit: '64Mi' } };

const DEFAULT_RESOURCES = {
  requests: { cpu: '50m', memory: '64Mi' },
  limits: { cpu: '500m', memory: '256Mi' },
};

const RUNNER_SECURITY = {
  allowPrivilegeEscalation: false,
  runAsNonRoot: true,
  runAsUser: 65532,
  runAsGroup: 65532,
  capabilities: { drop: ['ALL'] },
};

function probes(portName: string): Node {
  const get = { httpGet: { path: '/health', port: portName } };
  return {
    startupProbe: { ...get, periodSeconds: 2, failureThreshold: 60 },
    readinessProbe: { ...get, periodSeconds: 5 },
    livenessProbe: { ...get, periodSeconds: 10, failureThreshold: 3 },
  };
}

interface Shared {
  runConfig: Node;
  wiring: PodWiring;
  annotations: Record<string, string>;
  problems: string[];
}

/** The run-configuration fields MCPServer and MCPRemoteProxy share, with their pod wiring. */
/** The runner fields every rendered workload shares (a VirtualMCPServer maps its own onto them). */
type RunnerFields = Pick<
  MCPRemoteProxySpec,
  | 'trustProxyHeaders'
  | 'oidcConfig'
  | 'audit'
  | 'telemetry'
  | 'sessionStorage'
  | 'externalAuthConfigRef'
  | 'authServerRef'
  | 'groupRef'
  | 'proxyPort'
> &
  SharedRefFields & { endpointPrefix?: string };

async function sharedRunConfig(
  cr: Node,
  spec: RunnerFields,
  index: Index,
  namespace: string,
  paths: RefPaths = {},
): Promise<Shared> {
  const name = nameOf(cr);
  const problems: string[] = [];
  const env: SecretEnv[] = [];
  const files: SecretFile[] = [];
  const annotations: Record<string, string> = {};
  const rc: Node = {
    schema_version: 'v0.1.0',
    name,
    group: spec.groupRef?.name ?? 'default',
    // In a pod the Service sends traffic to the pod IP: the runner listens on every interface.
    host: '0.0.0.0',
    port: spec.proxyPort,
    env_vars: {},
    secrets: [],
    volumes: [],
    container_labels: {},
    permission_profile: {},
  };
  if (spec.trustProxyHeaders !== undefined) rc['trust_proxy_headers'] = spec.trustProxyHeaders;
  const o = spec.oidcConfig;
  if (o !== undefined) {
    rc['oidc_config'] = Object.fromEntries(
      Object.entries({
        issuer: o.issuer,
        audience: o.audience,
        jwksurl: o.jwksUrl,
        introspectionURL: o.introspectionUrl,
        clientID: o.clientId,
        resourceURL: o.resourceUrl,
        scopes: o.scopes,
      }).filter(([, v]) => v !== undefined),
    );
  }
  if (spec.audit?.enabled === true) rc['audit_config'] = { enabled: true, component: name };
  const t = spec.telemetry;
  if (t !== undefined) {
    rc['telemetry_config'] = Object.fromEntries(
      Object.entries({
        endpoint: t.endpoint,
        serviceName: t.serviceName ?? name,
        insecure: t.insecure,
        tracingEnabled: t.tracingEnabled,
        metricsEnabled: t.metricsEnabled,
        samplingRate: t.samplingRate,
        enablePrometheusMetricsPath: t.prometheusMetricsPath,
      }).filter(([, v]) => v !== undefined),
    );
  }
  const ss = spec.sessionStorage;
  if (ss?.provider === 'redis') {
    rc['scaling_config'] = {
      session_redis: Object.fromEntries(
        Object.entries({ address: ss.address, db: ss.db, key_prefix: ss.keyPrefix }).filter(
          ([, v]) => v !== undefined,
        ),
      ),
    };
    if (ss.passwordRef !== undefined)
      env.push({ name: 'SKEP_SESSION_REDIS_PASSWORD', secretRef: ss.passwordRef });
  }
  // Referenced MCPExternalAuthConfigs: outgoing auth (externalAuthConfigRef) and the embedded
  // authorization server (authServerRef), mapped by the same code as `skep extauth`.
  const refs: Array<[string, string, string]> = [];
  if (spec.externalAuthConfigRef !== undefined)
    refs.push(['spec.externalAuthConfigRef', spec.externalAuthConfigRef.name, ANNOTATIONS.externalAuthHash]);
  if (spec.authServerRef !== undefined && spec.authServerRef.name !== spec.externalAuthConfigRef?.name)
    refs.push(['spec.authServerRef', spec.authServerRef.name, ANNOTATIONS.authServerHash]);
  for (const [field, refName, annotation] of refs) {
    const config = index.get(EXTAUTH_KIND, namespace, refName);
    if (config === undefined) {
      problems.push(`${field}: MCPExternalAuthConfig ${namespace}/${refName} does not exist`);
      continue;
    }
    try {
      const auth = await buildRunConfigAuth(config, secretReader(index), { secretValues: false });
      Object.assign(rc, mergeAuth(rc, auth.runConfig));
      env.push(...auth.env);
      files.push(...auth.files);
      const status = config['status'] as Node | undefined;
      annotations[annotation] =
        typeof status?.['configHash'] === 'string' ? status['configHash'] : configHash(config['spec']);
    } catch (err) {
      problems.push(`${field}: ${(err as Error).message}`);
    }
  }
  if (spec.endpointPrefix !== undefined && spec.endpointPrefix !== '')
    problems.push(
      'spec.endpointPrefix: the Skep runner serves /mcp and /sse at the root of its port and does not prefix the SSE endpoint URL yet; route the prefix in the ingress without stripping it, and remove endpointPrefix',
    );
  // Shared configurations by reference (and inline authorization / rate limits).
  const shared = resolveSharedRefs(spec, { index, namespace, workload: name, paths });
  problems.push(...shared.problems);
  Object.assign(rc, shared.runConfig);
  env.push(...shared.env);
  files.push(...shared.files);
  Object.assign(annotations, shared.annotations);
  const wiring = wireSecrets(env, files);
  wiring.env.push(...shared.plainEnv);
  wiring.volumes.push(...shared.volumes);
  wiring.mounts.push(...shared.mounts);
  return { runConfig: rc, wiring, annotations, problems };
}

/** header_forward blocks from several sources merge; other blocks are set once. */
function mergeAuth(rc: Node, add: Node): Node {
  const out: Node = { ...add };
  const a = rc['header_forward'] as Node | undefined;
  const b = add['header_forward'] as Node | undefined;
  if (a !== undefined && b !== undefined) {
    out['header_forward'] = {
      add_plaintext_headers: {
        ...((a['add_plaintext_headers'] as Node) ?? {}),
        ...((b['add_plaintext_headers'] as Node) ?? {}),
      },
      add_headers_from_secret: {
        ...((a['add_headers_from_secret'] as Node) ?? {}),
        ...((b['add_headers_from_secret'] as Node) ?? {}),
      },
    };
  }
  return out;
}

/** Where a pod reads its run configuration: a ConfigMap mounted read-only at `dir`. */
interface MountedConfig {
  volume: string;
  configMap: string;
  dir: string;
}

const configVolume = (c: MountedConfig) => ({ name: c.volume, configMap: { name: c.configMap } });
const configMount = (c: MountedConfig) => ({ name: c.volume, mountPath: c.dir, readOnly: true });
const TMP_MOUNT = { name: 'tmp', mountPath: '/tmp' };

/** The ConfigMap holding the run configuration `rc`, with the checksum that rolls its pods. */
function runconfigMap(cr: Node, config: MountedConfig, namespace: string, rc: Node): K8sObject {
  const data = { [RUNCONFIG_KEY]: `${JSON.stringify(rc, null, 2)}\n` };
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: meta(cr, config.configMap, namespace, {
      annotations: { [ANNOTATIONS.contentChecksum]: dataChecksum(data) },
    }),
    data,
  };
}

function serviceAccount(cr: Node, name: string, namespace: string): K8sObject {
  return {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: meta(cr, name, namespace),
    // The runner never calls the Kubernetes API: no token in its pods.
    automountServiceAccountToken: false,
  };
}

function service(
  cr: Node,
  name: string,
  namespace: string,
  port: number,
  affinity: string | undefined,
  type = 'ClusterIP',
): K8sObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(cr, name, namespace),
    spec: {
      type,
      selector: selectorOf(cr),
      ports: [{ name: 'http', port, targetPort: 'http', protocol: 'TCP' }],
      sessionAffinity: affinity ?? 'ClientIP',
    },
  };
}

function deployment(
  cr: Node,
  namespace: string,
  replicas: number,
  podSpec: Node,
  podAnnotations: Record<string, string>,
  patch: Node | undefined,
): K8sObject {
  const crName = nameOf(cr);
  const template = mergePodTemplate(
    {
      metadata: { labels: labelsFor(String(cr['kind']), crName), annotations: podAnnotations },
      spec: podSpec,
    },
    patch,
  );
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(cr, crName, namespace),
    spec: {
      replicas,
      selector: { matchLabels: selectorOf(cr) },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template,
    },
  };
}

const contentChecksumOf = (cm: K8sObject) =>
  (cm.metadata.annotations ?? {})[ANNOTATIONS.contentChecksum] ?? '';

/** Pod-template annotations of a server or remote proxy: a change to any of them rolls its pods. */
function rolloutAnnotations(cr: Node, cm: K8sObject, shared: Shared): Record<string, string> {
  return {
    [ANNOTATIONS.runconfigChecksum]: contentChecksumOf(cm),
    [ANNOTATIONS.generation]: String((cr['metadata'] as Node)['generation'] ?? 1),
    ...shared.annotations,
  };
}

/** A rendered pod: its own ServiceAccount, whose token is never mounted. */
function podSpecOf(
  serviceAccountName: string,
  parts: { initContainers?: Node[]; containers: Node[]; volumes: Node[] },
): Node {
  return Object.assign(
    { serviceAccountName, automountServiceAccountToken: false, terminationGracePeriodSeconds: 30 },
    parts,
  );
}

/** `skep operator pod-runner` reading the run configuration mounted at `dir`. */
const runnerArgs = (dir: string) => ['operator', 'pod-runner', '--config', `${dir}/${RUNCONFIG_KEY}`];

/** The container of the Skep runner image: `skep operator pod-runner` serving on port `http`. */
function runnerContainer(c: {
  name: string;
  image: string;
  config: MountedConfig;
  port: number;
  env: Node[];
  mounts: Node[];
  resources: unknown;
}): Node {
  return {
    name: c.name,
    image: c.image,
    args: runnerArgs(c.config.dir),
    env: c.env,
    ports: [{ name: 'http', containerPort: c.port, protocol: 'TCP' }],
    volumeMounts: [configMount(c.config), TMP_MOUNT, ...c.mounts],
    resources: c.resources,
    ...probes('http'),
    securityContext: RUNNER_SECURITY,
  };
}

/** A workload's objects: its ConfigMap, ServiceAccount `sa` (unless the spec names one), Deployment, Service. */
function workloadObjects(
  cr: Node,
  namespace: string,
  spec: { serviceAccount?: string; podTemplateSpec?: unknown },
  w: {
    cm: K8sObject;
    sa: string;
    replicas: number;
    podSpec: Node;
    podAnnotations: Record<string, string>;
    service: K8sObject;
  },
): K8sObject[] {
  const objects: K8sObject[] = [w.cm];
  if (spec.serviceAccount === undefined) objects.push(serviceAccount(cr, w.sa, namespace));
  const patch = spec.podTemplateSpec as Node | undefined;
  objects.push(deployment(cr, namespace, w.replicas, w.podSpec, w.podAnnotations, patch), w.service);
  return objects;
}

/** The run configuration of a server or remote proxy, as its pod mounts it. */
const runconfigOf = (name: string): MountedConfig => ({
  volume: 'runconfig',
  configMap: `${name}-runconfig`,
  dir: RUNCONFIG_DIR,
});
/** How the server's container runs the copied runner (deploy/image/install-runner.mjs). */
const RUNNER_COPY_COMMAND = [
  `${RUNNER_COPY_DIR}/lib/ld.so`,
  '--library-path',
  `${RUNNER_COPY_DIR}/lib`,
  `${RUNNER_COPY_DIR}/bin/node`,
  `${RUNNER_COPY_DIR}/app/dist/skep.mjs`,
  ...runnerArgs(RUNCONFIG_DIR),
];
/**
 * Env of the stdio server's container, which runs the copied runner in the server's image:
 * its store goes to the `tmp` emptyDir. Containers of the Skep image use the image's
 * HOME/SKEP_HOME (/var/lib/skep, owned by the image's non-root user).
 */
const baseEnv = [
  { name: 'HOME', value: '/tmp' },
  { name: 'SKEP_HOME', value: '/tmp/skep' },
];

/** The command of a stdio image without `spec.command`, or the problem saying why there is none. */
async function imageCommand(
  image: string,
  read: ImageCommandReader | undefined,
  pullSecrets: unknown[],
): Promise<ImageCommand | string> {
  if (read === undefined)
    return `spec.command: image ${image} needs a command: its entrypoint is not read offline`;
  try {
    return await read(image, pullSecrets);
  } catch (err) {
    return `spec.command: cannot read the entrypoint of image ${image} (${(err as Error).message}); set spec.command`;
  }
}

/** First port the runner sidecar may try when `proxyPort` is taken inside the pod. */
export const SIDECAR_PORT_BASE = 8081;

/**
 * The port the runner sidecar of an HTTP server listens on inside the pod. The Service keeps
 * `proxyPort` as its port and targets the sidecar's port by name (`http`), so the two may differ.
 * The sidecar uses `proxyPort` unless the server already listens there (`mcpPort`, or a container
 * port the `podTemplateSpec` declares) — the reference runs the server in a pod of its own, so
 * its manifests may give both the same number; then it uses the first port from 8081 up that is
 * neither. Deterministic, so the same resource always renders the same pod.
 */
export function sidecarPort(proxyPort: number, mcpPort: number, podTemplateSpec: unknown): number {
  const taken = new Set([mcpPort, ...declaredContainerPorts(podTemplateSpec)]);
  if (!taken.has(proxyPort)) return proxyPort;
  let port = SIDECAR_PORT_BASE;
  while (taken.has(port)) port++;
  return port;
}

/** The `containerPort`s of every container (but the runner's) in a pod template patch. */
function declaredContainerPorts(podTemplateSpec: unknown): number[] {
  const spec = isRecord(podTemplateSpec) ? podTemplateSpec['spec'] : undefined;
  const containers = isRecord(spec) && Array.isArray(spec['containers']) ? spec['containers'] : [];
  const out: number[] = [];
  for (const c of containers) {
    if (!isRecord(c) || c['name'] === 'skep-runner' || !Array.isArray(c['ports'])) continue;
    for (const p of c['ports'])
      if (isRecord(p) && typeof p['containerPort'] === 'number') out.push(p['containerPort']);
  }
  return out;
}

/** The pod's image pull secrets: resourceOverrides first, then the podTemplateSpec's (by name). */
function pullSecretNames(spec: {
  resourceOverrides?: MCPServerSpec['resourceOverrides'];
  podTemplateSpec?: unknown;
}): string[] {
  const names = (spec.resourceOverrides?.proxyDeployment?.imagePullSecrets ?? []).map((s) => s.name);
  const pts = isRecord(spec.podTemplateSpec) ? spec.podTemplateSpec['spec'] : undefined;
  const listed = isRecord(pts) && Array.isArray(pts['imagePullSecrets']) ? pts['imagePullSecrets'] : [];
  for (const s of listed) if (isRecord(s) && typeof s['name'] === 'string') names.push(s['name']);
  return [...new Set(names)];
}

/** The `.dockerconfigjson` of each pull secret that can be read (from the documents, else the API). */
async function dockerConfigs(
  names: string[],
  index: Index,
  namespace: string,
  o: Resolved,
): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const name of names) {
    let bytes = documentValue(index.get('Secret', namespace, name), '.dockerconfigjson');
    if (bytes === undefined) bytes = (await o.readSecret?.(namespace, name))?.['.dockerconfigjson'];
    if (bytes === undefined) continue;
    try {
      out.push(JSON.parse(bytes.toString('utf8')));
    } catch {
      // Not a docker config: the kubelet could not use it either; the registry's answer says so.
    }
  }
  return out;
}

/** Names of the volumes the rendered pods use themselves. */
const RESERVED_VOLUMES = new Set(['runconfig', 'tmp', 'skep', 'ca-bundle', 'vmcp-config']);

/** `spec.resourceOverrides` applied to rendered objects (labels, annotations, runner env, pull secrets). */
function applyResourceOverrides(
  objects: K8sObject[],
  overrides: MCPServerSpec['resourceOverrides'],
  runner: string,
): void {
  if (overrides === undefined) return;
  const d = overrides.proxyDeployment;
  const merge = (target: Node, key: string, add: Record<string, string> | undefined, keep: string[] = []) => {
    if (add === undefined) return;
    const current = (target[key] ?? {}) as Record<string, string>;
    const next = { ...current, ...add };
    for (const k of keep) if (current[k] !== undefined) next[k] = current[k]; // the selector stays
    target[key] = next;
  };
  const selectorKeys = ['app.kubernetes.io/name', 'app.kubernetes.io/instance'];
  for (const obj of objects) {
    const m = obj.metadata as unknown as Node;
    if (obj.kind === 'Deployment' && d !== undefined) {
      merge(m, 'labels', d.labels, selectorKeys);
      merge(m, 'annotations', d.annotations);
      const template = (obj['spec'] as Node)['template'] as Node;
      const tm = template['metadata'] as Node;
      merge(tm, 'labels', d.podTemplateMetadataOverrides?.labels, selectorKeys);
      merge(tm, 'annotations', d.podTemplateMetadataOverrides?.annotations);
      const pod = template['spec'] as Node;
      const container = (pod['containers'] as Node[]).find((c) => c['name'] === runner);
      if (container !== undefined && d.env !== undefined) {
        const env = ((container['env'] ?? []) as Node[]).filter(
          (e) => !d.env!.some((x) => x.name === e['name']),
        );
        container['env'] = [...env, ...d.env.map((e) => ({ name: e.name, value: e.value }))];
      }
      if (d.imagePullSecrets !== undefined && d.imagePullSecrets.length > 0) {
        const have = ((pod['imagePullSecrets'] ?? []) as Node[]).filter(
          (x) => !d.imagePullSecrets!.some((y) => y.name === x['name']),
        );
        pod['imagePullSecrets'] = [...d.imagePullSecrets.map((x) => ({ name: x.name })), ...have];
      }
    }
    if (obj.kind === 'ServiceAccount' && d?.imagePullSecrets !== undefined && d.imagePullSecrets.length > 0)
      (obj as unknown as Node)['imagePullSecrets'] = d.imagePullSecrets.map((x) => ({ name: x.name }));
    if (obj.kind === 'Service' && overrides.proxyService !== undefined) {
      merge(m, 'labels', overrides.proxyService.labels, selectorKeys);
      merge(m, 'annotations', overrides.proxyService.annotations);
    }
  }
}

async function renderMCPServer(cr: Node, index: Index, o: Resolved): Promise<RenderResult> {
  const namespace = index.ns(cr);
  const name = nameOf(cr);
  const spec = cr['spec'] as MCPServerSpec;
  const shared = await sharedRunConfig(cr, spec, index, namespace);
  const problems = [...shared.problems];
  const rc = shared.runConfig;
  const envVars: Record<string, string> = {};
  for (const e of spec.env ?? []) envVars[e.name] = e.value;
  // The server's own secrets: env of the pod named SKEP_SECRET_<TARGET>, which the run
  // configuration hands to the server as <TARGET> (secrets "<name>,target=<TARGET>").
  const secretEnv: SecretEnv[] = [];
  const serverSecrets: string[] = [];
  for (const s of spec.secrets ?? []) {
    const target = s.targetEnvName ?? s.key;
    const podVar = envName('SKEP_SECRET', target);
    secretEnv.push({ name: podVar, secretRef: { name: s.name, key: s.key } });
    serverSecrets.push(`${podVar},target=${target}`);
  }
  const profile = spec.permissionProfile;
  if (profile !== undefined && !(profile.type === 'builtin' && profile.name === 'network')) {
    problems.push(
      'spec.permissionProfile: only builtin "network" (no restriction beyond the pod) is supported in Kubernetes; restrict the pod with a NetworkPolicy instead',
    );
  }
  if (
    spec.replicas !== undefined &&
    spec.backendReplicas !== undefined &&
    spec.replicas !== spec.backendReplicas
  ) {
    problems.push(
      'spec.backendReplicas: each Skep pod runs one proxy and one server, so replicas and backendReplicas must be equal (set one of them)',
    );
  }
  const replicas = spec.backendReplicas ?? spec.replicas ?? 1;
  const mcpPort = spec.mcpPort ?? 8081;
  const stdio = spec.transport === 'stdio';
  const runnerPort = stdio ? spec.proxyPort : sidecarPort(spec.proxyPort, mcpPort, spec.podTemplateSpec);
  // The image and the command its container runs: `spec.command` (Skep's explicit override), else
  // the image's own entrypoint and cmd read from its registry, with the pod pinned to that digest.
  // As in a container, `spec.args` replaces the image's cmd and follows its entrypoint.
  let image = spec.image;
  let full = [...(spec.command ?? []), ...(spec.args ?? [])];
  if (stdio && spec.command === undefined) {
    const pull = await dockerConfigs(pullSecretNames(spec), index, namespace, o);
    const read = await imageCommand(spec.image, o.readImageCommand, pull);
    if (typeof read === 'string') problems.push(read);
    else {
      image = read.pinned;
      full = [...read.entrypoint, ...(spec.args ?? read.cmd)];
      if (full.length === 0)
        problems.push(`spec.command: image ${spec.image} has no entrypoint or cmd; set spec.command`);
    }
  }
  if (stdio) {
    const [command = '', ...rest] = full;
    Object.assign(rc, {
      image: `cmd://${command}`,
      cmd_args: rest,
      transport: 'stdio',
      proxy_mode: spec.proxyMode ?? 'streamable-http',
      env_vars: envVars,
      secrets: serverSecrets,
    });
  } else {
    Object.assign(rc, {
      image: spec.image,
      cmd_args: [],
      transport: spec.transport,
      remote_url: `http://127.0.0.1:${mcpPort}/${spec.transport === 'sse' ? 'sse' : 'mcp'}`,
      port: runnerPort,
    });
  }
  const config = runconfigOf(name);
  const cm = runconfigMap(cr, config, namespace, rc);
  const sa = spec.serviceAccount ?? `${name}-proxy-runner`;
  const serverSecretWiring = wireSecrets(secretEnv, []);
  const resources = spec.resources ?? DEFAULT_RESOURCES;
  let podSpec: Node;
  if (stdio) {
    podSpec = podSpecOf(sa, {
      initContainers: [
        {
          name: 'skep-install',
          image: o.runnerImage,
          command: ['node', '/opt/skep/install-runner.mjs', RUNNER_COPY_DIR],
          volumeMounts: [{ name: 'skep', mountPath: RUNNER_COPY_DIR }],
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        },
      ],
      containers: [
        {
          name: 'mcp',
          image,
          command: RUNNER_COPY_COMMAND,
          env: [...baseEnv, ...shared.wiring.env, ...serverSecretWiring.env],
          ports: [{ name: 'http', containerPort: spec.proxyPort, protocol: 'TCP' }],
          volumeMounts: [
            configMount(config),
            { name: 'skep', mountPath: RUNNER_COPY_DIR, readOnly: true },
            TMP_MOUNT,
            ...shared.wiring.mounts,
          ],
          resources,
          ...probes('http'),
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        },
      ],
      volumes: [configVolume(config), { name: 'skep', emptyDir: {} }, TMP_VOLUME, ...shared.wiring.volumes],
    });
  } else {
    podSpec = podSpecOf(sa, {
      containers: [
        {
          name: 'mcp',
          image: spec.image,
          ...(spec.args === undefined ? {} : { args: spec.args }),
          env: [
            ...(spec.env ?? []).map((e) => ({ name: e.name, value: e.value })),
            { name: 'MCP_PORT', value: String(mcpPort) },
            { name: 'PORT', value: String(mcpPort) },
            ...(spec.secrets ?? []).map((s) => ({
              name: s.targetEnvName ?? s.key,
              valueFrom: { secretKeyRef: { name: s.name, key: s.key } },
            })),
          ],
          ports: [{ name: 'mcp', containerPort: mcpPort, protocol: 'TCP' }],
        },
        runnerContainer({
          name: 'skep-runner',
          image: o.runnerImage,
          config,
          port: runnerPort,
          env: [...shared.wiring.env],
          mounts: shared.wiring.mounts,
          resources,
        }),
      ],
      volumes: [configVolume(config), TMP_VOLUME, ...shared.wiring.volumes],
    });
  }
  // spec.volumes: hostPath volumes mounted in the server's container.
  for (const [i, v] of (spec.volumes ?? []).entries()) {
    if (RESERVED_VOLUMES.has(v.name) || v.name.startsWith('secret-file-')) {
      problems.push(`spec.volumes[${i}].name: "${v.name}" is a volume Skep's pod uses itself; rename it`);
      continue;
    }
    (podSpec['volumes'] as Node[]).push({ name: v.name, hostPath: { path: v.hostPath } });
    const mcp = (podSpec['containers'] as Node[]).find((c) => c['name'] === 'mcp')!;
    mcp['volumeMounts'] = [
      ...((mcp['volumeMounts'] ?? []) as Node[]),
      { name: v.name, mountPath: v.mountPath, readOnly: v.readOnly ?? false },
    ];
  }
  const objects = workloadObjects(cr, namespace, spec, {
    cm,
    sa,
    replicas,
    podSpec,
    podAnnotations: rolloutAnnotations(cr, cm, shared),
    service: service(cr, `mcp-${name}-proxy`, namespace, spec.proxyPort, spec.sessionAffinity),
  });
  applyResourceOverrides(objects, spec.resourceOverrides, stdio ? 'mcp' : 'skep-runner');
  const path = (stdio ? spec.proxyMode : spec.transport) === 'sse' ? `/sse#${name}` : '/mcp';
  const url = `http://mcp-${name}-proxy.${namespace}.svc.cluster.local:${spec.proxyPort}${path}`;
  return rendered('MCPServer', namespace, name, objects, url, problems);
}

async function renderRemoteProxy(cr: Node, index: Index, o: Resolved): Promise<RenderResult> {
  const namespace = index.ns(cr);
  const name = nameOf(cr);
  const spec = cr['spec'] as MCPRemoteProxySpec;
  const shared = await sharedRunConfig(cr, spec, index, namespace);
  const rc = shared.runConfig;
  Object.assign(rc, { image: '', cmd_args: [], transport: spec.transport, remote_url: spec.remoteUrl });
  const hf = spec.headerForward;
  const headerEnv: SecretEnv[] = [];
  if (hf !== undefined) {
    const fromSecret: Record<string, string> = {};
    for (const h of hf.addHeadersFromSecret ?? []) {
      const variable = envName('SKEP_HEADER_FORWARD', h.headerName);
      headerEnv.push({ name: variable, secretRef: h.valueSecretRef });
      fromSecret[h.headerName] = variable;
    }
    Object.assign(
      rc,
      mergeAuth(rc, {
        header_forward: {
          add_plaintext_headers: hf.addPlaintextHeaders ?? {},
          add_headers_from_secret: fromSecret,
        },
      }),
    );
    if (rc['header_forward'] === undefined)
      rc['header_forward'] = {
        add_plaintext_headers: hf.addPlaintextHeaders ?? {},
        add_headers_from_secret: fromSecret,
      };
  }
  const headerWiring = wireSecrets(headerEnv, []);
  const config = runconfigOf(name);
  const cm = runconfigMap(cr, config, namespace, rc);
  const sa = spec.serviceAccount ?? `${name}-remote-proxy-runner`;
  const podSpec = podSpecOf(sa, {
    containers: [
      runnerContainer({
        name: 'skep-runner',
        image: o.runnerImage,
        config,
        port: spec.proxyPort,
        env: [...shared.wiring.env, ...headerWiring.env],
        mounts: shared.wiring.mounts,
        resources: spec.resources ?? DEFAULT_RESOURCES,
      }),
    ],
    volumes: [configVolume(config), TMP_VOLUME, ...shared.wiring.volumes],
  });
  const objects = workloadObjects(cr, namespace, spec, {
    cm,
    sa,
    replicas: spec.replicas ?? 1,
    podSpec,
    podAnnotations: rolloutAnnotations(cr, cm, shared),
    service: service(cr, `mcp-${name}-remote-proxy`, namespace, spec.proxyPort, spec.sessionAffinity),
  });
  applyResourceOverrides(objects, spec.resourceOverrides, 'skep-runner');
  const url = `http://mcp-${name}-remote-proxy.${namespace}.svc.cluster.local:${spec.proxyPort}${spec.transport === 'sse' ? `/sse#${name}` : '/mcp'}`;
  return rendered('MCPRemoteProxy', namespace, name, objects, url, shared.problems);
}

/** A group's backends, as a VirtualMCPServer in discovered mode sees them. */
export function groupBackends(
  index: { of(kind: string): Node[]; ns(d: Node): string },
  namespace: string,
  group: string,
): Node[] {
  const out: Node[] = [];
  for (const kind of ['MCPServer', 'MCPRemoteProxy', 'MCPServerEntry']) {
    for (const d of index.of(kind)) {
      const spec = (d['spec'] ?? {}) as Node;
      if (index.ns(d) !== namespace || (spec['groupRef'] as Node | undefined)?.['name'] !== group) continue;
      const n = String((d['metadata'] as Node)['name']);
      const port = Number(spec['proxyPort'] ?? 8080);
      const url =
        kind === 'MCPServer'
          ? `http://mcp-${n}-proxy.${namespace}.svc.cluster.local:${port}/mcp`
          : kind === 'MCPRemoteProxy'
            ? `http://mcp-${n}-remote-proxy.${namespace}.svc.cluster.local:${port}/mcp`
            : String(spec['remoteUrl']);
      const auth = (spec['externalAuthConfigRef'] as Node | undefined)?.['name'];
      out.push({
        name: n,
        kind,
        url,
        transport: kind === 'MCPServerEntry' ? String(spec['transport']) : 'streamable-http',
        ...(typeof auth === 'string' ? { authConfigRef: auth } : {}),
      });
    }
  }
  return out.sort((a, b) => String(a['name']).localeCompare(String(b['name'])));
}

/** Keys of `spec.config` the operator sets itself, from the fields named here. */
const VMCP_OPERATOR_KEYS: Record<string, string> = {
  backends: "spec.groupRef (the group's members are the backends)",
  groupRef: 'spec.groupRef',
  outgoingAuth: "spec.outgoingAuth and the members' externalAuthConfigRef",
  incomingAuth: 'spec.incomingAuth',
};

/**
 * A VirtualMCPServer runs the Skep runner like every other pod, with a run configuration whose
 * `vmcp` block the operator resolves here: the group's members as static `backends[]` (their
 * Service URLs) and their outgoing auth as inline strategies (ToolHive's `spec.outgoingAuth`:
 * `default`, then each member's own `externalAuthConfigRef`). A member whose auth cannot be
 * expressed is left out (never called with the default identity). A change to the group, a member
 * or a referenced config changes the ConfigMap, so the pod rolls (the reference's inline mode; the
 * pod itself never reads the Kubernetes API, so its token is not mounted).
 */
async function renderVirtual(cr: Node, index: Index, o: Resolved): Promise<RenderResult> {
  const namespace = index.ns(cr);
  const name = nameOf(cr);
  const spec = cr['spec'] as VirtualMCPServerSpec;
  const problems: string[] = [];
  const group = spec.groupRef.name;
  if (index.get('MCPGroup', namespace, group) === undefined)
    problems.push(`spec.groupRef: MCPGroup ${namespace}/${group} does not exist`);
  const userConfig = (spec.config as Node | undefined) ?? {};
  for (const [key, from] of Object.entries(VMCP_OPERATOR_KEYS))
    if (userConfig[key] !== undefined)
      problems.push(`spec.config.${key}: set by the operator from ${from}; remove it`);
  if ((spec.passthroughHeaders ?? []).length > 0)
    problems.push('spec.passthroughHeaders: client headers are not forwarded to backends; remove it');

  const warnings: string[] = [];
  const env: SecretEnv[] = [];
  const hashes: string[] = [];
  let compositeHash: string | undefined;
  const toolConfigHashes: string[] = [];
  const strategyOf = async (
    field: string,
    ref: string,
    sink: string[],
  ): Promise<BackendAuthStrategy | undefined> => {
    const config = index.get(EXTAUTH_KIND, namespace, ref);
    if (config === undefined) {
      sink.push(`${field}: MCPExternalAuthConfig ${namespace}/${ref} does not exist`);
      return undefined;
    }
    try {
      const resolved = await vmcpStrategyFor(config, secretReader(index));
      env.push(...resolved.env.filter((e) => !env.some((x) => x.name === e.name)));
      const status = config['status'] as Node | undefined;
      hashes.push(
        typeof status?.['configHash'] === 'string' ? status['configHash'] : configHash(config['spec']),
      );
      return resolved.strategy;
    } catch (err) {
      sink.push(`${field}: ${(err as Error).message}`);
      return undefined;
    }
  };
  const outgoing: Node = { source: 'inline' };
  const d = spec.outgoingAuth?.default;
  if (d?.type === 'unauthenticated') outgoing['default'] = { type: 'unauthenticated' };
  else if (d?.type === 'externalAuthConfigRef') {
    const ref = d.externalAuthConfigRef?.name;
    const strategy =
      ref === undefined
        ? (problems.push('spec.outgoingAuth.default.externalAuthConfigRef: name the MCPExternalAuthConfig'),
          undefined)
        : await strategyOf('spec.outgoingAuth.default.externalAuthConfigRef', ref, problems);
    if (strategy !== undefined) outgoing['default'] = strategy;
  }
  const perBackend: Node = {};
  const backends: Node[] = [];
  for (const b of groupBackends(index, namespace, group)) {
    const member = `${String(b['kind'])} ${namespace}/${String(b['name'])}`;
    if (b['transport'] !== 'streamable-http') {
      warnings.push(`${member}: left out, its transport "${String(b['transport'])}" is not streamable-http`);
      continue;
    }
    const ref = b['authConfigRef'];
    if (typeof ref === 'string') {
      const strategy = await strategyOf(`${member} left out: spec.externalAuthConfigRef`, ref, warnings);
      if (strategy === undefined) continue; // left out, never called with the default identity
      perBackend[String(b['name'])] = strategy;
    }
    backends.push(
      Object.assign(
        { name: b['name'], url: b['url'], transport: 'streamable-http' },
        b['kind'] === 'MCPServerEntry' ? { type: 'entry' } : {},
      ),
    );
  }
  outgoing['backends'] = perBackend;
  const vmcp: Node = Object.assign({}, userConfig, { groupRef: group, backends, outgoingAuth: outgoing });
  // aggregation.tools[].toolConfigRef names an MCPToolConfig: its filter and overrides replace the
  // entry's own (the reference ignores `filter`/`overrides` when the reference is set).
  const aggregation = userConfig['aggregation'] as Node | undefined;
  if (Array.isArray(aggregation?.['tools'])) {
    const tools = (aggregation['tools'] as Node[]).map((entry, i) => {
      const ref = (entry['toolConfigRef'] as Node | undefined)?.['name'];
      if (typeof ref !== 'string') return entry;
      const field = `spec.config.aggregation.tools[${i}].toolConfigRef`;
      const tc = index.get('MCPToolConfig', namespace, ref);
      if (tc === undefined) {
        problems.push(
          `${field}: MCPToolConfig ${namespace}/${ref} ${index.invalid.has(keyOf('MCPToolConfig', namespace, ref)) ? 'is invalid' : 'does not exist'}`,
        );
        return entry;
      }
      const tcSpec = (tc['spec'] ?? {}) as Node;
      toolConfigHashes.push(configHash(tcSpec));
      const out: Node = Object.assign({}, entry);
      delete out['toolConfigRef'];
      delete out['filter'];
      delete out['overrides'];
      if (Array.isArray(tcSpec['toolsFilter']) && tcSpec['toolsFilter'].length > 0)
        out['filter'] = tcSpec['toolsFilter'];
      if (isRecord(tcSpec['toolsOverride'])) out['overrides'] = tcSpec['toolsOverride'];
      return out;
    });
    vmcp['aggregation'] = Object.assign({}, aggregation, { tools });
  }
  // compositeToolRefs name VirtualMCPCompositeToolDefinitions: the pod gets their definitions
  // inline (`compositeTools`), as the reference's operator resolves them.
  const refs = (userConfig['compositeToolRefs'] ?? []) as Array<{ name: string }>;
  if (refs.length > 0) {
    const tools = [...((userConfig['compositeTools'] ?? []) as Node[])];
    const toolHashes: string[] = [];
    refs.forEach((ref, i) => {
      const field = `spec.config.compositeToolRefs[${i}]`;
      const def = index.get('VirtualMCPCompositeToolDefinition', namespace, ref.name);
      const bad = index.invalid.get(keyOf('VirtualMCPCompositeToolDefinition', namespace, ref.name));
      if (def === undefined)
        problems.push(
          bad === undefined
            ? `${field}: VirtualMCPCompositeToolDefinition ${namespace}/${ref.name} does not exist`
            : `${field}: VirtualMCPCompositeToolDefinition ${namespace}/${ref.name} is invalid: ${bad}`,
        );
      else {
        tools.push(def['spec'] as Node);
        toolHashes.push(configHash(def['spec']));
      }
    });
    delete vmcp['compositeToolRefs'];
    vmcp['compositeTools'] = tools;
    compositeHash = sha256(toolHashes.join(','));
  }
  // embeddingServerRef: the optimizer's embedding service is the EmbeddingServer's Service.
  if (spec.embeddingServerRef !== undefined) {
    const ref = spec.embeddingServerRef.name;
    const emb = index.get('EmbeddingServer', namespace, ref);
    if (emb === undefined)
      problems.push(
        `spec.embeddingServerRef: EmbeddingServer ${namespace}/${ref} ${index.invalid.has(keyOf('EmbeddingServer', namespace, ref)) ? 'is invalid' : 'does not exist'}`,
      );
    else {
      const optimizer = Object.assign({}, (userConfig['optimizer'] ?? {}) as Node);
      if (optimizer['embeddingService'] !== undefined)
        problems.push(
          'spec.config.optimizer.embeddingService: set by the operator from spec.embeddingServerRef; remove it',
        );
      optimizer['embeddingService'] = embeddingServerUrl(emb, namespace);
      vmcp['optimizer'] = optimizer;
    }
  }
  try {
    parseVmcpConfig(vmcp);
  } catch (err) {
    problems.push(`spec.config: ${(err as Error).message}`);
  }

  const fields: RunnerFields = { groupRef: spec.groupRef, proxyPort: VMCP_PORT };
  const incoming = spec.incomingAuth;
  if (incoming.type === 'oidc' && incoming.oidcConfig !== undefined) fields.oidcConfig = incoming.oidcConfig;
  if (incoming.type === 'oidc' && incoming.oidcConfigRef !== undefined)
    fields.oidcConfigRef = incoming.oidcConfigRef;
  if (incoming.type === 'anonymous' && (incoming.oidcConfigRef ?? incoming.oidcConfig) !== undefined)
    problems.push(
      'spec.incomingAuth: anonymous incoming auth takes no OIDC configuration; remove it or set type oidc',
    );
  if (incoming.authzConfig !== undefined) fields.authzConfig = incoming.authzConfig;
  if (incoming.authzConfigRef !== undefined) fields.authzConfigRef = incoming.authzConfigRef;
  if (spec.telemetryConfigRef !== undefined) fields.telemetryConfigRef = spec.telemetryConfigRef;
  if (spec.sessionStorage !== undefined) fields.sessionStorage = spec.sessionStorage;
  const shared = await sharedRunConfig(cr, fields, index, namespace, {
    oidcConfigRef: 'spec.incomingAuth.oidcConfigRef',
    authzConfig: 'spec.incomingAuth.authzConfig',
    authzConfigRef: 'spec.incomingAuth.authzConfigRef',
  });
  problems.push(...shared.problems);
  const rc = shared.runConfig;
  Object.assign(rc, { image: '', cmd_args: [], transport: 'streamable-http', vmcp });
  const wiring = wireSecrets(env, []);
  const config: MountedConfig = {
    volume: 'vmcp-config',
    configMap: `${name}-vmcp-config`,
    dir: VMCP_CONFIG_DIR,
  };
  const cm = runconfigMap(cr, config, namespace, rc);
  const sa = spec.serviceAccount ?? `${name}-vmcp`;
  const podSpec = podSpecOf(sa, {
    containers: [
      runnerContainer({
        name: 'vmcp',
        image: o.vmcpImage,
        config,
        port: VMCP_PORT,
        env: [...shared.wiring.env, ...wiring.env],
        mounts: shared.wiring.mounts,
        resources: spec.resources ?? {
          requests: { cpu: '100m', memory: '128Mi' },
          limits: { cpu: '500m', memory: '512Mi' },
        },
      }),
    ],
    volumes: [configVolume(config), TMP_VOLUME, ...shared.wiring.volumes],
  });
  const annotations: Record<string, string> = {
    [ANNOTATIONS.runconfigChecksum]: contentChecksumOf(cm),
    ...shared.annotations,
  };
  if (compositeHash !== undefined) annotations[ANNOTATIONS.compositeToolsHash] = compositeHash;
  if (toolConfigHashes.length > 0)
    annotations['skep.dev/tool-config-hash'] = sha256(toolConfigHashes.join(','));
  if (hashes.length > 0) annotations[ANNOTATIONS.externalAuthHash] = sha256(hashes.join(','));
  const objects = workloadObjects(cr, namespace, spec, {
    cm,
    sa,
    replicas: spec.replicas ?? 1,
    podSpec,
    podAnnotations: annotations,
    service: service(
      cr,
      `vmcp-${name}`,
      namespace,
      VMCP_PORT,
      spec.sessionAffinity,
      spec.serviceType ?? 'ClusterIP',
    ),
  });
  const url = `http://vmcp-${name}.${namespace}.svc.cluster.local:${VMCP_PORT}/mcp`;
  return rendered('VirtualMCPServer', namespace, name, objects, url, problems, warnings);
}

const RENDERED_KINDS = new Set([
  'MCPServer',
  'MCPRemoteProxy',
  'VirtualMCPServer',
  'MCPRegistry',
  'EmbeddingServer',
]);

/**
 * Renders every workload resource (MCPServer, MCPRemoteProxy, VirtualMCPServer, MCPRegistry,
 * EmbeddingServer) among `docs`; the other documents — Secrets, ConfigMaps, the shared
 * configurations, composite tool definitions, groups, entries — are read as referenced objects. Each resource
 * is validated first with the shared library; an invalid one renders nothing and is reported.
 * Documents of other API groups (but Secrets and ConfigMaps) are listed in `skipped`.
 */
export async function renderResources(docs: unknown[], options: RenderOptions = {}): Promise<RenderResult> {
  const runnerImage = options.runnerImage ?? process.env[RUNNER_IMAGE_ENV] ?? DEFAULT_RUNNER_IMAGE;
  const o: Resolved = {
    runnerImage,
    namespace: options.namespace ?? 'default',
    vmcpImage: options.vmcpImage ?? runnerImage,
    readImageCommand:
      options.offline === true ? undefined : (options.readImageCommand ?? defaultImageCommandReader()),
    readSecret: options.readSecret,
  };
  const result: RenderResult = { objects: [], urls: new Map(), problems: [], warnings: [], skipped: [] };
  const valid: Node[] = [];
  const invalid: Array<[Node, string]> = [];
  for (const [i, d] of docs.entries()) {
    if (d === null || typeof d !== 'object') {
      result.problems.push({ resource: `document ${i + 1}`, problem: 'is not an object' });
      continue;
    }
    const doc = d as Node;
    const kind = String(doc['kind']);
    const name = String((doc['metadata'] as Node | undefined)?.['name'] ?? '?');
    if (kind === 'Secret' || kind === 'ConfigMap') {
      valid.push(doc);
      continue;
    }
    const foreign = foreignResource(doc);
    if (foreign !== undefined) {
      result.skipped.push({ resource: `${kind}/${name}`, reason: foreign });
      continue;
    }
    const { problems, resource } = validateResource(doc);
    if (resource === undefined) {
      for (const p of problems)
        result.problems.push({ resource: `${kind}/${name}`, problem: formatProblem(p) });
      invalid.push([doc, problems.map(formatProblem).join('; ')]);
      continue;
    }
    valid.push(resource);
  }
  const index = new Index(valid, o.namespace);
  for (const [doc, why] of invalid)
    index.invalid.set(
      keyOf(String(doc['kind']), index.ns(doc), String((doc['metadata'] as Node | undefined)?.['name'])),
      why,
    );
  for (const doc of valid) {
    const kind = String(doc['kind']);
    if (!RENDERED_KINDS.has(kind)) continue;
    const part =
      kind === 'MCPServer'
        ? await renderMCPServer(doc, index, o)
        : kind === 'MCPRemoteProxy'
          ? await renderRemoteProxy(doc, index, o)
          : kind === 'MCPRegistry'
            ? renderRegistry(doc, index, { image: o.runnerImage })
            : kind === 'EmbeddingServer'
              ? renderEmbeddingServer(doc, index)
              : await renderVirtual(doc, index, o);
    if (part.problems.length > 0) {
      // A resource with a broken reference renders nothing (the controller reports it in status).
      result.problems.push(...part.problems);
      continue;
    }
    result.warnings.push(...part.warnings);
    result.objects.push(...part.objects);
    for (const [k, v] of part.urls) result.urls.set(k, v);
  }
  return result;
}

/** The objects as one multi-document YAML stream (what `skep operator render` prints). */
export function renderYaml(objects: K8sObject[]): string {
  return objects.map((obj) => stringify(obj, { lineWidth: 0 })).join('---\n');
}
