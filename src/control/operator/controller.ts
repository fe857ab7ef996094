/**
 * The controller of the shared configuration kinds (MCPExternalAuthConfig, MCPToolConfig,
 * MCPOIDCConfig, MCPAuthzConfig, MCPTelemetryConfig, MCPWebhookConfig; one instance per kind):
 * informers (`informer.ts`: list+watch, re-list after a
 * 410 or a failed watch) of the configs and of the workloads that reference them, a work
 * queue with backoff, and a reconcile that
 *  - keeps a finalizer, and blocks deletion while workloads reference the config
 *    (condition `DeletionBlocked`, naming them), releasing it once they are gone;
 *  - validates with the shared library (reading Secrets for the HMAC length) and writes the
 *    `Valid` condition with `observedGeneration`;
 *  - records `configHash` and `referencingWorkloads`;
 *  - tells referencing workloads to roll out by writing the hash into an annotation on them.
 * Status goes through the status subresource with a resourceVersion-checked PUT, retried on
 * 409 Conflict against a fresh read.
 */
import type { Logger } from '../../shared/index.js';
import type { Condition, ReferencingWorkload } from '../../schemas/extauth/index.js';
import { EXTAUTH_API_VERSION, EXTAUTH_KIND, REFERENCING_KINDS } from '../../schemas/extauth/index.js';
import { SHARED_CONFIG_KINDS } from '../../schemas/operator/index.js';
import { conditionsOf, stampCondition } from './conditions.js';
import { configHash } from './config-hash.js';
import { ControllerLoop } from './controller-loop.js';
import { type KubeClient, type KubeObject, type ResourceType, statusOf } from './kube.js';
import { validateResource } from './resource-validate.js';
import type { InformerEvent } from './informer.js';
import {
  EXTAUTH_RESOURCE,
  REF_ANNOTATIONS,
  type RefField,
  referencedConfigs,
  WORKLOAD_TYPES,
  type WorkloadKind,
} from './references.js';
import {
  formatProblem,
  type Problem,
  type SecretReader,
  validateExtAuthConfigWithSecrets,
} from './validate.js';
import type { WorkQueue } from './workqueue.js';

export const FINALIZER = 'skep.dev/mcpexternalauthconfig-finalizer';
const STATUS_RETRIES = 5;

/** What the controller needs to know of one shared configuration kind. */
export interface ConfigKindSpec {
  kind: string;
  resource: ResourceType;
  finalizer: string;
  /** The problems of an object (empty: valid). */
  validate(obj: KubeObject, readSecret: SecretReader): Promise<Problem[]>;
}

export const EXTAUTH_SPEC: ConfigKindSpec = {
  kind: EXTAUTH_KIND,
  resource: EXTAUTH_RESOURCE,
  finalizer: FINALIZER,
  validate: async (obj, readSecret) => (await validateExtAuthConfigWithSecrets(obj, readSecret)).problems,
};

/** MCPToolConfig, MCPOIDCConfig, MCPAuthzConfig, MCPTelemetryConfig and MCPWebhookConfig. */
export const SHARED_CONFIG_SPECS: ConfigKindSpec[] = SHARED_CONFIG_KINDS.map((def) => ({
  kind: def.kind,
  resource: { group: EXTAUTH_RESOURCE.group, version: EXTAUTH_RESOURCE.version, plural: def.plural },
  finalizer: `skep.dev/${def.singular}-finalizer`,
  validate: async (obj) =>
    validateResource(Object.assign({}, obj, { apiVersion: EXTAUTH_API_VERSION, kind: def.kind })).problems,
}));

export interface ControllerOptions {
  kube: KubeClient;
  logger: Logger;
  /** Watch one namespace only; all namespaces when omitted. */
  namespace?: string;
  /** How soon a deletion blocked by references is re-checked (references also trigger it). */
  blockedRecheckMs?: number;
  backoffBaseMs?: number;
  /** First delay before re-listing after a watch fails or expires (410); doubles per failure. */
  relistDelayMs?: number;
  now?: () => Date;
  /** The kind this controller serves (default MCPExternalAuthConfig). */
  config?: ConfigKindSpec;
}

interface Workload {
  kind: WorkloadKind;
  name: string;
  namespace: string;
  refs: Array<{ field: RefField; name: string }>;
}

const keyOf = (namespace: string, name: string) => `${namespace}/${name}`;

/** Builds a secret reader over the API (undefined when missing or not allowed). */
export function kubeSecretReader(kube: KubeClient, logger: Logger): SecretReader {
  return async (namespace, name, key) => {
    try {
      return (await kube.readSecret(namespace, name))?.[key];
    } catch (err) {
      logger.debug({ namespace, name, status: statusOf(err) }, 'secret not readable');
      return undefined;
    }
  };
}

export class ConfigController {
  readonly #spec: ConfigKindSpec;
  readonly #kube: KubeClient;
  readonly #log: Logger;
  readonly #loop: ControllerLoop;
  readonly #queue: WorkQueue;
  readonly #workloads = new Map<string, Workload>(); // kind/namespace/name → refs
  readonly #readSecret: SecretReader;

  readonly #options: ControllerOptions;

  constructor(options: ControllerOptions) {
    this.#options = options;
    this.#spec = options.config ?? EXTAUTH_SPEC;
    this.#kube = options.kube;
    this.#log = options.logger;
    this.#loop = new ControllerLoop({
      kube: options.kube,
      logger: options.logger,
      namespace: options.namespace,
      relistDelayMs: options.relistDelayMs,
      retryDelayMs: options.backoffBaseMs ?? 200,
      reconcile: (key) => this.reconcile(key),
    });
    this.#queue = this.#loop.queue;
    this.#readSecret = kubeSecretReader(this.#kube, this.#log);
  }

  /** Starts informers, waits for their first list, then starts the worker. */
  async start(): Promise<void> {
    // A CRD that is not installed (only for the kinds added after MCPExternalAuthConfig) is empty.
    this.#loop.watch(
      'config',
      this.#spec.resource,
      (type, obj) => this.#onConfig(type, obj),
      this.#spec.kind !== EXTAUTH_KIND,
    );
    // A workload CRD that is not installed answers 404: nothing can reference through it.
    for (const w of WORKLOAD_TYPES)
      this.#loop.watch(w.kind, w.type, (type, obj) => this.#onWorkload(w.kind, type, obj), true);
    await this.#loop.start();
  }

  close(): Promise<void> {
    return this.#loop.close();
  }

  #onConfig(_type: InformerEvent, obj: KubeObject): void {
    this.#queue.add(keyOf(obj.metadata.namespace ?? 'default', obj.metadata.name));
  }

  #onWorkload(kind: WorkloadKind, type: InformerEvent, obj: KubeObject): void {
    const namespace = obj.metadata.namespace ?? 'default';
    const id = `${kind}/${namespace}/${obj.metadata.name}`;
    const before = this.#workloads.get(id);
    const refs = type === 'DELETED' ? [] : referencedConfigs(kind, obj, this.#spec.kind);
    if (refs.length === 0) this.#workloads.delete(id);
    else this.#workloads.set(id, { kind, name: obj.metadata.name, namespace, refs });
    // Both the old and the new targets must re-reconcile (a reference moved or disappeared).
    for (const r of [...(before?.refs ?? []), ...refs]) this.#queue.add(keyOf(namespace, r.name));
  }

  /** Workloads referencing `namespace/name` of this controller's kind. */
  #referencing(namespace: string, name: string): Workload[] {
    return [...this.#workloads.values()]
      .filter((w) => w.namespace === namespace && w.refs.some((r) => r.name === name))
      .sort((a, b) => (a.kind === b.kind ? a.name.localeCompare(b.name) : a.kind.localeCompare(b.kind)));
  }

  /** One pass over one config. Exposed for tests that drive reconcile directly. */
  async reconcile(key: string): Promise<void> {
    const [namespace = 'default', name = ''] = key.split('/');
    const spec = this.#spec;
    const finalizer = spec.finalizer;
    let obj = await this.#kube.get(spec.resource, namespace, name);
    if (obj === undefined) return;
    const refs = this.#referencing(namespace, name);

    if (obj.metadata.deletionTimestamp !== undefined) {
      if (!(obj.metadata.finalizers ?? []).includes(finalizer)) return;
      if (refs.length > 0) {
        const who = refs.map((r) => `${r.kind}/${r.name}`).join(', ');
        await this.#writeStatus(namespace, name, (current) => ({
          ...current.status,
          referencingWorkloads: statusWorkloads(refs),
          conditions: setCondition(current, this.#now(), {
            type: 'DeletionBlocked',
            status: 'True',
            reason: 'ReferencedByWorkloads',
            message: `Cannot delete: referenced by workloads: ${who}`,
          }),
        }));
        this.#queue.addAfter(key, this.#options.blockedRecheckMs ?? 30_000);
        this.#log.info({ key, referencedBy: who }, 'deletion blocked');
        return;
      }
      await this.#kube.mergePatch(spec.resource, namespace, name, {
        metadata: {
          resourceVersion: obj.metadata.resourceVersion,
          finalizers: (obj.metadata.finalizers ?? []).filter((f) => f !== finalizer),
        },
      });
      this.#log.info({ key }, 'finalizer removed');
      return;
    }

    if (!(obj.metadata.finalizers ?? []).includes(finalizer)) {
      obj = await this.#kube.mergePatch(spec.resource, namespace, name, {
        metadata: {
          resourceVersion: obj.metadata.resourceVersion,
          finalizers: [...(obj.metadata.finalizers ?? []), finalizer],
        },
      });
    }

    const problems = await spec.validate(obj, this.#readSecret);
    const valid = problems.length === 0;
    const hash = configHash(obj.spec);
    const validCondition: Omit<Condition, 'lastTransitionTime'> = valid
      ? { type: 'Valid', status: 'True', reason: 'ValidationSucceeded', message: 'Spec validation passed' }
      : {
          type: 'Valid',
          status: 'False',
          reason: 'ValidationFailed',
          message: problems.map(formatProblem).join('; ').slice(0, 32768),
        };
    // Everything written describes the generation that was validated, even if a newer one
    // arrived meanwhile (its own watch event reconciles it next).
    const generation = obj.metadata.generation ?? 0;
    await this.#writeStatus(namespace, name, (current) => {
      const status: Record<string, unknown> = {
        ...current.status,
        observedGeneration: generation,
        referencingWorkloads: statusWorkloads(refs),
        conditions: setCondition(current, this.#now(), validCondition, generation).filter(
          (c) => c.type !== 'DeletionBlocked',
        ),
      };
      // An invalid spec keeps the last good hash: consumers must not roll out to it.
      if (valid) status['configHash'] = hash;
      return status;
    });
    if (valid) await this.#rollOut(namespace, name, hash, refs);
  }

  /** Writes the hash into each referencing workload's annotation(s); a change rolls it out. */
  async #rollOut(namespace: string, name: string, hash: string, refs: Workload[]): Promise<void> {
    for (const w of refs) {
      const type = WORKLOAD_TYPES.find((t) => t.kind === w.kind)!.type;
      const annotations: Record<string, string> = {};
      for (const r of w.refs) {
        const key = REF_ANNOTATIONS[r.field];
        if (r.name === name && key !== undefined) annotations[key] = hash;
      }
      if (Object.keys(annotations).length === 0) continue;
      const current = await this.#kube.get(type, namespace, w.name);
      if (current === undefined) continue;
      const have = current.metadata.annotations ?? {};
      if (Object.entries(annotations).every(([k, v]) => have[k] === v)) continue;
      await this.#kube.mergePatch(type, namespace, w.name, { metadata: { annotations } });
      this.#log.info(
        { workload: `${w.kind}/${namespace}/${w.name}`, config: name, hash },
        'workload told to roll out',
      );
    }
  }

  /** PUT status with the object's resourceVersion; on 409 re-read and recompute. */
  async #writeStatus(
    namespace: string,
    name: string,
    compute: (current: KubeObject) => Record<string, unknown>,
  ): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const current = await this.#kube.get(this.#spec.resource, namespace, name);
      if (current === undefined) return;
      const status = compute(current);
      if (JSON.stringify(status) === JSON.stringify(current.status ?? {})) return;
      try {
        await this.#kube.replaceStatus(this.#spec.resource, { ...current, status });
        return;
      } catch (err) {
        if (statusOf(err) !== 409 || attempt >= STATUS_RETRIES) throw err;
        this.#log.debug({ namespace, name, attempt }, 'status conflict; retrying');
      }
    }
  }

  #now(): Date {
    return this.#options.now?.() ?? new Date();
  }

  /** True once every informer has completed its first list (for readiness probes). */
  get hasSynced(): boolean {
    return this.#loop.hasSynced;
  }
}

/** The MCPExternalAuthConfig controller (its kind is the default). */
export class ExtAuthController extends ConfigController {}

/** One controller per shared configuration kind but MCPExternalAuthConfig. */
export function sharedConfigControllers(options: Omit<ControllerOptions, 'config'>): ConfigController[] {
  return SHARED_CONFIG_SPECS.map((config) => new ConfigController(Object.assign({}, options, { config })));
}

/** status.referencingWorkloads[].kind is one of ToolHive's three kinds; MCPServerEntry still blocks deletion. */
function statusWorkloads(refs: Workload[]): ReferencingWorkload[] {
  return refs
    .filter((r): r is Workload & { kind: ReferencingWorkload['kind'] } =>
      (REFERENCING_KINDS as readonly string[]).includes(r.kind),
    )
    .map((r) => ({ kind: r.kind, name: r.name }));
}

/** Sets one condition, keeping lastTransitionTime when the status is unchanged and others' conditions. */
function setCondition(
  obj: KubeObject,
  now: Date,
  next: Omit<Condition, 'lastTransitionTime'>,
  generation = obj.metadata.generation ?? 0,
): Condition[] {
  const current = conditionsOf(obj);
  return [...current.filter((c) => c.type !== next.type), stampCondition(current, next, generation, now)];
}
