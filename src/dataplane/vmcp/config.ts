/**
 * The virtual MCP server's configuration: ONE schema for the reference's single vMCP config
 * struct (ToolHive's `pkg/vmcp/config`), used for `skep vmcp --config file.yaml`, the `vmcp` field of
 * a workload's run configuration (`POST /api/v1beta/workloads {"vmcp": ...}`) and the
 * `VirtualMCPServer` CRD's `spec.config`. Keys are camelCase as in the reference.
 *
 * `parseVmcpConfig` validates (400 `invalid_config` naming the field), compiles the composite
 * tools (`composite/definition.ts`: every template parsed, the step graph checked), refuses
 * what this build does not honour (400 `unsupported_field`; nothing is accepted silently) and
 * resolves the defaults into a frozen `ResolvedVmcpConfig`. Better than the reference (⚠):
 * `operational.timeouts` and `failureHandling.partialFailureMode` are read at runtime, and
 * `conflictResolutionConfig.prefixOnlyConflicts` renames only conflicting names.
 */
import {
  type BackendAuthStrategy,
  type StaticBackendConfig,
  type VmcpConfig,
  VmcpConfigSchema,
  type WorkloadToolsConfig,
} from '../../schemas/index.js';
import { createValidator } from '../../validation/index.js';
import { goDurationMs, SkepError } from '../../shared/index.js';
import { type OptimizerSettings, resolveOptimizerSettings } from './optimizer/config.js';
import { type CompiledComposite, compileComposites } from './composite/definition.js';
import { type CodeModeSettings, resolveCodeMode } from './codemode/config.js';

export type { BackendAuthStrategy, VmcpConfig };

const validator = createValidator(VmcpConfigSchema);

/** Defaults with units, in one table. */
export const VMCP_DEFAULTS = {
  prefixFormat: '{workload}_',
  timeoutMs: 30_000,
  healthCheckIntervalMs: 30_000,
  healthCheckTimeoutMs: 10_000,
  unhealthyThreshold: 3,
  circuitBreakerThreshold: 5,
  circuitBreakerTimeoutMs: 60_000,
} as const;

/** The configuration as the runtime reads it: validated, defaults filled, durations in ms. */
export interface ResolvedVmcpConfig {
  readonly raw: VmcpConfig;
  readonly groupRef: string | undefined;
  readonly aggregation: {
    readonly conflictResolution: 'prefix' | 'priority' | 'manual';
    readonly prefixFormat: string;
    readonly prefixOnlyConflicts: boolean;
    readonly priorityOrder: readonly string[];
    readonly tools: ReadonlyMap<string, WorkloadToolsConfig>;
    readonly excludeAllTools: boolean;
    readonly defaultToolVisibility: 'allow' | 'deny';
  };
  readonly outgoingAuth: {
    readonly source: 'inline' | 'discovered';
    readonly default: BackendAuthStrategy | undefined;
    readonly backends: Readonly<Record<string, BackendAuthStrategy>>;
  };
  readonly timeoutMs: number;
  readonly perWorkloadTimeoutMs: ReadonlyMap<string, number>;
  readonly partialFailureMode: 'fail' | 'best_effort';
  readonly healthCheckIntervalMs: number;
  readonly healthCheckTimeoutMs: number;
  readonly unhealthyThreshold: number;
  readonly circuitBreaker: {
    readonly enabled: boolean;
    readonly failureThreshold: number;
    readonly timeoutMs: number;
  };
  readonly passthroughHeaders: readonly string[];
  /**
   * `backends[]` when the file lists them (static mode, e.g. a Kubernetes pod whose backends the
   * operator resolved): these are the backends, instead of the running workloads of the group.
   */
  readonly staticBackends: readonly StaticBackend[] | undefined;
  /** Set when `optimizer` is present (its presence turns it on, as in ToolHive). */
  readonly optimizer: OptimizerSettings | undefined;
  /** `compositeTools[]`, checked and compiled. */
  readonly composites: readonly CompiledComposite[];
  /** Set when `codeMode.enabled` is true. */
  readonly codeMode: CodeModeSettings | undefined;
}

/** Go duration → ms (the schema already checked the syntax). */
export function durationMs(text: string): number {
  return goDurationMs(text) ?? 0;
}

function unsupported(field: string, hint: string): SkepError {
  return new SkepError('unsupported_field', `vmcp.${field} is not supported by this build: ${hint}`);
}

const HOP_BY_HOP = new Set([
  'host',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'proxy-authorization',
  'proxy-authenticate',
  'content-length',
]);

/**
 * Validates a vMCP configuration (400 `invalid_config` naming the field), refuses what is not
 * honoured (400 `unsupported_field`) and resolves defaults.
 */
export function parseVmcpConfig(value: unknown, what = 'vmcp'): ResolvedVmcpConfig {
  let raw: VmcpConfig;
  try {
    raw = validator.parse(value ?? {}, what);
  } catch (err) {
    // A configuration that does not fit the schema is an invalid configuration, named.
    if (err instanceof SkepError && err.code === 'bad_request')
      throw new SkepError('invalid_config', err.message);
    throw err;
  }
  if (raw.compositeToolRefs !== undefined && raw.compositeToolRefs.length > 0) {
    throw unsupported(
      'compositeToolRefs',
      'it names VirtualMCPCompositeToolDefinition objects, which only the Kubernetes operator resolves (it folds them into compositeTools); in a vMCP config file put the definitions in compositeTools',
    );
  }
  const composites = compileComposites(raw.compositeTools, what);
  const codeMode = resolveCodeMode(raw.codeMode, what);
  const staticBackends = raw.backends === undefined ? undefined : checkStaticBackends(raw.backends, what);
  for (const key of ['telemetry', 'audit', 'sessionStorage', 'rateLimiting'] as const) {
    const v = raw[key];
    if (v !== undefined && Object.keys(v).length > 0) {
      throw unsupported(
        key,
        `configure it on the virtual workload like on any workload (its run configuration's ${key === 'sessionStorage' ? 'scaling_config' : key === 'rateLimiting' ? 'rate_limit_config' : key === 'audit' ? 'audit_config' : 'telemetry_config'})`,
      );
    }
  }
  if (raw.incomingAuth !== undefined && raw.incomingAuth.type !== 'anonymous') {
    throw unsupported(
      'incomingAuth',
      'set inbound auth and authorization on the virtual workload (oidc_config, authz_config) like on any workload',
    );
  }
  if (raw.operational?.failureHandling?.circuitBreaker?.enabled === true) {
    throw unsupported(
      'operational.failureHandling.circuitBreaker',
      'there is no circuit breaker; unhealthyThreshold takes a failing backend out of the lists and its calls fail at once; remove it',
    );
  }
  // Nothing silent: what has no effect here is refused, not stored and ignored.
  if (raw.operational?.failureHandling?.statusReportingInterval !== undefined) {
    throw unsupported(
      'operational.failureHandling.statusReportingInterval',
      'the status is written on every change of the served set, not on an interval; remove it',
    );
  }
  if (raw.operational?.logLevel !== undefined && raw.operational.logLevel !== '') {
    throw unsupported(
      'operational.logLevel',
      "the virtual workload logs like any workload (skep serve's log level, SKEP_LOG_LEVEL); remove it",
    );
  }
  if (raw.metadata !== undefined && Object.keys(raw.metadata).length > 0) {
    throw unsupported('metadata', 'metadata has no effect on a local virtual workload; remove it');
  }
  const strategies: Array<[string, BackendAuthStrategy]> = [];
  if (raw.outgoingAuth?.default !== undefined)
    strategies.push(['outgoingAuth.default', raw.outgoingAuth.default]);
  for (const [name, s] of Object.entries(raw.outgoingAuth?.backends ?? {}))
    strategies.push([`outgoingAuth.backends.${name}`, s]);
  for (const [field, s] of strategies) checkStrategy(field, s);
  if (
    staticBackends !== undefined &&
    (raw.outgoingAuth?.source === 'discovered' || strategies.some(([, s]) => s.type === 'discovered'))
  ) {
    throw new SkepError(
      'invalid_config',
      `${what}.outgoingAuth: static backends have no workload configuration to discover auth from; set source "inline" and give each backend's strategy in outgoingAuth.backends`,
    );
  }

  const agg = raw.aggregation ?? {};
  const crc = agg.conflictResolutionConfig ?? {};
  const strategy = agg.conflictResolution ?? 'prefix';
  const prefixFormat = crc.prefixFormat ?? VMCP_DEFAULTS.prefixFormat;
  if (!prefixFormat.includes('{workload}')) {
    throw new SkepError(
      'invalid_config',
      `${what}.aggregation.conflictResolutionConfig.prefixFormat must contain "{workload}" (got "${prefixFormat}")`,
    );
  }
  if (strategy === 'priority' && (crc.priorityOrder === undefined || crc.priorityOrder.length === 0)) {
    throw new SkepError(
      'invalid_config',
      `${what}.aggregation.conflictResolutionConfig.priorityOrder must list workloads when conflictResolution is "priority"`,
    );
  }
  const tools = new Map<string, WorkloadToolsConfig>();
  for (const [i, entry] of (agg.tools ?? []).entries()) {
    if (entry.toolConfigRef !== undefined) {
      throw unsupported(
        `aggregation.tools[${i}].toolConfigRef`,
        'MCPToolConfig references are Kubernetes only; use filter and overrides',
      );
    }
    if (tools.has(entry.workload)) {
      throw new SkepError(
        'invalid_config',
        `${what}.aggregation.tools[${i}].workload "${entry.workload}" is listed twice; merge the entries`,
      );
    }
    tools.set(entry.workload, entry);
  }
  const perWorkload = new Map<string, number>();
  for (const [name, d] of Object.entries(raw.operational?.timeouts?.perWorkload ?? {}))
    perWorkload.set(name, positive(durationMs(d), `${what}.operational.timeouts.perWorkload.${name}`));
  const fh = raw.operational?.failureHandling ?? {};
  const cb = fh.circuitBreaker ?? {};
  const cbTimeout = cb.timeout === undefined ? VMCP_DEFAULTS.circuitBreakerTimeoutMs : durationMs(cb.timeout);
  if (cb.enabled === true && cbTimeout < 1000) {
    throw new SkepError(
      'invalid_config',
      `${what}.operational.failureHandling.circuitBreaker.timeout must be at least 1s`,
    );
  }
  for (const h of raw.passthroughHeaders ?? []) {
    const lower = h.toLowerCase();
    if (
      HOP_BY_HOP.has(lower) ||
      lower.startsWith('x-forwarded-') ||
      !/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(h)
    ) {
      throw new SkepError(
        'invalid_config',
        `${what}.passthroughHeaders: "${h}" cannot be forwarded (Host, hop-by-hop and X-Forwarded-* headers are refused)`,
      );
    }
  }
  if (raw.passthroughHeaders !== undefined && raw.passthroughHeaders.length > 0) {
    throw unsupported(
      'passthroughHeaders',
      'client headers are not forwarded to backends; use outgoingAuth header_injection; remove it',
    );
  }
  const resolved: ResolvedVmcpConfig = {
    raw,
    groupRef: raw.groupRef,
    aggregation: {
      conflictResolution: strategy,
      prefixFormat,
      prefixOnlyConflicts: crc.prefixOnlyConflicts === true,
      priorityOrder: crc.priorityOrder ?? [],
      tools,
      excludeAllTools: agg.excludeAllTools === true,
      defaultToolVisibility: agg.defaultToolVisibility === 'deny' ? 'deny' : 'allow',
    },
    outgoingAuth: {
      source: raw.outgoingAuth?.source ?? 'inline',
      default: raw.outgoingAuth?.default,
      backends: raw.outgoingAuth?.backends ?? {},
    },
    timeoutMs:
      raw.operational?.timeouts?.default === undefined
        ? VMCP_DEFAULTS.timeoutMs
        : positive(durationMs(raw.operational.timeouts.default), `${what}.operational.timeouts.default`),
    perWorkloadTimeoutMs: perWorkload,
    partialFailureMode: fh.partialFailureMode ?? 'fail',
    healthCheckIntervalMs:
      fh.healthCheckInterval === undefined
        ? VMCP_DEFAULTS.healthCheckIntervalMs
        : durationMs(fh.healthCheckInterval),
    healthCheckTimeoutMs:
      fh.healthCheckTimeout === undefined
        ? VMCP_DEFAULTS.healthCheckTimeoutMs
        : positive(
            durationMs(fh.healthCheckTimeout),
            `${what}.operational.failureHandling.healthCheckTimeout`,
          ),
    unhealthyThreshold: fh.unhealthyThreshold ?? VMCP_DEFAULTS.unhealthyThreshold,
    circuitBreaker: {
      enabled: cb.enabled === true,
      failureThreshold: cb.failureThreshold ?? VMCP_DEFAULTS.circuitBreakerThreshold,
      timeoutMs: cbTimeout,
    },
    passthroughHeaders: raw.passthroughHeaders ?? [],
    staticBackends,
    optimizer: raw.optimizer === undefined ? undefined : resolveOptimizerSettings(raw.optimizer),
    composites,
    codeMode,
  };
  return Object.freeze(resolved);
}

export interface StaticBackend {
  readonly name: string;
  /** The backend's MCP endpoint (streamable HTTP). */
  readonly url: string;
  /**
   * `entry` (a remote server listed by an MCPServerEntry, reached directly) has no Skep
   * `/health`: any HTTP answer at its URL counts as reachable. Others are Skep proxies.
   */
  readonly type: 'entry' | '';
}

const BACKEND_TYPES = new Set(['', 'entry', 'container', 'proxy']);

/** `backends[]` (ToolHive's static mode): unique names, absolute http(s) URLs, streamable HTTP. */
function checkStaticBackends(list: StaticBackendConfig[], what: string): StaticBackend[] {
  const seen = new Set<string>();
  return list.map((b, i) => {
    const field = `${what}.backends[${i}]`;
    if (b.name === '' || seen.has(b.name))
      throw new SkepError(
        'invalid_config',
        `${field}.name must be a unique, non-empty name (got "${b.name}")`,
      );
    seen.add(b.name);
    let url: URL | undefined;
    try {
      url = new URL(b.url);
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      throw new SkepError('invalid_config', `${field}.url must be an absolute http(s) URL (got "${b.url}")`);
    if (b.transport !== 'streamable-http')
      throw unsupported(
        `backends[${i}].transport`,
        'backends are reached over streamable HTTP; put an SSE server behind a Skep workload and list its proxy',
      );
    if (b.caBundlePath !== undefined)
      throw unsupported(
        `backends[${i}].caBundlePath`,
        'backends are verified against the system CAs; remove it',
      );
    if (b.metadata !== undefined && Object.keys(b.metadata).length > 0)
      throw unsupported(`backends[${i}].metadata`, 'backend metadata has no effect here; remove it');
    const type = b.type ?? '';
    if (!BACKEND_TYPES.has(type))
      throw new SkepError(
        'invalid_config',
        `${field}.type must be "", "entry", "container" or "proxy" (got "${type}")`,
      );
    return { name: b.name, url: url.href, type: type === 'entry' ? 'entry' : '' };
  });
}

function positive(ms: number, field: string): number {
  if (!(ms > 0)) throw new SkepError('invalid_config', `${field} must be a positive duration such as "30s"`);
  return ms;
}

function checkStrategy(field: string, s: BackendAuthStrategy): void {
  const need = (key: 'headerInjection' | 'tokenExchange' | 'upstreamInject' | 'awsSts') => {
    if (s[key] === undefined)
      throw new SkepError('invalid_config', `vmcp.${field}.${key} is required when type is "${s.type}"`);
  };
  switch (s.type) {
    case 'header_injection': {
      need('headerInjection');
      const h = s.headerInjection!;
      if ((h.headerValue === undefined) === (h.headerValueEnv === undefined)) {
        throw new SkepError(
          'invalid_config',
          `vmcp.${field}.headerInjection needs exactly one of headerValue and headerValueEnv`,
        );
      }
      return;
    }
    case 'token_exchange':
      need('tokenExchange');
      if (s.tokenExchange!.clientSecret !== undefined && s.tokenExchange!.clientSecretEnv !== undefined) {
        throw new SkepError(
          'invalid_config',
          `vmcp.${field}.tokenExchange: set clientSecret or clientSecretEnv, not both`,
        );
      }
      return;
    case 'upstream_inject':
      need('upstreamInject');
      return;
    case 'aws_sts':
      throw unsupported(
        `${field}.type`,
        '"aws_sts" needs SigV4-signed requests, which the virtual endpoint does not make; use token_exchange',
      );
    case 'obo':
      throw unsupported(
        `${field}.type`,
        '"obo" is an enterprise-only strategy in the reference; use token_exchange',
      );
    case 'xaa':
      throw unsupported(`${field}.type`, '"xaa" is not implemented; use token_exchange');
    default:
      return;
  }
}
