/**
 * Which workloads reference an MCPExternalAuthConfig (ToolHive's `status.referencingWorkloads`).
 * References are only honoured within one namespace (as in ToolHive's CRD), so a reference is
 * always `namespace/name`.
 */
import { EXTAUTH_GROUP, EXTAUTH_KIND, EXTAUTH_PLURAL, EXTAUTH_VERSION } from '../../schemas/extauth/index.js';
import type { KubeObject, ResourceType } from './kube.js';

export const EXTAUTH_RESOURCE: ResourceType = {
  group: EXTAUTH_GROUP,
  version: EXTAUTH_VERSION,
  plural: EXTAUTH_PLURAL,
};

export const WORKLOAD_TYPES = [
  { kind: 'MCPServer', type: { group: EXTAUTH_GROUP, version: EXTAUTH_VERSION, plural: 'mcpservers' } },
  {
    kind: 'MCPRemoteProxy',
    type: { group: EXTAUTH_GROUP, version: EXTAUTH_VERSION, plural: 'mcpremoteproxies' },
  },
  {
    kind: 'VirtualMCPServer',
    type: { group: EXTAUTH_GROUP, version: EXTAUTH_VERSION, plural: 'virtualmcpservers' },
  },
  {
    kind: 'MCPServerEntry',
    type: { group: EXTAUTH_GROUP, version: EXTAUTH_VERSION, plural: 'mcpserverentries' },
  },
] as const;

export type WorkloadKind = (typeof WORKLOAD_TYPES)[number]['kind'];

/** The referencing fields, with the annotation (on the workload) that carries the referenced config's hash. */
export const REF_ANNOTATIONS = {
  externalAuthConfigRef: 'skep.dev/external-auth-config-hash',
  authServerRef: 'skep.dev/auth-server-config-hash',
  'outgoingAuth.default.externalAuthConfigRef': 'skep.dev/outgoing-auth-config-hash',
  'status.discoveredBackends[].authConfigRef': undefined,
  toolConfigRef: 'skep.dev/tool-config-hash',
  'config.aggregation.tools[].toolConfigRef': 'skep.dev/tool-config-hash',
  oidcConfigRef: 'skep.dev/oidc-config-hash',
  'incomingAuth.oidcConfigRef': 'skep.dev/oidc-config-hash',
  authzConfigRef: 'skep.dev/authz-config-hash',
  'incomingAuth.authzConfigRef': 'skep.dev/authz-config-hash',
  telemetryConfigRef: 'skep.dev/telemetry-config-hash',
  webhookConfigRef: 'skep.dev/webhook-config-hash',
} as const;

export type RefField = keyof typeof REF_ANNOTATIONS;

export interface ConfigReference {
  field: RefField;
  name: string;
}

const get = (o: unknown, key: string): unknown =>
  o !== null && typeof o === 'object' ? (o as Record<string, unknown>)[key] : undefined;
const refName = (ref: unknown): string | undefined => {
  const name = typeof ref === 'string' ? ref : get(ref, 'name');
  return typeof name === 'string' && name !== '' ? name : undefined;
};

/** The configs of kind `configKind` (default MCPExternalAuthConfig) a workload object references, per field. */
export function referencedConfigs(
  kind: WorkloadKind,
  obj: KubeObject,
  configKind: string = EXTAUTH_KIND,
): ConfigReference[] {
  const out: ConfigReference[] = [];
  const push = (field: RefField, ref: unknown) => {
    const name = refName(ref);
    if (name !== undefined) out.push({ field, name });
  };
  const spec = obj.spec;
  const proxy = kind === 'MCPServer' || kind === 'MCPRemoteProxy';
  const incoming = get(spec, 'incomingAuth');
  switch (configKind) {
    case EXTAUTH_KIND:
      if (proxy || kind === 'MCPServerEntry')
        push('externalAuthConfigRef', get(spec, 'externalAuthConfigRef'));
      if (proxy) {
        const authServerRef = get(spec, 'authServerRef');
        const refKind = get(authServerRef, 'kind');
        if (refKind === undefined || refKind === EXTAUTH_KIND) push('authServerRef', authServerRef);
      }
      if (kind === 'VirtualMCPServer') {
        push(
          'outgoingAuth.default.externalAuthConfigRef',
          get(get(get(spec, 'outgoingAuth'), 'default'), 'externalAuthConfigRef'),
        );
        const discovered = get(obj.status, 'discoveredBackends');
        if (Array.isArray(discovered)) {
          for (const backend of discovered)
            push('status.discoveredBackends[].authConfigRef', get(backend, 'authConfigRef'));
        }
      }
      break;
    case 'MCPToolConfig':
      if (proxy) push('toolConfigRef', get(spec, 'toolConfigRef'));
      if (kind === 'VirtualMCPServer') {
        const tools = get(get(get(spec, 'config'), 'aggregation'), 'tools');
        if (Array.isArray(tools))
          for (const t of tools) push('config.aggregation.tools[].toolConfigRef', get(t, 'toolConfigRef'));
      }
      break;
    case 'MCPOIDCConfig':
      if (proxy) push('oidcConfigRef', get(spec, 'oidcConfigRef'));
      if (kind === 'VirtualMCPServer') push('incomingAuth.oidcConfigRef', get(incoming, 'oidcConfigRef'));
      break;
    case 'MCPAuthzConfig':
      if (proxy) push('authzConfigRef', get(spec, 'authzConfigRef'));
      if (kind === 'VirtualMCPServer') push('incomingAuth.authzConfigRef', get(incoming, 'authzConfigRef'));
      break;
    case 'MCPTelemetryConfig':
      if (proxy || kind === 'VirtualMCPServer') push('telemetryConfigRef', get(spec, 'telemetryConfigRef'));
      break;
    case 'MCPWebhookConfig':
      if (kind === 'MCPServer') push('webhookConfigRef', get(spec, 'webhookConfigRef'));
      break;
    default:
      break;
  }
  return out;
}
