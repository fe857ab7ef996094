/**
 * MCPServer → ConfigMap `<n>-runconfig`, ServiceAccount `<n>-proxy-runner`, Deployment `<n>`,
 * Service `mcp-<n>-proxy`: a stdio server runs in its own image (the runner copied in by an init
 * container), an HTTP server gets the runner as a sidecar.
 */
import type { MCPServerSpec } from '../../schemas/workloads/index.js';
import { envName, type SecretEnv } from './runconfig.js';
import { isRecord } from '../../shared/index.js';
import { documentValue, Index } from './render-index.js';
import { type CustomResource, rendered, type RenderResult } from './render-common.js';

import { type ImageCommand, type ImageCommandReader } from './image-command.js';
import {
  applyResourceOverrides,
  configMount,
  configVolume,
  DEFAULT_RESOURCES,
  podSpecOf,
  probes,
  RESERVED_VOLUMES,
  type Resolved,
  rolloutAnnotations,
  runconfigMap,
  runconfigOf,
  RUNNER_COPY_COMMAND,
  RUNNER_COPY_DIR,
  runnerContainer,
  service,
  sharedRunConfig,
  TMP_MOUNT,
  TMP_VOLUME,
  wireSecrets,
  workloadList,
  workloadObjects,
} from './render-pod.js';

export const baseEnv = [
  { name: 'HOME', value: '/tmp' },
  { name: 'SKEP_HOME', value: '/tmp/skep' },
];

/** The command of a stdio image without `spec.command`, or the problem saying why there is none. */
export async function imageCommand(
  image: string,
  read: ImageCommandReader | undefined,
  pullSecrets: unknown[],
): Promise<ImageCommand | string> {
  if (read === undefined)
    return `spec.command: image ${image} needs a command: its entrypoint is not read offline`;
  try {
    return await read(image, pullSecrets);
  } catch (err) {
    return `spec.command: cannot read the entrypoint of image ${image} (${err instanceof Error ? err.message : String(err)}); set spec.command`;
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
export function declaredContainerPorts(podTemplateSpec: unknown): number[] {
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
export function pullSecretNames(spec: {
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
export async function dockerConfigs(
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

export async function renderMCPServer(
  cr: CustomResource<MCPServerSpec>,
  index: Index,
  o: Resolved,
): Promise<RenderResult> {
  const namespace = index.ns(cr);
  const name = cr.metadata.name;
  const { spec } = cr;
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
  let podSpec: ReturnType<typeof podSpecOf>;
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
    podSpec.volumes.push({ name: v.name, hostPath: { path: v.hostPath } });
    const mcp = podSpec.containers.find((c) => c.name === 'mcp');
    if (mcp !== undefined)
      mcp.volumeMounts = [
        ...(mcp.volumeMounts ?? []),
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
  return rendered('MCPServer', namespace, name, workloadList(objects), url, problems);
}
