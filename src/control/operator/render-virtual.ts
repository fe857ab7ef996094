/**
 * VirtualMCPServer → ConfigMap `<n>-vmcp-config`, ServiceAccount `<n>-vmcp`, Deployment and Service
 * `vmcp-<n>`; the operator resolves its group's members, their auth and the referenced
 * configurations into the pod's run configuration.
 */
import { EXTAUTH_KIND } from '../../schemas/extauth/index.js';
import type { VirtualMCPServerSpec } from '../../schemas/workloads/index.js';
import { configHash } from './config-hash.js';
import { type SecretEnv } from './runconfig.js';
import { type BackendAuthStrategy, parseVmcpConfig } from '../../dataplane/vmcp/index.js';
import { vmcpStrategyFor } from './vmcp-auth.js';
import { isRecord } from '../../shared/index.js';
import { Index, keyOf, secretReader } from './render-index.js';
import { type CustomResource, nameOf, rendered, type RenderResult } from './render-common.js';
import { at, listAt, recordAt, stringAt } from './json-fields.js';

import {
  ANNOTATIONS,
  configVolume,
  contentChecksumOf,
  type MountedConfig,
  podSpecOf,
  type Resolved,
  runconfigMap,
  runnerContainer,
  type RunnerFields,
  service,
  sha256,
  sharedRunConfig,
  TMP_VOLUME,
  VMCP_CONFIG_DIR,
  VMCP_PORT,
  wireSecrets,
  workloadList,
  workloadObjects,
} from './render-pod.js';

type Node = Record<string, unknown>;

/** In-cluster base URL of an EmbeddingServer's Service (what its status.url says). */
export function embeddingServerUrl(emb: Node, namespace: string): string {
  const port = Number(at(emb, 'spec', 'port') ?? 8080);
  return `http://${nameOf(emb)}.${namespace}.svc.cluster.local:${port}`;
}

/** A group's backends, as a VirtualMCPServer in discovered mode sees them. */
export function groupBackends<D>(
  index: { of(kind: string): D[]; ns(d: D): string },
  namespace: string,
  group: string,
): Node[] {
  const out: Node[] = [];
  for (const kind of ['MCPServer', 'MCPRemoteProxy', 'MCPServerEntry']) {
    for (const d of index.of(kind)) {
      const spec = recordAt(d, 'spec');
      if (index.ns(d) !== namespace || at(spec, 'groupRef', 'name') !== group) continue;
      const n = String(at(d, 'metadata', 'name'));
      const port = Number(spec['proxyPort'] ?? 8080);
      const url =
        kind === 'MCPServer'
          ? `http://mcp-${n}-proxy.${namespace}.svc.cluster.local:${port}/mcp`
          : kind === 'MCPRemoteProxy'
            ? `http://mcp-${n}-remote-proxy.${namespace}.svc.cluster.local:${port}/mcp`
            : String(spec['remoteUrl']);
      const auth = at(spec, 'externalAuthConfigRef', 'name');
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
export const VMCP_OPERATOR_KEYS: Record<string, string> = {
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
export async function renderVirtual(
  cr: CustomResource<VirtualMCPServerSpec>,
  index: Index,
  o: Resolved,
): Promise<RenderResult> {
  const namespace = index.ns(cr);
  const name = cr.metadata.name;
  const { spec } = cr;
  const problems: string[] = [];
  const group = spec.groupRef.name;
  if (index.get('MCPGroup', namespace, group) === undefined)
    problems.push(`spec.groupRef: MCPGroup ${namespace}/${group} does not exist`);
  const userConfig = recordAt(spec, 'config');
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
      hashes.push(stringAt(config, 'status', 'configHash') ?? configHash(config['spec']));
      return resolved.strategy;
    } catch (err) {
      sink.push(`${field}: ${err instanceof Error ? err.message : String(err)}`);
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
  const aggregation = userConfig['aggregation'];
  if (isRecord(aggregation) && Array.isArray(aggregation['tools'])) {
    const tools = aggregation['tools'].map((entry: unknown, i) => {
      const ref = stringAt(entry, 'toolConfigRef', 'name');
      if (ref === undefined || !isRecord(entry)) return entry;
      const field = `spec.config.aggregation.tools[${i}].toolConfigRef`;
      const tc = index.get('MCPToolConfig', namespace, ref);
      if (tc === undefined) {
        problems.push(
          `${field}: MCPToolConfig ${namespace}/${ref} ${index.invalid.has(keyOf('MCPToolConfig', namespace, ref)) ? 'is invalid' : 'does not exist'}`,
        );
        return entry;
      }
      const tcSpec = recordAt(tc, 'spec');
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
  const refs = listAt(userConfig, 'compositeToolRefs').map((r) => String(at(r, 'name')));
  if (refs.length > 0) {
    const tools = [...listAt(userConfig, 'compositeTools')];
    const toolHashes: string[] = [];
    refs.forEach((ref, i) => {
      const field = `spec.config.compositeToolRefs[${i}]`;
      const def = index.get('VirtualMCPCompositeToolDefinition', namespace, ref);
      const bad = index.invalid.get(keyOf('VirtualMCPCompositeToolDefinition', namespace, ref));
      if (def === undefined)
        problems.push(
          bad === undefined
            ? `${field}: VirtualMCPCompositeToolDefinition ${namespace}/${ref} does not exist`
            : `${field}: VirtualMCPCompositeToolDefinition ${namespace}/${ref} is invalid: ${bad}`,
        );
      else {
        tools.push(def['spec']);
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
      const optimizer = Object.assign({}, recordAt(userConfig, 'optimizer'));
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
    problems.push(`spec.config: ${err instanceof Error ? err.message : String(err)}`);
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
        kind: 'vmcp',
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
  // imagePullSecrets: on the pod (the podTemplateSpec's list merges with it by name) and on the
  // ServiceAccount the operator creates (only this field reaches it, as in the reference).
  const pullSecrets = (spec.imagePullSecrets ?? []).map((s) => ({ name: s.name }));
  if (pullSecrets.length > 0) podSpec.imagePullSecrets = pullSecrets;
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
  if (objects.serviceAccount !== undefined && pullSecrets.length > 0)
    objects.serviceAccount.imagePullSecrets = pullSecrets;
  const url = `http://vmcp-${name}.${namespace}.svc.cluster.local:${VMCP_PORT}/mcp`;
  return rendered('VirtualMCPServer', namespace, name, workloadList(objects), url, problems, warnings);
}
