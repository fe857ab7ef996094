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
import { stringify } from 'yaml';
import { formatProblem } from './validate.js';
import { foreignResource, validateResource } from './resource-validate.js';
import { Index, keyOf } from './render-index.js';
import { type CustomResource, type K8sObject, type RenderResult } from './render-common.js';
import { at } from './json-fields.js';
import { isRecord } from '../../shared/index.js';
import type {
  MCPRemoteProxySpec,
  MCPServerSpec,
  VirtualMCPServerSpec,
} from '../../schemas/workloads/index.js';

export { type K8sObject, mergePodTemplate, type RenderResult } from './render-common.js';
export {
  ANNOTATIONS,
  dataChecksum,
  DEFAULT_RUNNER_IMAGE,
  type RenderOptions,
  RUNCONFIG_DIR,
  RUNCONFIG_KEY,
  RUNNER_COPY_DIR,
  RUNNER_IMAGE_ENV,
  VMCP_CONFIG_DIR,
  VMCP_PORT,
} from './render-pod.js';
export { SIDECAR_PORT_BASE, sidecarPort } from './render-mcpserver.js';
export { embeddingServerUrl, groupBackends } from './render-virtual.js';
import { renderEmbeddingServer, renderRegistry } from './render-embedding-registry.js';
import { createImageCommandReader, type ImageCommandReader } from './image-command.js';
import { DEFAULT_RUNNER_IMAGE, type RenderOptions, type Resolved, RUNNER_IMAGE_ENV } from './render-pod.js';
import { renderMCPServer } from './render-mcpserver.js';
import { renderRemoteProxy } from './render-remote-proxy.js';
import { renderVirtual } from './render-virtual.js';

type Node = Record<string, unknown>;

/** The spec type of each workload kind rendered from its own schema. */
interface WorkloadSpecs {
  MCPServer: MCPServerSpec;
  MCPRemoteProxy: MCPRemoteProxySpec;
  VirtualMCPServer: VirtualMCPServerSpec;
}

/**
 * A document `validateResource` accepted as a `kind`, with the static type of that kind's schema:
 * the one place the renderer asserts what validation established.
 */
function validated<K extends keyof WorkloadSpecs>(_kind: K, doc: Node): CustomResource<WorkloadSpecs[K]> {
  return doc as CustomResource<WorkloadSpecs[K]>;
}

let defaultReader: ImageCommandReader | undefined;
/** One reader per process, so its digest cache serves every reconcile. */
function defaultImageCommandReader(): ImageCommandReader {
  defaultReader ??= createImageCommandReader();
  return defaultReader;
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
    if (!isRecord(d)) {
      result.problems.push({ resource: `document ${i + 1}`, problem: 'is not an object' });
      continue;
    }
    const doc = d;
    const kind = String(doc['kind']);
    const name = String(at(doc, 'metadata', 'name') ?? '?');
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
    index.invalid.set(keyOf(String(doc['kind']), index.ns(doc), String(at(doc, 'metadata', 'name'))), why);
  for (const doc of valid) {
    const kind = String(doc['kind']);
    if (!RENDERED_KINDS.has(kind)) continue;
    const part =
      kind === 'MCPServer'
        ? await renderMCPServer(validated(kind, doc), index, o)
        : kind === 'MCPRemoteProxy'
          ? await renderRemoteProxy(validated(kind, doc), index, o)
          : kind === 'MCPRegistry'
            ? renderRegistry(doc, index, { image: o.runnerImage })
            : kind === 'EmbeddingServer'
              ? renderEmbeddingServer(doc, index)
              : await renderVirtual(validated('VirtualMCPServer', doc), index, o);
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
