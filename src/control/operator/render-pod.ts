/**
 * The pod-template pieces every rendered workload shares: constants and annotations, the run
 * configuration a runner pod mounts (with the shared configurations folded in), Secret wiring,
 * the runner container, Service, ServiceAccount and Deployment, and `resourceOverrides`.
 */
import { createHash } from 'node:crypto';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IEnvVar } from 'kubernetes-models/v1/EnvVar';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';
import type { IPodTemplateSpec } from 'kubernetes-models/v1/PodTemplateSpec';
import type { IResourceRequirements } from 'kubernetes-models/v1/ResourceRequirements';
import type { ISecurityContext } from 'kubernetes-models/v1/SecurityContext';
import type { IService } from 'kubernetes-models/v1/Service';
import type { IServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import type { IVolume } from 'kubernetes-models/v1/Volume';
import type { IVolumeMount } from 'kubernetes-models/v1/VolumeMount';
import { EXTAUTH_KIND } from '../../schemas/extauth/index.js';
import type { MCPRemoteProxySpec, MCPServerSpec } from '../../schemas/workloads/index.js';
import { canonicalJson, configHash } from './config-hash.js';
import { buildRunConfigAuth, type SecretEnv, type SecretFile } from './runconfig.js';
import { Index, secretReader } from './render-index.js';
import {
  type K8sObject,
  labelsFor,
  mergePodTemplate,
  meta,
  nameOf,
  type Rendered,
  selectorOf,
} from './render-common.js';

import { type RefPaths, resolveSharedRefs, type SharedRefFields } from './shared-refs.js';
import { type ImageCommandReader } from './image-command.js';
import { isRecord } from '../../shared/index.js';
import { RUNNER_V8_FLAGS, type RunnerKind, runnerV8Flags } from '../../workloads/index.js';
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
export interface Resolved {
  runnerImage: string;
  namespace: string;
  vmcpImage: string;
  readImageCommand: ImageCommandReader | undefined;
  readSecret: RenderOptions['readSecret'];
}

export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Stable checksum of a ConfigMap's data (sorted keys). */
export function dataChecksum(data: Record<string, string>): string {
  return sha256(canonicalJson(data));
}

export interface PodWiring {
  env: IEnvVar[];
  volumes: IVolume[];
  mounts: IVolumeMount[];
}

/** Secret env vars and files → container env (secretKeyRef) and read-only Secret volumes. */
export function wireSecrets(env: SecretEnv[], files: SecretFile[]): PodWiring {
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
export const TMP_VOLUME: IVolume = { name: 'tmp', emptyDir: { medium: 'Memory', sizeLimit: '64Mi' } };

export const DEFAULT_RESOURCES: IResourceRequirements = {
  requests: { cpu: '50m', memory: '64Mi' },
  limits: { cpu: '500m', memory: '256Mi' },
};

export const RUNNER_SECURITY: ISecurityContext = {
  allowPrivilegeEscalation: false,
  runAsNonRoot: true,
  runAsUser: 65532,
  runAsGroup: 65532,
  capabilities: { drop: ['ALL'] },
};

export function probes(
  portName: string,
): Pick<IContainer, 'startupProbe' | 'readinessProbe' | 'livenessProbe'> {
  const get = { httpGet: { path: '/health', port: portName } };
  return {
    startupProbe: { ...get, periodSeconds: 2, failureThreshold: 60 },
    readinessProbe: { ...get, periodSeconds: 5 },
    livenessProbe: { ...get, periodSeconds: 10, failureThreshold: 3 },
  };
}

export interface Shared {
  runConfig: Node;
  wiring: PodWiring;
  annotations: Record<string, string>;
  problems: string[];
}

/** The run-configuration fields MCPServer and MCPRemoteProxy share, with their pod wiring. */
/** The runner fields every rendered workload shares (a VirtualMCPServer maps its own onto them). */
export type RunnerFields = Pick<
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
  | 'endpointPrefix'
> &
  SharedRefFields;

export async function sharedRunConfig(
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
  // Validated with the runner's rules (`resource-validate.ts`): a path, on an SSE-serving workload.
  if (spec.endpointPrefix !== undefined && spec.endpointPrefix !== '')
    rc['endpoint_prefix'] = spec.endpointPrefix;
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
      const status = config['status'];
      annotations[annotation] =
        isRecord(status) && typeof status['configHash'] === 'string'
          ? status['configHash']
          : configHash(config['spec']);
    } catch (err) {
      problems.push(`${field}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
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
export function mergeAuth(rc: Node, add: Node): Node {
  const out: Node = { ...add };
  const a = rc['header_forward'];
  const b = add['header_forward'];
  if (isRecord(a) && isRecord(b)) {
    const field = (x: Node, key: string) => (isRecord(x[key]) ? x[key] : {});
    out['header_forward'] = {
      add_plaintext_headers: { ...field(a, 'add_plaintext_headers'), ...field(b, 'add_plaintext_headers') },
      add_headers_from_secret: {
        ...field(a, 'add_headers_from_secret'),
        ...field(b, 'add_headers_from_secret'),
      },
    };
  }
  return out;
}

/** Where a pod reads its run configuration: a ConfigMap mounted read-only at `dir`. */
export interface MountedConfig {
  volume: string;
  configMap: string;
  dir: string;
}

export const configVolume = (c: MountedConfig): IVolume => ({
  name: c.volume,
  configMap: { name: c.configMap },
});
export const configMount = (c: MountedConfig): IVolumeMount => ({
  name: c.volume,
  mountPath: c.dir,
  readOnly: true,
});
export const TMP_MOUNT: IVolumeMount = { name: 'tmp', mountPath: '/tmp' };

/** The ConfigMap holding the run configuration `rc`, with the checksum that rolls its pods. */
export function runconfigMap(
  cr: Node,
  config: MountedConfig,
  namespace: string,
  rc: Node,
): Rendered<IConfigMap> {
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

export function serviceAccount(cr: Node, name: string, namespace: string): Rendered<IServiceAccount> {
  return {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: meta(cr, name, namespace),
    // The runner never calls the Kubernetes API: no token in its pods.
    automountServiceAccountToken: false,
  };
}

export function service(
  cr: Node,
  name: string,
  namespace: string,
  port: number,
  affinity: NonNullable<IService['spec']>['sessionAffinity'],
  type: NonNullable<IService['spec']>['type'] = 'ClusterIP',
): Rendered<IService> {
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

export function deployment(
  cr: Node,
  namespace: string,
  replicas: number,
  podSpec: IPodSpec,
  podAnnotations: Record<string, string>,
  patch: unknown,
): Rendered<IDeployment> {
  const crName = nameOf(cr);
  const template = mergePodTemplate<IPodTemplateSpec>(
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

export const contentChecksumOf = (cm: Pick<K8sObject, 'metadata'>) =>
  (cm.metadata.annotations ?? {})[ANNOTATIONS.contentChecksum] ?? '';

/** Pod-template annotations of a server or remote proxy: a change to any of them rolls its pods. */
export function rolloutAnnotations(
  cr: Node,
  cm: Pick<K8sObject, 'metadata'>,
  shared: Shared,
): Record<string, string> {
  const crMeta = cr['metadata'];
  return {
    [ANNOTATIONS.runconfigChecksum]: contentChecksumOf(cm),
    [ANNOTATIONS.generation]: String((isRecord(crMeta) ? crMeta['generation'] : undefined) ?? 1),
    ...shared.annotations,
  };
}

/** A rendered pod: its own ServiceAccount, whose token is never mounted. */
export function podSpecOf(
  serviceAccountName: string,
  parts: { initContainers?: IContainer[]; containers: IContainer[]; volumes: IVolume[] },
): IPodSpec & Required<Pick<IPodSpec, 'containers' | 'volumes'>> {
  return Object.assign(
    { serviceAccountName, automountServiceAccountToken: false, terminationGracePeriodSeconds: 30 },
    parts,
  );
}

/** `skep operator pod-runner` reading the run configuration mounted at `dir`. */
export const runnerArgs = (dir: string) => ['operator', 'pod-runner', '--config', `${dir}/${RUNCONFIG_KEY}`];

/**
 * The Skep image's CLI (Containerfile), started with the runner's V8 flags for its kind: a
 * runner in a pod runs with the settings of one that `skep serve` spawns.
 */
export const runnerImageCommand = (kind: RunnerKind): string[] => [
  'node',
  ...runnerV8Flags(kind),
  '/opt/skep/dist/skep.mjs',
];

/** The container of the Skep runner image: `skep operator pod-runner` serving on port `http`. */
export function runnerContainer(c: {
  name: string;
  /** What it serves (its V8 flags); default an MCP server. */
  kind?: RunnerKind;
  image: string;
  config: MountedConfig;
  port: number;
  env: IEnvVar[];
  mounts: IVolumeMount[];
  resources: IResourceRequirements;
}): IContainer {
  return {
    name: c.name,
    image: c.image,
    command: runnerImageCommand(c.kind ?? 'server'),
    args: runnerArgs(c.config.dir),
    env: c.env,
    ports: [{ name: 'http', containerPort: c.port, protocol: 'TCP' }],
    volumeMounts: [configMount(c.config), TMP_MOUNT, ...c.mounts],
    resources: c.resources,
    ...probes('http'),
    securityContext: RUNNER_SECURITY,
  };
}

/** The objects of one workload, typed so that `resourceOverrides` can edit them. */
export interface WorkloadObjects {
  configMap: Rendered<IConfigMap>;
  /** Absent when the spec names its own ServiceAccount. */
  serviceAccount: Rendered<IServiceAccount> | undefined;
  deployment: Rendered<IDeployment>;
  service: Rendered<IService>;
}

/** A workload's objects: its ConfigMap, ServiceAccount `sa` (unless the spec names one), Deployment, Service. */
export function workloadObjects(
  cr: Node,
  namespace: string,
  spec: { serviceAccount?: string; podTemplateSpec?: unknown },
  w: {
    cm: Rendered<IConfigMap>;
    sa: string;
    replicas: number;
    podSpec: IPodSpec;
    podAnnotations: Record<string, string>;
    service: Rendered<IService>;
  },
): WorkloadObjects {
  return {
    configMap: w.cm,
    serviceAccount: spec.serviceAccount === undefined ? serviceAccount(cr, w.sa, namespace) : undefined,
    deployment: deployment(cr, namespace, w.replicas, w.podSpec, w.podAnnotations, spec.podTemplateSpec),
    service: w.service,
  };
}

/** The objects in the order they are applied: ConfigMap, ServiceAccount, Deployment, Service. */
export function workloadList(w: WorkloadObjects): K8sObject[] {
  const out: K8sObject[] = [w.configMap];
  if (w.serviceAccount !== undefined) out.push(w.serviceAccount);
  out.push(w.deployment, w.service);
  return out;
}

/** The run configuration of a server or remote proxy, as its pod mounts it. */
export const runconfigOf = (name: string): MountedConfig => ({
  volume: 'runconfig',
  configMap: `${name}-runconfig`,
  dir: RUNCONFIG_DIR,
});
/** How the server's container runs the copied runner (deploy/image/install-runner.mjs). */
export const RUNNER_COPY_COMMAND = [
  `${RUNNER_COPY_DIR}/lib/ld.so`,
  '--library-path',
  `${RUNNER_COPY_DIR}/lib`,
  `${RUNNER_COPY_DIR}/bin/node`,
  ...RUNNER_V8_FLAGS,
  `${RUNNER_COPY_DIR}/app/dist/skep.mjs`,
  ...runnerArgs(RUNCONFIG_DIR),
];
/**
 * Env of the stdio server's container, which runs the copied runner in the server's image:
 * its store goes to the `tmp` emptyDir. Containers of the Skep image use the image's
 * HOME/SKEP_HOME (/var/lib/skep, owned by the image's non-root user).
 */

/** Names of the volumes the rendered pods use themselves. */
export const RESERVED_VOLUMES = new Set(['runconfig', 'tmp', 'skep', 'ca-bundle', 'vmcp-config']);

type StringMap = Record<string, string>;

/** `current` with `add` merged in, but the `keep` keys of `current` (the selector stays). */
function overlay(current: StringMap | undefined, add: StringMap | undefined, keep: string[] = []) {
  if (add === undefined) return current;
  const next = { ...current, ...add };
  for (const k of keep) if (current?.[k] !== undefined) next[k] = current[k];
  return next;
}

/** Sets `target[key]` to the overlay, leaving the field absent when nothing was there or added. */
function overlayField<K extends 'labels' | 'annotations'>(
  target: { [key in K]?: StringMap },
  key: K,
  add: StringMap | undefined,
  keep: string[] = [],
): void {
  const next = overlay(target[key], add, keep);
  if (next !== undefined) target[key] = next;
}

const SELECTOR_KEYS = ['app.kubernetes.io/name', 'app.kubernetes.io/instance'];

/** `spec.resourceOverrides` applied to rendered objects (labels, annotations, runner env, pull secrets). */
export function applyResourceOverrides(
  objects: WorkloadObjects,
  overrides: MCPServerSpec['resourceOverrides'],
  runner: string,
): void {
  if (overrides === undefined) return;
  const d = overrides.proxyDeployment;
  if (d !== undefined) {
    const { deployment } = objects;
    overlayField(deployment.metadata, 'labels', d.labels, SELECTOR_KEYS);
    overlayField(deployment.metadata, 'annotations', d.annotations);
    const template = deployment.spec?.template;
    if (template !== undefined) {
      template.metadata ??= {};
      overlayField(template.metadata, 'labels', d.podTemplateMetadataOverrides?.labels, SELECTOR_KEYS);
      overlayField(template.metadata, 'annotations', d.podTemplateMetadataOverrides?.annotations);
    }
    const pod = template?.spec;
    const container = pod?.containers.find((c) => c.name === runner);
    const env = d.env;
    if (container !== undefined && env !== undefined) {
      const kept = (container.env ?? []).filter((e) => !env.some((x) => x.name === e.name));
      container.env = [...kept, ...env.map((e) => ({ name: e.name, value: e.value }))];
    }
    const pulls = d.imagePullSecrets ?? [];
    if (pod !== undefined && pulls.length > 0) {
      const have = (pod.imagePullSecrets ?? []).filter((x) => !pulls.some((y) => y.name === x.name));
      pod.imagePullSecrets = [...pulls.map((x) => ({ name: x.name })), ...have];
    }
    if (objects.serviceAccount !== undefined && pulls.length > 0)
      objects.serviceAccount.imagePullSecrets = pulls.map((x) => ({ name: x.name }));
  }
  const s = overrides.proxyService;
  if (s !== undefined) {
    overlayField(objects.service.metadata, 'labels', s.labels, SELECTOR_KEYS);
    overlayField(objects.service.metadata, 'annotations', s.annotations);
  }
}
