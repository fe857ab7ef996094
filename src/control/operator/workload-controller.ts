/**
 * The workload controller (docs/kubernetes.md): informers (`informer.ts`: list+watch, re-list after
 * a 410) of MCPServer, MCPRemoteProxy, VirtualMCPServer, MCPGroup, MCPServerEntry and
 * MCPExternalAuthConfig (and the Deployments and StatefulSets rendered for them, whose pods'
 * readiness their status reports, so it follows a rollout), and a reconcile that applies exactly what `renderResources` (`skep
 * operator render`) produces for a resource from the objects of its namespace, then writes its
 * status: `phase`, `url`, `message`, `observedGeneration`, the referenced configs' hashes and
 * conditions (`Valid`, `Ready`) with observedGeneration. A changed MCPExternalAuthConfig re-renders
 * its consumers, whose pod annotations change (rollout); a VirtualMCPServer records the backends
 * discovered in its MCPGroup (`status.discoveredBackends`, read by the MCPExternalAuthConfig
 * controller for `referencingWorkloads`); an MCPGroup records its members. Created objects carry
 * owner references, so Kubernetes' garbage collector removes them with the resource (no finalizer).
 */
import { isRecord, type Logger } from '../../shared/index.js';
import type { Condition } from '../../schemas/extauth/index.js';
import { EXTAUTH_KIND } from '../../schemas/extauth/index.js';
import { OPERATOR_KINDS } from '../../schemas/operator/index.js';
import { conditionsOf, stampCondition } from './conditions.js';
import {
  type EmbeddingStatus,
  embeddingStatus,
  MODEL_CACHE_CLAIM,
  modelCacheClaims,
} from './embedding-status.js';
import { ControllerLoop } from './controller-loop.js';
import type { InformerEvent } from './informer.js';
import { type KubeClient, type KubeObject, type ObjectClient, type ResourceType, statusOf } from './kube.js';
import { EXTAUTH_RESOURCE, referencedConfigs, type WorkloadKind } from './references.js';
import { validateResource } from './resource-validate.js';
import { formatProblem } from './validate.js';
import { groupBackends, type K8sObject, type RenderOptions, renderResources } from './render.js';
import { at, listAt, stringAt, stringsAt } from './json-fields.js';
import type { WorkQueue } from './workqueue.js';

type Node = Record<string, unknown>;

export interface WorkloadControllerOptions {
  kube: KubeClient;
  objects: ObjectClient;
  logger: Logger;
  namespace?: string;
  render?: RenderOptions;
  now?: () => Date;
  /** First delay before re-listing after a watch fails or expires (410); doubles per failure. */
  relistDelayMs?: number;
}

const TYPES: Array<{ kind: string; type: ResourceType }> = [
  ...OPERATOR_KINDS.map((k) => ({
    kind: k.kind,
    type: { group: EXTAUTH_RESOURCE.group, version: EXTAUTH_RESOURCE.version, plural: k.plural },
  })),
  { kind: EXTAUTH_KIND, type: EXTAUTH_RESOURCE },
];
const typeOf = (kind: string) => TYPES.find((t) => t.kind === kind)!.type;
/**
 * The StatefulSets rendered for EmbeddingServers: their status (pods created, ready) is what the
 * EmbeddingServer's `Ready` and `ModelReady` conditions report, so a change re-reconciles it.
 */
const EMBEDDING_STATEFULSETS: ResourceType = {
  group: 'apps',
  version: 'v1',
  plural: 'statefulsets',
  labelSelector: 'app.kubernetes.io/name=embeddingserver',
};
/** The kinds rendered into a Deployment, by the `app.kubernetes.io/name` label it carries. */
const DEPLOYED_KINDS = new Map(
  ['MCPServer', 'MCPRemoteProxy', 'VirtualMCPServer', 'MCPRegistry'].map((k) => [k.toLowerCase(), k]),
);
/**
 * The Deployments rendered for workloads: their ready replicas are what the workload's `phase`,
 * `Ready` condition and `readyReplicas` report, so a change of a Deployment's status
 * re-reconciles its workload. Selected by the `app.kubernetes.io/name` label, which
 * `resourceOverrides` cannot change (it is part of the pods' selector).
 */
const WORKLOAD_DEPLOYMENTS: ResourceType = {
  group: 'apps',
  version: 'v1',
  plural: 'deployments',
  labelSelector: `app.kubernetes.io/name in (${[...DEPLOYED_KINDS.keys()].join(',')})`,
};
const RECONCILED = new Set([
  'MCPServer',
  'MCPRemoteProxy',
  'VirtualMCPServer',
  'MCPGroup',
  'MCPServerEntry',
  'MCPRegistry',
  'EmbeddingServer',
  'VirtualMCPCompositeToolDefinition',
]);
/** Shared configuration kinds whose change re-renders the workloads that reference them. */
const CONFIG_KINDS = new Set([
  EXTAUTH_KIND,
  'MCPToolConfig',
  'MCPOIDCConfig',
  'MCPAuthzConfig',
  'MCPTelemetryConfig',
  'MCPWebhookConfig',
]);
const REFERENCING: ReadonlySet<string> = new Set<WorkloadKind>([
  'MCPServer',
  'MCPRemoteProxy',
  'VirtualMCPServer',
]);
const isReferencing = (kind: string | undefined): kind is WorkloadKind =>
  kind !== undefined && REFERENCING.has(kind);

/**
 * The condition of each reference a workload may hold (the reference's condition types), with the
 * problem prefixes that mean the reference is broken.
 */
const REF_CONDITIONS: Array<{ type: string; fields: string[]; present: (spec: Node) => boolean }> = [
  { type: 'GroupRefValidated', fields: ['spec.groupRef'], present: (s) => s['groupRef'] !== undefined },
  {
    type: 'ExternalAuthConfigValidated',
    fields: ['spec.externalAuthConfigRef', 'spec.outgoingAuth'],
    present: (s) => s['externalAuthConfigRef'] !== undefined || s['outgoingAuth'] !== undefined,
  },
  {
    type: 'AuthServerRefValidated',
    fields: ['spec.authServerRef'],
    present: (s) => s['authServerRef'] !== undefined,
  },
  {
    type: 'OIDCConfigRefValidated',
    fields: ['spec.oidcConfigRef', 'spec.incomingAuth.oidcConfigRef'],
    present: (s) => s['oidcConfigRef'] !== undefined || at(s, 'incomingAuth', 'oidcConfigRef') !== undefined,
  },
  {
    type: 'AuthzConfigRefValidated',
    fields: [
      'spec.authzConfigRef',
      'spec.incomingAuth.authzConfigRef',
      'spec.authzConfig',
      'spec.incomingAuth.authzConfig',
    ],
    present: (s) =>
      s['authzConfigRef'] !== undefined ||
      s['authzConfig'] !== undefined ||
      at(s, 'incomingAuth', 'authzConfigRef') !== undefined ||
      at(s, 'incomingAuth', 'authzConfig') !== undefined,
  },
  {
    type: 'ToolConfigValidated',
    fields: ['spec.toolConfigRef', 'spec.config.aggregation.tools'],
    present: (s) =>
      s['toolConfigRef'] !== undefined || JSON.stringify(s['config'] ?? {}).includes('"toolConfigRef"'),
  },
  {
    type: 'TelemetryConfigRefValidated',
    fields: ['spec.telemetryConfigRef'],
    present: (s) => s['telemetryConfigRef'] !== undefined,
  },
  {
    type: 'WebhookConfigValidated',
    fields: ['spec.webhookConfigRef'],
    present: (s) => s['webhookConfigRef'] !== undefined,
  },
  {
    type: 'CompositeToolRefsValidated',
    fields: ['spec.config.compositeToolRefs', 'spec.config: vmcp.compositeTools'],
    present: (s) => at(s, 'config', 'compositeToolRefs') !== undefined,
  },
  {
    type: 'EmbeddingServerReady',
    fields: ['spec.embeddingServerRef'],
    present: (s) => s['embeddingServerRef'] !== undefined,
  },
];

/** Status fields that copy a pod-template hash annotation, per kind. */
const HASH_STATUS: Record<string, Array<[string, string]>> = {
  MCPServer: [
    ['skep.dev/external-auth-config-hash', 'externalAuthConfigHash'],
    ['skep.dev/auth-server-config-hash', 'authServerConfigHash'],
    ['skep.dev/tool-config-hash', 'toolConfigHash'],
    ['skep.dev/oidc-config-hash', 'oidcConfigHash'],
    ['skep.dev/authz-config-hash', 'authzConfigHash'],
    ['skep.dev/telemetry-config-hash', 'telemetryConfigHash'],
    ['skep.dev/webhook-config-hash', 'webhookConfigHash'],
  ],
  MCPRemoteProxy: [
    ['skep.dev/external-auth-config-hash', 'externalAuthConfigHash'],
    ['skep.dev/auth-server-config-hash', 'authServerConfigHash'],
    ['skep.dev/tool-config-hash', 'toolConfigHash'],
    ['skep.dev/oidc-config-hash', 'oidcConfigHash'],
    ['skep.dev/authz-config-hash', 'authzConfigHash'],
    ['skep.dev/telemetry-config-hash', 'telemetryConfigHash'],
  ],
  VirtualMCPServer: [
    ['skep.dev/oidc-config-hash', 'oidcConfigHash'],
    ['skep.dev/authz-config-hash', 'authzConfigHash'],
    ['skep.dev/telemetry-config-hash', 'telemetryConfigHash'],
  ],
};

const nsOf = (o: KubeObject) => o.metadata.namespace ?? 'default';
const specOf = (o: KubeObject): Node => o.spec ?? {};
const refName = (v: unknown) => at(v, 'name');
const MEMBER_KINDS = new Set(['MCPServer', 'MCPRemoteProxy', 'MCPServerEntry']);

export class WorkloadController {
  readonly #o: WorkloadControllerOptions;
  readonly #cache = new Map<string, KubeObject>(); // kind/ns/name
  readonly #loop: ControllerLoop;
  readonly #queue: WorkQueue;

  constructor(options: WorkloadControllerOptions) {
    this.#o = options;
    this.#loop = new ControllerLoop({
      kube: options.kube,
      logger: options.logger,
      namespace: options.namespace,
      relistDelayMs: options.relistDelayMs,
      retryDelayMs: 200,
      reconcile: (key) => this.reconcile(key),
    });
    this.#queue = this.#loop.queue;
  }

  async start(): Promise<void> {
    // A CRD that is not installed: nothing of this kind exists (re-listed with backoff).
    for (const { kind, type } of TYPES)
      this.#loop.watch(kind, type, (event, obj) => this.#onEvent(kind, event, obj), true);
    this.#loop.watch('StatefulSet', EMBEDDING_STATEFULSETS, (_event, obj) => this.#onPods(obj), true);
    this.#loop.watch('Deployment', WORKLOAD_DEPLOYMENTS, (_event, obj) => this.#onPods(obj), true);
    await this.#loop.start();
  }

  close(): Promise<void> {
    return this.#loop.close();
  }

  #onEvent(kind: string, event: InformerEvent, obj: KubeObject): void {
    const key = `${kind}/${nsOf(obj)}/${obj.metadata.name}`;
    if (event === 'DELETED') this.#cache.delete(key);
    else this.#cache.set(key, obj);
    this.#enqueueAffected(kind, obj);
  }

  /**
   * A rendered Deployment or StatefulSet changed (its pods' readiness, or it was deleted): the
   * status of the resource it runs follows.
   */
  #onPods(obj: KubeObject): void {
    const labels = obj.metadata['labels'];
    if (!isRecord(labels)) return;
    const name = labels['app.kubernetes.io/name'];
    const instance = labels['app.kubernetes.io/instance'];
    const kind =
      name === 'embeddingserver'
        ? 'EmbeddingServer'
        : typeof name === 'string'
          ? DEPLOYED_KINDS.get(name)
          : undefined;
    if (kind !== undefined && typeof instance === 'string')
      this.#queue.add(`${kind}/${nsOf(obj)}/${instance}`);
  }

  /** The resource itself, and whatever renders from it (consumers of a config, vMCPs of a group). */
  #enqueueAffected(kind: string, obj: KubeObject): void {
    const ns = nsOf(obj);
    const name = obj.metadata.name;
    if (RECONCILED.has(kind)) this.#queue.add(`${kind}/${ns}/${name}`);
    const group = refName(specOf(obj)['groupRef']);
    for (const [key, o] of this.#cache) {
      if (nsOf(o) !== ns) continue;
      const [k] = key.split('/');
      const spec = specOf(o);
      if (kind === EXTAUTH_KIND && (k === 'MCPServer' || k === 'MCPRemoteProxy')) {
        if (refName(spec['externalAuthConfigRef']) === name || refName(spec['authServerRef']) === name)
          this.#queue.add(key);
      }
      // A shared configuration re-renders the workloads that reference it.
      if (kind !== EXTAUTH_KIND && CONFIG_KINDS.has(kind) && isReferencing(k)) {
        if (referencedConfigs(k, o, kind).some((r) => r.name === name)) this.#queue.add(key);
      }
      if (
        k === 'VirtualMCPServer' &&
        kind === 'EmbeddingServer' &&
        refName(spec['embeddingServerRef']) === name
      )
        this.#queue.add(key);
      if (k === 'VirtualMCPServer' && kind === 'VirtualMCPCompositeToolDefinition') {
        const refs = listAt(spec, 'config', 'compositeToolRefs');
        if (refs.some((r) => refName(r) === name)) this.#queue.add(key);
      }
      // A VirtualMCPServer's references are listed in the composite tool definition's status.
      if (kind === 'VirtualMCPServer' && k === 'VirtualMCPCompositeToolDefinition') this.#queue.add(key);
      if (k === 'VirtualMCPServer') {
        const vgroup = refName(spec['groupRef']);
        if ((kind === 'MCPGroup' && vgroup === name) || (group !== undefined && vgroup === group))
          this.#queue.add(key);
        // Its pod's configuration holds the strategies of the default and of every member.
        if (kind === EXTAUTH_KIND && this.#vmcpUsesConfig(ns, spec, vgroup, name)) this.#queue.add(key);
      }
      if (k === 'MCPGroup' && group !== undefined && o.metadata.name === group) this.#queue.add(key);
    }
  }

  #vmcpUsesConfig(ns: string, spec: Node, group: unknown, config: string): boolean {
    if (refName(at(spec, 'outgoingAuth', 'default', 'externalAuthConfigRef')) === config) return true;
    for (const [key, o] of this.#cache) {
      if (nsOf(o) !== ns || !MEMBER_KINDS.has(key.split('/')[0] ?? '')) continue;
      const member = specOf(o);
      if (refName(member['groupRef']) === group && refName(member['externalAuthConfigRef']) === config)
        return true;
    }
    return false;
  }

  /** One pass over one resource (`Kind/namespace/name`). */
  async reconcile(key: string): Promise<void> {
    const [kind = '', namespace = 'default', name = ''] = key.split('/');
    const obj = await this.#o.kube.get(typeOf(kind), namespace, name);
    if (obj === undefined || obj.metadata.deletionTimestamp !== undefined) return;
    const generation = obj.metadata.generation ?? 0;
    const inNamespace = [...this.#cache.entries()]
      .filter(([k, o]) => nsOf(o) === namespace && k !== key)
      .map(([, o]) => o);
    if (kind === 'MCPGroup') return this.#groupStatus(obj, inNamespace, generation);
    if (kind === 'VirtualMCPCompositeToolDefinition')
      return this.#compositeStatus(obj, inNamespace, generation);
    if (kind === 'MCPServerEntry') {
      const group = refName(specOf(obj)['groupRef']);
      const found = inNamespace.some((o) => o.kind === 'MCPGroup' && o.metadata.name === group);
      return this.#writeStatus(kind, obj, {
        phase: found ? 'Valid' : 'Failed',
        observedGeneration: generation,
        conditions: this.#conditions(obj, generation, [
          found
            ? { type: 'GroupRefValidated', status: 'True', reason: 'GroupFound', message: '' }
            : {
                type: 'GroupRefValidated',
                status: 'False',
                reason: 'GroupNotFound',
                message: `MCPGroup ${String(group)} not found`,
              },
        ]),
      });
    }
    const docs = [...inNamespace, obj].map((o) => Object.assign({ apiVersion: 'skep.dev/v1beta1' }, o));
    const result = await renderResources(
      docs.filter((d) => d === docs[docs.length - 1] || d.kind !== kind || !RENDER_SELF_ONLY.has(kind)),
      Object.assign({}, this.#o.render, { namespace }),
    );
    const own = result.objects.filter((o) => ownedBy(o, obj));
    const problems = result.problems.filter(
      (p) => p.resource === `${kind}/${namespace}/${name}` || p.resource === `${kind}/${name}`,
    );
    if (problems.length > 0) {
      const message = problems
        .map((p) => p.problem)
        .join('; ')
        .slice(0, 32768);
      return this.#writeStatus(kind, obj, {
        phase: 'Failed',
        message,
        observedGeneration: generation,
        conditions: this.#conditions(obj, generation, [
          { type: 'Valid', status: 'False', reason: 'ValidationFailed', message },
          { type: 'Ready', status: 'False', reason: 'Invalid', message: 'the resource is invalid' },
          ...refConditions(
            specOf(obj),
            problems.map((p) => p.problem),
          ),
        ]),
      });
    }
    for (const o of own) await this.#apply(o);
    // The pods: a Deployment (StatefulSet for an EmbeddingServer); an MCPRegistry's is `<n>-api`.
    const deployment = own.find((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet');
    const live =
      deployment === undefined
        ? undefined
        : await this.#o.objects.get('apps/v1', deployment.kind, namespace, deployment.metadata.name);
    const want = Number(at(deployment, 'spec', 'replicas') ?? 1);
    const ready = Number(at(live, 'status', 'readyReplicas') ?? 0);
    const isReady = ready >= want && want > 0;
    const embedding =
      kind === 'EmbeddingServer' && deployment !== undefined
        ? await this.#embeddingStatus(deployment, live, want, namespace)
        : undefined;
    const annotations = stringsAt(deployment, 'spec', 'template', 'metadata', 'annotations');
    const status: Node = {
      phase: isReady ? 'Ready' : (embedding?.phase ?? 'Pending'),
      message: isReady ? '' : (embedding?.message ?? `${ready}/${want} replicas ready`),
      url: result.urls.get(`${kind}/${namespace}/${name}`),
      observedGeneration: generation,
      conditions: this.#conditions(obj, generation, [
        { type: 'Valid', status: 'True', reason: 'ValidationSucceeded', message: '' },
        ...refConditions(specOf(obj), []),
        isReady
          ? { type: 'Ready', status: 'True', reason: 'DeploymentReady', message: '' }
          : {
              type: 'Ready',
              status: 'False',
              reason: 'DeploymentNotReady',
              message: `${ready}/${want} replicas ready`,
            },
        ...(embedding?.conditions ?? []),
      ]),
    };
    for (const [annotation, field] of HASH_STATUS[kind] ?? [])
      if (annotations[annotation] !== undefined) status[field] = annotations[annotation];
    if (kind !== 'VirtualMCPServer') {
      status['readyReplicas'] = ready;
    } else {
      const backends = groupBackends(
        {
          of: (k) => docs.filter((d) => d.kind === k),
          ns: (d) => d.metadata.namespace ?? 'default',
        },
        namespace,
        String(refName(specOf(obj)['groupRef'])),
      );
      // Served: the backends the rendered run configuration lists; a member left out (its
      // auth cannot be expressed) is `unavailable`, with the reason in BackendsDiscovered.
      const cm = own.find((o) => o.kind === 'ConfigMap');
      const rc: unknown = JSON.parse(stringAt(cm, 'data', 'runconfig.json') ?? '{}');
      const served = new Set(listAt(rc, 'vmcp', 'backends').map((b) => at(b, 'name')));
      status['discoveredBackends'] = backends.map((b) =>
        Object.assign({}, b, { status: served.has(String(b['name'])) ? 'ready' : 'unavailable' }),
      );
      status['backendCount'] = served.size;
      const left = result.warnings.filter((w) => w.resource === `${kind}/${namespace}/${name}`);
      status['conditions'] = [
        ...listAt(status, 'conditions'),
        ...this.#conditions(obj, generation, [
          left.length === 0
            ? { type: 'BackendsDiscovered', status: 'True', reason: 'AllBackendsServed', message: '' }
            : {
                type: 'BackendsDiscovered',
                status: 'False',
                reason: 'BackendsLeftOut',
                message: left
                  .map((w) => w.problem)
                  .join('; ')
                  .slice(0, 32768),
              },
        ]),
      ];
    }
    await this.#writeStatus(kind, obj, status);
  }

  /** An EmbeddingServer's model and volume conditions, from its StatefulSet and model-cache claims. */
  async #embeddingStatus(
    statefulSet: K8sObject,
    live: KubeObject | undefined,
    want: number,
    namespace: string,
  ): Promise<EmbeddingStatus> {
    const templates = listAt(statefulSet, 'spec', 'volumeClaimTemplates');
    if (!templates.some((t) => at(t, 'metadata', 'name') === MODEL_CACHE_CLAIM))
      return embeddingStatus({ want, live });
    const claims = await Promise.all(
      modelCacheClaims(statefulSet.metadata.name, want).map(async (name) => ({
        name,
        claim: await this.#o.objects.get('v1', 'PersistentVolumeClaim', namespace, name),
      })),
    );
    return embeddingStatus({ want, live, claims });
  }

  /**
   * A composite tool definition: validated by the shared library, with the VirtualMCPServers that
   * reference it (`referencingVirtualServers`). Whether the virtual MCP can run it is reported on
   * each VirtualMCPServer (`CompositeToolRefsValidated`).
   */
  async #compositeStatus(def: KubeObject, inNamespace: KubeObject[], generation: number): Promise<void> {
    const { problems } = validateResource(
      Object.assign({}, def, { apiVersion: 'skep.dev/v1beta1', kind: 'VirtualMCPCompositeToolDefinition' }),
    );
    const errors = problems.map(formatProblem);
    const referencing = inNamespace
      .filter(
        (o) =>
          o.kind === 'VirtualMCPServer' &&
          listAt(specOf(o), 'config', 'compositeToolRefs').some((r) => refName(r) === def.metadata.name),
      )
      .map((o) => o.metadata.name)
      .sort();
    const valid = errors.length === 0;
    const message = errors.join('; ').slice(0, 32768);
    await this.#writeStatus('VirtualMCPCompositeToolDefinition', def, {
      validationStatus: valid ? 'Valid' : 'Invalid',
      ...(valid ? {} : { validationErrors: errors }),
      referencingVirtualServers: referencing,
      observedGeneration: generation,
      conditions: this.#conditions(def, generation, [
        valid
          ? { type: 'WorkflowValidated', status: 'True', reason: 'ValidationSuccess', message: '' }
          : { type: 'WorkflowValidated', status: 'False', reason: 'ValidationFailed', message },
        valid
          ? { type: 'Ready', status: 'True', reason: 'WorkflowReady', message: '' }
          : { type: 'Ready', status: 'False', reason: 'WorkflowNotReady', message },
      ]),
    });
  }

  async #groupStatus(group: KubeObject, inNamespace: KubeObject[], generation: number): Promise<void> {
    const members = (kind: string) =>
      inNamespace
        .filter((o) => o.kind === kind && refName(specOf(o)['groupRef']) === group.metadata.name)
        .map((o) => o.metadata.name)
        .sort();
    const servers = members('MCPServer');
    const remoteProxies = members('MCPRemoteProxy');
    const entries = members('MCPServerEntry');
    await this.#writeStatus('MCPGroup', group, {
      phase: 'Ready',
      servers,
      serverCount: servers.length,
      remoteProxies,
      remoteProxyCount: remoteProxies.length,
      entries,
      entryCount: entries.length,
      observedGeneration: generation,
      conditions: this.#conditions(group, generation, [
        { type: 'MCPServersChecked', status: 'True', reason: 'ListMCPServersCheckSucceeded', message: '' },
      ]),
    });
  }

  /** Create, or replace when what the render owns differs (labels, annotations, spec/data/rules). */
  async #apply(o: K8sObject): Promise<void> {
    const ns = o.metadata.namespace ?? 'default';
    const current = await this.#o.objects.get(o.apiVersion, o.kind, ns, o.metadata.name);
    if (current === undefined) {
      await this.#o.objects.create(o);
      this.#o.logger.info({ kind: o.kind, namespace: ns, name: o.metadata.name }, 'created');
      return;
    }
    const owned = (x: unknown) =>
      JSON.stringify([
        at(x, 'metadata', 'labels'),
        at(x, 'metadata', 'annotations'),
        at(x, 'metadata', 'ownerReferences'),
        at(x, 'spec'),
        at(x, 'data'),
        at(x, 'rules'),
        at(x, 'roleRef'),
        at(x, 'subjects'),
        at(x, 'automountServiceAccountToken'),
      ]);
    if (owned(o) === owned(current)) return;
    const { resourceVersion } = current.metadata;
    const next = Object.assign({}, o, {
      metadata: Object.assign({}, o.metadata, resourceVersion === undefined ? {} : { resourceVersion }),
    });
    await this.#o.objects.replace(next);
    this.#o.logger.info({ kind: o.kind, namespace: ns, name: o.metadata.name }, 'updated');
  }

  #conditions(
    obj: KubeObject,
    generation: number,
    next: Array<Omit<Condition, 'lastTransitionTime'>>,
  ): Condition[] {
    const now = this.#o.now?.() ?? new Date();
    const previous = conditionsOf(obj);
    return next.map((c) => stampCondition(previous, c, generation, now));
  }

  async #writeStatus(kind: string, obj: KubeObject, status: Node): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const current =
        attempt === 1 ? obj : await this.#o.kube.get(typeOf(kind), nsOf(obj), obj.metadata.name);
      if (current === undefined) return;
      // Through JSON: the fields left undefined are dropped, as the API server would.
      const clean: Node = JSON.parse(JSON.stringify(status));
      if (JSON.stringify(clean) === JSON.stringify(current.status ?? {})) return;
      try {
        await this.#o.kube.replaceStatus(typeOf(kind), Object.assign({}, current, { status: clean }));
        return;
      } catch (err) {
        if (statusOf(err) !== 409 || attempt >= 5) throw err;
      }
    }
  }
}

/** One condition per reference the spec holds: False with the problems that name it, else True. */
function refConditions(spec: Node, problems: string[]): Array<Omit<Condition, 'lastTransitionTime'>> {
  const out: Array<Omit<Condition, 'lastTransitionTime'>> = [];
  for (const c of REF_CONDITIONS) {
    if (!c.present(spec)) continue;
    const mine = problems.filter((p) => c.fields.some((f) => p.startsWith(f)));
    out.push(
      mine.length === 0
        ? { type: c.type, status: 'True', reason: 'Valid', message: '' }
        : { type: c.type, status: 'False', reason: 'Invalid', message: mine.join('; ').slice(0, 32768) },
    );
  }
  return out;
}

/** Kinds whose render of other resources of the same kind is not needed for this one. */
const RENDER_SELF_ONLY = new Set([
  'MCPServer',
  'MCPRemoteProxy',
  'VirtualMCPServer',
  'MCPRegistry',
  'EmbeddingServer',
]);

function ownedBy(o: K8sObject, cr: KubeObject): boolean {
  const labels = o.metadata.labels ?? {};
  return (
    labels['app.kubernetes.io/instance'] === cr.metadata.name &&
    labels['app.kubernetes.io/name'] === String(cr.kind).toLowerCase()
  );
}
