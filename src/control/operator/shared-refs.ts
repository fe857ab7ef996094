/**
 * Folds the shared configurations a workload references (`toolConfigRef`, `oidcConfigRef`,
 * `authzConfigRef`/`authzConfig`, `telemetryConfigRef`, `webhookConfigRef`) and its inline
 * `rateLimiting` into its run configuration, as the reference's operator does, with:
 *  - the pod wiring they need: Secret values reach the runner as environment variables (named in
 *    the run configuration as `<ENV>,target=…` references) or read-only files, never a ConfigMap;
 *    a CA bundle ConfigMap is mounted and given to the runner as `NODE_EXTRA_CA_CERTS`; an OIDC
 *    configuration that validates service-account tokens gets the pod's own token and the cluster CA;
 *  - one pod-template annotation per referenced config holding the hash of its spec, so a change
 *    rolls the pods;
 *  - a problem naming the field for a referenced config that is missing or invalid, or that asks
 *    for something the Skep runner cannot do — never a silent default.
 */
import type { IVolume } from 'kubernetes-models/v1/Volume';
import type { IVolumeMount } from 'kubernetes-models/v1/VolumeMount';
import { AUTHZ_CONFIG_KEYS } from '../../schemas/operator/index.js';
import type {
  MCPAuthzConfigSpec,
  MCPOIDCConfigSpec,
  MCPTelemetryConfigSpec,
  MCPToolConfigSpec,
  MCPWebhookConfigSpec,
} from '../../schemas/operator/index.js';
import type { RunConfig } from '../../schemas/index.js';
import type { MCPServerSpec } from '../../schemas/workloads/index.js';
import { parseAuthzConfig } from '../../dataplane/middleware/authz/index.js';
import { parse as parseYaml } from 'yaml';
import { configHash } from './config-hash.js';
import { documentValue, type Index, keyOf } from './render-index.js';
import { envName, type SecretEnv, type SecretFile } from './runconfig.js';
import { recordAt, stringsAt } from './json-fields.js';
import { isRecord } from '../../shared/index.js';

type Node = Record<string, unknown>;

/** The authorizer types and the key of their settings in an `authz_config` block. */
const AUTHZ_KEYS: Readonly<Record<string, string>> = AUTHZ_CONFIG_KEYS;

/** The spec type of each shared configuration kind. */
interface SharedSpecs {
  MCPToolConfig: MCPToolConfigSpec;
  MCPOIDCConfig: MCPOIDCConfigSpec;
  MCPAuthzConfig: MCPAuthzConfigSpec;
  MCPTelemetryConfig: MCPTelemetryConfigSpec;
  MCPWebhookConfig: MCPWebhookConfigSpec;
}

/**
 * The spec of a shared configuration of kind `K` that passed validation against its kind's
 * schema (`validateResource`: the render's index holds only such documents, and the code rules
 * run after the schema's): the one place its static type is asserted.
 */
function validatedSpec<K extends keyof SharedSpecs>(_kind: K, spec: unknown): SharedSpecs[K] {
  return (spec ?? {}) as SharedSpecs[K];
}

/** Pod-template annotations carrying the hash of each referenced shared configuration. */
export const REF_HASH_ANNOTATIONS = {
  toolConfigRef: 'skep.dev/tool-config-hash',
  oidcConfigRef: 'skep.dev/oidc-config-hash',
  authzConfigRef: 'skep.dev/authz-config-hash',
  telemetryConfigRef: 'skep.dev/telemetry-config-hash',
  webhookConfigRef: 'skep.dev/webhook-config-hash',
} as const;

/** Where a mounted CA bundle is read by the runner (Node's `NODE_EXTRA_CA_CERTS`). */
export const CA_BUNDLE_DIR = '/etc/skep/ca';
export const WEBHOOK_SECRET_DIR = '/etc/skep/webhooks';
const KUBE_ROOT_CA = 'kube-root-ca.crt';
/** The issuer of the cluster's service-account tokens unless an MCPOIDCConfig names another. */
const KUBE_ISSUER = 'https://kubernetes.default.svc';
/** Where a pod finds its service-account token and the cluster CA (Kubernetes' standard path). */
const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
const SERVICE_ACCOUNT_VOLUME = 'service-account-token';

/**
 * The pod's own token and the cluster CA, as the volume Kubernetes adds when it automounts them
 * (rendered pods do not automount: only a runner that validates service-account tokens gets one).
 */
function serviceAccountTokenVolume(): IVolume {
  return {
    name: SERVICE_ACCOUNT_VOLUME,
    projected: {
      sources: [
        { serviceAccountToken: { path: 'token', expirationSeconds: 3607 } },
        { configMap: { name: KUBE_ROOT_CA, items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
      ],
    },
  };
}

/** The reference fields a workload may carry (MCPServer has them all). */
export type SharedRefFields = Partial<
  Pick<
    MCPServerSpec,
    | 'toolConfigRef'
    | 'oidcConfigRef'
    | 'authzConfigRef'
    | 'authzConfig'
    | 'telemetryConfigRef'
    | 'webhookConfigRef'
    | 'rateLimiting'
  >
>;

export interface SharedRefs {
  /** Run-configuration fields to set. */
  runConfig: Node;
  env: SecretEnv[];
  files: SecretFile[];
  /** Plain env of the runner container (e.g. NODE_EXTRA_CA_CERTS). */
  plainEnv: Array<{ name: string; value: string }>;
  volumes: IVolume[];
  mounts: IVolumeMount[];
  annotations: Record<string, string>;
  problems: string[];
}

/** An `authz_config` block from an authorizer type and its settings, or the problems. */
export function authzBlock(type: string, config: unknown): { block?: Node; problems: string[] } {
  const key = AUTHZ_KEYS[type];
  if (key === undefined)
    return {
      problems: [
        `type "${type}" is not an authorizer Skep runs (${Object.keys(AUTHZ_CONFIG_KEYS).join(', ')})`,
      ],
    };
  const block = { version: '1.0', type, [key]: config };
  try {
    // The runner's own parser: the same checks (Cedar policies compile) as when the pod starts.
    parseAuthzConfig(block, 'config');
  } catch (err) {
    return {
      problems: [(err instanceof Error ? err.message : String(err)).replace(`config.${key}`, 'config')],
    };
  }
  return { block, problems: [] };
}

/** Rules of the shared configuration kinds that need code (the validator's third layer). */
export function sharedConfigProblems(kind: string, spec: Node): Array<{ path: string; message: string }> {
  const out: Array<{ path: string; message: string }> = [];
  if (kind === 'MCPAuthzConfig') {
    const s = validatedSpec(kind, spec);
    for (const p of authzBlock(s.type, s.config).problems) out.push({ path: 'spec', message: p });
  }
  if (kind === 'MCPToolConfig') {
    const s = validatedSpec(kind, spec);
    for (const [tool, o] of Object.entries(s.toolsOverride ?? {}))
      if (o.name === undefined && o.description === undefined && o.annotations === undefined)
        out.push({ path: `spec.toolsOverride.${tool}`, message: 'set name, description or annotations' });
  }
  if (kind === 'MCPTelemetryConfig') {
    const o = validatedSpec(kind, spec).openTelemetry;
    if (o?.endpoint !== undefined && o.tracing?.enabled !== true && o.metrics?.enabled !== true)
      out.push({
        path: 'spec.openTelemetry.endpoint',
        message: 'endpoint requires at least one of tracing or metrics to be enabled',
      });
    if (o?.caBundleRef !== undefined && o.insecure === true)
      out.push({
        path: 'spec.openTelemetry.caBundleRef',
        message: 'cannot be specified when insecure is true; they are mutually exclusive',
      });
    const cm = o?.caBundleRef?.configMapRef?.name;
    if (o?.caBundleRef !== undefined && cm === undefined)
      out.push({ path: 'spec.openTelemetry.caBundleRef.configMapRef', message: 'must be specified' });
  }
  if (kind === 'MCPWebhookConfig') {
    const s = validatedSpec(kind, spec);
    const seen = new Set<string>();
    for (const [list, hooks] of [
      ['validating', s.validating],
      ['mutating', s.mutating],
    ] as const) {
      (hooks ?? []).forEach((h, i) => {
        if (seen.has(h.name))
          out.push({ path: `spec.${list}[${i}].name`, message: `duplicate name ${h.name}` });
        seen.add(h.name);
        const ms = h.timeout === undefined ? undefined : goDurationMs(h.timeout);
        if (ms !== undefined && ms > 30_000)
          out.push({ path: `spec.${list}[${i}].timeout`, message: 'at most 30s' });
      });
    }
  }
  return out;
}

const UNITS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};
function goDurationMs(text: string): number {
  let total = 0;
  for (const m of text.matchAll(/([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)/g))
    total += Number(m[1]) * (UNITS[m[2] ?? ''] ?? 0);
  return total;
}

/** The prefix of the runner's env vars holding `sensitiveHeaders` values (one per header). */
const OTEL_HEADER_ENV_PREFIX = 'SKEP_OTEL_HEADER';

/**
 * `openTelemetry.sensitiveHeaders`, as the reference passes them: each value reaches the runner
 * as an env var filled from its Secret (`valueFrom.secretKeyRef`), and the run configuration's
 * `telemetry_config.headers` names that variable as a secret reference (`<ENV>,target=…`), which
 * the telemetry stage resolves when it starts. The value is in neither the ConfigMap nor the pod
 * spec. Header names that normalise to the same variable (`X-Key`, `x_key`) get distinct ones.
 */
function sensitiveHeaderRefs(
  sensitive: ReadonlyArray<{ name: string; secretKeyRef: { name: string; key: string } }>,
): { env: SecretEnv[]; headers: Record<string, string> } {
  const env: SecretEnv[] = [];
  const headers: Record<string, string> = {};
  const taken = new Set<string>();
  for (const h of sensitive) {
    const base = envName(OTEL_HEADER_ENV_PREFIX, h.name);
    let variable = base;
    for (let i = 2; taken.has(variable); i++) variable = `${base}_${i}`;
    taken.add(variable);
    env.push({ name: variable, secretRef: h.secretKeyRef });
    headers[h.name] = `${variable},target=telemetry_config.headers.${h.name}`;
  }
  return { env, headers };
}

/** A referenced config, or the problem saying why it cannot be used. */
function lookup<K extends keyof SharedSpecs>(
  index: Index,
  kind: K,
  namespace: string,
  name: string,
  field: string,
): { spec: SharedSpecs[K] } | { problem: string } {
  const found = index.get(kind, namespace, name);
  if (found !== undefined) return { spec: validatedSpec(kind, found['spec']) };
  const bad = index.invalid.get(keyOf(kind, namespace, name));
  return {
    problem:
      bad === undefined
        ? `${field}: ${kind} ${namespace}/${name} does not exist`
        : `${field}: ${kind} ${namespace}/${name} is invalid: ${bad}`,
  };
}

/** Where a field sits in its resource when not at `spec.<field>` (a VirtualMCPServer's incomingAuth). */
export type RefPaths = Partial<Record<keyof SharedRefFields, string>>;

/** Resolves a workload's references. */
export function resolveSharedRefs(
  spec: SharedRefFields,
  ctx: { index: Index; namespace: string; workload: string; paths?: RefPaths },
): SharedRefs {
  const out: SharedRefs = {
    runConfig: {},
    env: [],
    files: [],
    plainEnv: [],
    volumes: [],
    mounts: [],
    annotations: {},
    problems: [],
  };
  const { index, namespace } = ctx;
  const at = (field: keyof SharedRefFields) => ctx.paths?.[field] ?? `spec.${field}`;
  const caBundles: Array<{ from: string; configMap: string; key: string }> = [];

  if (spec.toolConfigRef !== undefined) {
    const field = at('toolConfigRef');
    const r = lookup(index, 'MCPToolConfig', namespace, spec.toolConfigRef.name, field);
    if ('problem' in r) out.problems.push(r.problem);
    else {
      const s = r.spec;
      if (s.toolsFilter !== undefined && s.toolsFilter.length > 0)
        out.runConfig['tools_filter'] = s.toolsFilter;
      // Annotations are a Skep extension of the run configuration (the reference's runner drops them).
      const overrides: NonNullable<RunConfig['tools_override']> = {};
      for (const [tool, o] of Object.entries(s.toolsOverride ?? {}))
        overrides[tool] = Object.assign(
          {},
          o.name === undefined ? {} : { name: o.name },
          o.description === undefined ? {} : { description: o.description },
          o.annotations === undefined ? {} : { annotations: o.annotations },
        );
      if (Object.keys(overrides).length > 0) out.runConfig['tools_override'] = overrides;
      out.annotations[REF_HASH_ANNOTATIONS.toolConfigRef] = configHash(r.spec);
    }
  }

  if (spec.oidcConfigRef !== undefined) {
    const ref = spec.oidcConfigRef;
    const field = at('oidcConfigRef');
    const r = lookup(index, 'MCPOIDCConfig', namespace, ref.name, field);
    if ('problem' in r) out.problems.push(r.problem);
    else {
      const s = r.spec;
      const oidc: Node = {
        audience: ref.audience,
        scopes: ref.scopes ?? ['openid'],
        ...(ref.resourceUrl === undefined ? {} : { resourceURL: ref.resourceUrl }),
      };
      const name = `MCPOIDCConfig ${ref.name}`;
      if (s.type === 'inline' && s.inline !== undefined) {
        const i = s.inline;
        Object.assign(oidc, {
          issuer: i.issuer,
          ...(i.jwksUrl === undefined ? {} : { jwksurl: i.jwksUrl }),
          ...(i.introspectionUrl === undefined ? {} : { introspectionURL: i.introspectionUrl }),
          ...(i.clientId === undefined ? {} : { clientID: i.clientId }),
          ...(i.jwksAllowPrivateIP === true || i.protectedResourceAllowPrivateIP === true
            ? { allowPrivateIP: true }
            : {}),
          ...(i.insecureAllowHTTP === true ? { insecureAllowHTTP: true } : {}),
        });
        if (i.clientSecretRef !== undefined) {
          const variable = envName('SKEP_OIDC_CLIENT_SECRET');
          out.env.push({ name: variable, secretRef: i.clientSecretRef });
          oidc['clientSecret'] = `${variable},target=oidc_client_secret`;
        }
        // A file the pod template mounts; its token goes to discovery and the JWKS.
        if (i.jwksAuthTokenPath !== undefined) oidc['authTokenFile'] = i.jwksAuthTokenPath;
        if (i.caBundleRef?.configMapRef !== undefined)
          caBundles.push({
            from: `${field} (${name} inline.caBundleRef)`,
            configMap: i.caBundleRef.configMapRef.name,
            key: i.caBundleRef.configMapRef.key ?? 'ca.crt',
          });
      } else if (s.type === 'kubernetesServiceAccount') {
        const k = s.kubernetesServiceAccount ?? {};
        Object.assign(oidc, {
          issuer: k.issuer ?? KUBE_ISSUER,
          // The API server's address (and the jwks_uri it publishes) is a cluster-internal one.
          allowPrivateIP: true,
          ...(k.jwksUrl === undefined ? {} : { jwksurl: k.jwksUrl }),
          ...(k.introspectionUrl === undefined ? {} : { introspectionURL: k.introspectionUrl }),
        });
        // The reference keeps these fields without using them; here they restrict the callers.
        if (k.serviceAccount !== undefined || k.namespace !== undefined)
          oidc['kubernetesServiceAccount'] = {
            namespace: k.namespace ?? namespace,
            ...(k.serviceAccount === undefined ? {} : { name: k.serviceAccount }),
          };
        if (k.useClusterAuth !== false) {
          // The reference's cluster auth: the API server serves its JWKS only to an authenticated
          // caller (every service account may read it), over TLS signed by the cluster's CA.
          Object.assign(oidc, {
            cacertPath: `${SERVICE_ACCOUNT_DIR}/ca.crt`,
            authTokenFile: `${SERVICE_ACCOUNT_DIR}/token`,
          });
          out.volumes.push(serviceAccountTokenVolume());
          out.mounts.push({ name: SERVICE_ACCOUNT_VOLUME, mountPath: SERVICE_ACCOUNT_DIR, readOnly: true });
        } else caBundles.push({ from: `${field} (${name})`, configMap: KUBE_ROOT_CA, key: 'ca.crt' });
      }
      out.runConfig['oidc_config'] = oidc;
      out.annotations[REF_HASH_ANNOTATIONS.oidcConfigRef] = configHash(r.spec);
    }
  }

  if (spec.authzConfigRef !== undefined) {
    const field = at('authzConfigRef');
    const r = lookup(index, 'MCPAuthzConfig', namespace, spec.authzConfigRef.name, field);
    if ('problem' in r) out.problems.push(r.problem);
    else {
      const s = r.spec;
      const built = authzBlock(s.type, s.config);
      if (built.block === undefined)
        out.problems.push(
          ...built.problems.map((p) => `${field}: MCPAuthzConfig ${spec.authzConfigRef?.name} ${p}`),
        );
      else out.runConfig['authz_config'] = built.block;
      out.annotations[REF_HASH_ANNOTATIONS.authzConfigRef] = configHash(r.spec);
    }
  } else if (spec.authzConfig !== undefined) {
    const a = spec.authzConfig;
    const field = at('authzConfig');
    const claims = Object.assign(
      {},
      a.groupClaimName === undefined ? {} : { group_claim_name: a.groupClaimName },
      a.roleClaimName === undefined ? {} : { role_claim_name: a.roleClaimName },
      a.groupEntityType === undefined ? {} : { group_entity_type: a.groupEntityType },
    );
    if (a.policies !== undefined || a.type === 'inline') {
      const policies = a.policies ?? a.inline?.policies ?? [];
      const entities = a.entitiesJson ?? a.inline?.entitiesJson ?? '[]';
      // The upstream provider whose token claims Cedar evaluates (the reference's deprecated
      // location of the vMCP setting; on a proxy it selects among the embedded server's upstreams).
      const primary = a.inline?.primaryUpstreamProvider;
      out.runConfig['authz_config'] = {
        version: '1.0',
        type: 'cedarv1',
        cedar: {
          policies,
          entities_json: entities,
          ...claims,
          ...(primary === undefined ? {} : { primary_upstream_provider: primary }),
        },
      };
    } else if (a.type === 'configMap' && a.configMap !== undefined) {
      const key = a.configMap.key ?? 'authz.json';
      const cm = index.get('ConfigMap', namespace, a.configMap.name);
      const text = documentValue(cm, key)?.toString('utf8');
      if (text === undefined)
        out.problems.push(
          `${field}.configMap: ConfigMap ${namespace}/${a.configMap.name} key ${key} does not exist${cm === undefined ? '' : ' (the ConfigMap has no such key)'}`,
        );
      else {
        let parsed: unknown;
        try {
          parsed = parseYaml(text);
        } catch (err) {
          out.problems.push(
            `${field}.configMap: ${key} is not JSON or YAML (${err instanceof Error ? err.message : String(err)})`,
          );
        }
        const p = recordAt(parsed);
        const type = String(p['type'] ?? '');
        const key2 = AUTHZ_KEYS[type];
        const built =
          key2 === undefined
            ? { problems: [`type "${type}" is not cedarv1 or httpv1`] }
            : authzBlock(type, p[key2]);
        if ('block' in built && built.block !== undefined) {
          const cedar = built.block['cedar'];
          if (type === 'cedarv1' && isRecord(cedar)) Object.assign(cedar, claims);
          out.runConfig['authz_config'] = built.block;
          out.annotations[REF_HASH_ANNOTATIONS.authzConfigRef] = configHash(text);
        } else if (parsed !== undefined)
          out.problems.push(...built.problems.map((m) => `${field}.configMap: ${key}: ${m}`));
      }
    }
  }

  if (spec.telemetryConfigRef !== undefined) {
    const ref = spec.telemetryConfigRef;
    const field = at('telemetryConfigRef');
    const r = lookup(index, 'MCPTelemetryConfig', namespace, ref.name, field);
    if ('problem' in r) out.problems.push(r.problem);
    else {
      const s = r.spec;
      const o = s.openTelemetry;
      const t: Node = { serviceName: ref.serviceName ?? ctx.workload };
      if (o?.enabled === true) {
        Object.assign(
          t,
          o.endpoint === undefined ? {} : { endpoint: o.endpoint },
          o.insecure === undefined ? {} : { insecure: o.insecure },
          o.headers === undefined ? {} : { headers: o.headers },
          o.resourceAttributes === undefined ? {} : { customAttributes: o.resourceAttributes },
          { tracingEnabled: o.tracing?.enabled === true, metricsEnabled: o.metrics?.enabled === true },
          o.tracing?.samplingRate === undefined ? {} : { samplingRate: o.tracing.samplingRate },
          { useLegacyAttributes: o.useLegacyAttributes ?? true },
        );
        const sensitive = sensitiveHeaderRefs(o.sensitiveHeaders ?? []);
        out.env.push(...sensitive.env);
        if (Object.keys(sensitive.headers).length > 0)
          t['headers'] = { ...stringsAt(t, 'headers'), ...sensitive.headers };
        if (o.caBundleRef?.configMapRef !== undefined)
          caBundles.push({
            from: `${field} (MCPTelemetryConfig ${ref.name} openTelemetry.caBundleRef)`,
            configMap: o.caBundleRef.configMapRef.name,
            key: o.caBundleRef.configMapRef.key ?? 'ca.crt',
          });
      }
      if (s.prometheus?.enabled === true) t['enablePrometheusMetricsPath'] = true;
      out.runConfig['telemetry_config'] = t;
      out.annotations[REF_HASH_ANNOTATIONS.telemetryConfigRef] = configHash(r.spec);
    }
  }

  if (spec.webhookConfigRef !== undefined) {
    const field = at('webhookConfigRef');
    const r = lookup(index, 'MCPWebhookConfig', namespace, spec.webhookConfigRef.name, field);
    if ('problem' in r) out.problems.push(r.problem);
    else {
      const s = r.spec;
      for (const [list, hooks] of [
        ['validating_webhooks', s.validating],
        ['mutating_webhooks', s.mutating],
      ] as const) {
        if (hooks === undefined || hooks.length === 0) continue;
        out.runConfig[list] = hooks.map((h) => {
          const dir = `${WEBHOOK_SECRET_DIR}/${h.name}`;
          const file = (name: string, ref: { name: string; key: string }) => {
            out.files.push({ path: `${dir}/${name}`, secretRef: ref });
            return `${dir}/${name}`;
          };
          const tls = h.tlsConfig;
          return Object.assign(
            { name: h.name, url: h.url, failure_policy: h.failurePolicy ?? 'fail' },
            h.timeout === undefined ? {} : { timeout: h.timeout },
            tls === undefined
              ? {}
              : {
                  tls_config: Object.assign(
                    {},
                    tls.caSecretRef === undefined ? {} : { ca_bundle_path: file('ca.crt', tls.caSecretRef) },
                    tls.clientCertSecretRef === undefined
                      ? {}
                      : { client_cert_path: file('tls.crt', tls.clientCertSecretRef) },
                    tls.clientKeySecretRef === undefined
                      ? {}
                      : { client_key_path: file('tls.key', tls.clientKeySecretRef) },
                    tls.insecureSkipVerify === undefined
                      ? {}
                      : { insecure_skip_verify: tls.insecureSkipVerify },
                  ),
                },
            h.hmacSecretRef === undefined ? {} : { hmac_secret_ref: file('hmac', h.hmacSecretRef) },
          );
        });
      }
      out.annotations[REF_HASH_ANNOTATIONS.webhookConfigRef] = configHash(r.spec);
    }
  }

  if (spec.rateLimiting !== undefined) {
    const rl = spec.rateLimiting;
    const bucket = (b: { maxTokens: number; refillPeriod: string } | undefined) =>
      b === undefined ? undefined : { maxTokens: b.maxTokens, refillPeriod: b.refillPeriod };
    // Through JSON: the buckets left undefined are dropped.
    const block: Node = JSON.parse(
      JSON.stringify({
        shared: bucket(rl.shared),
        perUser: bucket(rl.perUser),
        tools: rl.tools?.map((t) => ({ name: t.name, shared: bucket(t.shared), perUser: bucket(t.perUser) })),
      }),
    );
    out.runConfig['rate_limit_config'] = block;
  }

  // One CA bundle for the runner's outgoing TLS (Node reads one NODE_EXTRA_CA_CERTS file).
  const distinct = [...new Map(caBundles.map((c) => [`${c.configMap}/${c.key}`, c])).values()];
  if (distinct.length > 1)
    out.problems.push(
      `${distinct.map((c) => c.from).join(' and ')}: the Skep runner trusts one extra CA bundle; put the certificates in one ConfigMap key`,
    );
  else if (distinct.length === 1) {
    const c = distinct[0]!;
    out.volumes.push({
      name: 'ca-bundle',
      configMap: { name: c.configMap, items: [{ key: c.key, path: 'ca.crt' }] },
    });
    out.mounts.push({ name: 'ca-bundle', mountPath: CA_BUNDLE_DIR, readOnly: true });
    out.plainEnv.push({ name: 'NODE_EXTRA_CA_CERTS', value: `${CA_BUNDLE_DIR}/ca.crt` });
  }
  return out;
}
