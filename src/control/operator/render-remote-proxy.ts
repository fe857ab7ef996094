/** MCPRemoteProxy → ConfigMap, ServiceAccount, Deployment (the runner alone) and Service `mcp-<n>-remote-proxy`. */
import type { MCPRemoteProxySpec } from '../../schemas/workloads/index.js';
import { envName, type SecretEnv } from './runconfig.js';
import { Index } from './render-index.js';
import { type CustomResource, rendered, type RenderResult } from './render-common.js';

import {
  applyResourceOverrides,
  configVolume,
  DEFAULT_RESOURCES,
  mergeAuth,
  podSpecOf,
  type Resolved,
  rolloutAnnotations,
  runconfigMap,
  runconfigOf,
  runnerContainer,
  service,
  sharedRunConfig,
  TMP_VOLUME,
  wireSecrets,
  workloadList,
  workloadObjects,
} from './render-pod.js';

export async function renderRemoteProxy(
  cr: CustomResource<MCPRemoteProxySpec>,
  index: Index,
  o: Resolved,
): Promise<RenderResult> {
  const namespace = index.ns(cr);
  const name = cr.metadata.name;
  const { spec } = cr;
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
  return rendered('MCPRemoteProxy', namespace, name, workloadList(objects), url, shared.problems);
}
