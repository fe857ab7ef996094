/**
 * Builds a workload's middleware pipeline from its run configuration, one general way: the
 * typed fields (`oidc_config`, `authz_config`, `audit_config`, the webhooks, ...) become a
 * list of `{type, parameters}` entries (`planPipeline`), in Skep's order (`stages/index.ts`);
 * a non-empty `middleware_configs` is that list, given explicitly, in its own order. Each
 * entry is built by its stage's factory. The proxy's built-in stages (`bodylimit`, `origin`,
 * `mcp-parser`, `tool-filter`, ...) may be named too: their parameters tune the proxy.
 *
 * Every secret is resolved and every file read here, once, when the workload starts;
 * configuration mistakes are `invalid_config` errors naming the field, thrown before anything is
 * served. A stage's module, and the libraries behind it (jose, the AWS SDK, Cedar), loads only
 * when the configuration uses it, so a plain workload's runner stays small.
 */
import type { ProxyHttpHandler, ToolOverride } from '../proxy/index.js';
import { type Logger, SkepError } from '../../shared/index.js';
import type { RunConfig } from '../../schemas/index.js';
import { allowedOriginsProblem } from '../../schemas/validators/index.js';
import { STAGES } from './stages/index.js';
import { paramsObject } from './stages/params.js';
import { tokenExchangeStrategy } from './stages/token-exchange.js';
import type { MiddlewareConfig, Stage, StageDeps, StageFactory } from './types.js';

/** What `middleware_configs` entries of the proxy's built-in stages ask of the proxy. */
export interface ProxyTuning {
  maxBodyBytes?: number;
  allowedOrigins?: string[];
  toolsFilter?: string[];
  toolsOverride?: Record<string, ToolOverride>;
}

export interface Pipeline {
  /** The stages, outermost first, as the proxy runs them. */
  readonly middlewares: readonly Stage[];
  /** Stage types in order, for logs and status. */
  readonly names: readonly string[];
  readonly proxy: ProxyTuning;
  /** The stages' own endpoints (telemetry's `/metrics`), for `ProxyOptions.handlers`. */
  readonly handlers: readonly ProxyHttpHandler[];
  /** Interactive parts (the remote OAuth login); call once the remote server is reachable. Idempotent. */
  start(): Promise<void>;
  /** Closes every stage (files, timers, clients), newest first. Idempotent. */
  close(): Promise<void>;
}

export const FACTORIES: ReadonlyMap<string, StageFactory> = new Map<string, StageFactory>(
  STAGES.map((f) => [f.type, f]),
);

/** The reference's stage types that the proxy itself always performs. */
const BUILT_IN = new Set([
  'bodylimit',
  'origin',
  'mcp-parser',
  'recovery',
  'tool-filter',
  'tool-call-filter',
  'strip-auth',
  'usagemetrics',
]);

/** Reference stage types Skep does not have yet: a start error, never a silent skip. */
const NOT_YET: Record<string, string> = {
  obo: 'on-behalf-of token exchange is not supported (use tokenexchange)',
};

/** Stages of Skep's own (no reference type): kept beside an explicit `middleware_configs`. */
const SKEP_ONLY: ReadonlySet<string> = new Set(['guardrails']);

/** The reference's default body limit for `bodylimit` with `max_bytes` ≤ 0. */
const REFERENCE_BODY_LIMIT = 8 << 20;

/**
 * The pipeline a run configuration asks for, as `middleware_configs` entries, checked: every
 * type exists here, and the typed fields and `middleware_configs` do not both configure it.
 */
export function planPipeline(config: RunConfig): MiddlewareConfig[] {
  const typed: MiddlewareConfig[] = [];
  for (const factory of STAGES) {
    const parameters = factory.fromRunConfig?.(config);
    if (parameters !== undefined) typed.push({ type: factory.type, parameters });
  }
  const explicit = config.middleware_configs ?? [];
  if (explicit.length === 0) {
    checkCombinations(config);
    return typed;
  }
  explicit.forEach((entry, i) => {
    const where = `middleware_configs[${i}]`;
    const notYet = NOT_YET[entry.type];
    if (notYet !== undefined)
      throw new SkepError('unsupported_field', `${where}: '${entry.type}': ${notYet}`);
    if (!FACTORIES.has(entry.type) && !BUILT_IN.has(entry.type))
      throw new SkepError(
        'invalid_config',
        `${where}: unsupported middleware type: '${entry.type}' (known: ${[...FACTORIES.keys(), ...BUILT_IN].sort().join(', ')})`,
      );
  });
  // Skep's own stages are no reference middleware type: a reference pipeline in
  // `middleware_configs` keeps them (innermost, nearest the server) unless it names them itself.
  const named = new Set(explicit.map((e) => e.type));
  const kept = typed.filter((t) => SKEP_ONLY.has(t.type) && !named.has(t.type));
  const conflicting = typed.filter((t) => !kept.includes(t));
  if (conflicting.length > 0)
    throw new SkepError(
      'invalid_config',
      `middleware_configs replaces the pipeline the run configuration's fields would build, and ` +
        `these fields configure one too: ${conflicting.map((t) => t.type).join(', ')} — set middleware_configs ` +
        'or those fields, not both',
    );
  return [...explicit.map((e) => ({ type: e.type, parameters: e.parameters })), ...kept];
}

/**
 * Everything about the pipeline a run configuration asks for that can be checked before it
 * is stored: the plan (`planPipeline`) and each stage's own `check`.
 */
export async function checkPipeline(config: RunConfig): Promise<void> {
  for (const entry of planPipeline(config))
    await FACTORIES.get(entry.type)?.check?.(entry.parameters, config);
}

/** Combinations that would fight over `Authorization` are refused. */
function checkCombinations(config: RunConfig): void {
  const remote = config.remote_auth_config;
  const remoteSets =
    remote !== undefined &&
    (!!remote.bearer_token ||
      !!remote.bearer_token_file ||
      STAGES.find((f) => f.type === 'remote-auth')?.fromRunConfig?.(config) !== undefined);
  const te = config.token_exchange_config;
  const exchangeReplaces = te !== undefined && tokenExchangeStrategy(te) === 'replace';
  if (
    remoteSets &&
    (exchangeReplaces || config.upstream_swap_config !== undefined || config.aws_sts_config !== undefined)
  )
    throw new SkepError(
      'invalid_config',
      'remote_auth_config cannot be combined with token exchange, upstream token injection or AWS STS: each sets the Authorization header',
    );
}

/** Applies a built-in stage's parameters to the proxy's tuning. */
function tuneProxy(entry: MiddlewareConfig, tuning: ProxyTuning, logger: Logger): void {
  const params = paramsObject(entry.type, entry.parameters);
  switch (entry.type) {
    case 'bodylimit': {
      const max = params['max_bytes'];
      if (max !== undefined && (typeof max !== 'number' || !Number.isInteger(max)))
        throw new SkepError('invalid_config', "middleware_configs: 'bodylimit' max_bytes must be an integer");
      tuning.maxBodyBytes = typeof max === 'number' && max > 0 ? max : REFERENCE_BODY_LIMIT;
      return;
    }
    case 'origin': {
      const origins = params['allowed_origins'] ?? [];
      if (!Array.isArray(origins) || origins.some((o) => typeof o !== 'string'))
        throw new SkepError(
          'invalid_config',
          "middleware_configs: 'origin' allowed_origins must be a list of strings",
        );
      const problem = allowedOriginsProblem(origins as string[]);
      if (problem !== undefined)
        throw new SkepError('invalid_config', `middleware_configs: 'origin': ${problem}`);
      tuning.allowedOrigins = [...(tuning.allowedOrigins ?? []), ...(origins as string[])];
      return;
    }
    case 'tool-filter':
    case 'tool-call-filter': {
      const filter = params['filter_tools'];
      if (filter !== undefined && filter !== null) {
        if (!Array.isArray(filter) || filter.some((t) => typeof t !== 'string'))
          throw new SkepError(
            'invalid_config',
            `middleware_configs: '${entry.type}' filter_tools must be a list of strings`,
          );
        if (filter.length > 0) tuning.toolsFilter = filter as string[];
      }
      const override = params['tools_override'];
      if (override !== undefined && override !== null) {
        if (typeof override !== 'object' || Array.isArray(override))
          throw new SkepError(
            'invalid_config',
            `middleware_configs: '${entry.type}' tools_override must be an object`,
          );
        tuning.toolsOverride = override as Record<string, ToolOverride>;
      }
      return;
    }
    case 'usagemetrics':
      logger.info('middleware_configs asks for usagemetrics: Skep sends no usage metrics anywhere');
      return;
    default:
      // mcp-parser, recovery, strip-auth: the proxy always does these.
      return;
  }
}

export async function buildPipeline(config: RunConfig, deps: Omit<StageDeps, 'config'>): Promise<Pipeline> {
  const plan = planPipeline(config);
  const stageDeps: StageDeps = Object.assign({}, deps, { config, peers: { rateLimits: [] } });
  const middlewares: Stage[] = [];
  const names: string[] = [];
  const handlers: ProxyHttpHandler[] = [];
  const proxy: ProxyTuning = {};
  const closeAll = async (): Promise<void> => {
    for (const stage of [...middlewares].reverse()) {
      try {
        await stage.close?.();
      } catch (err) {
        deps.logger.warn({ err, stage: stage.name }, 'a pipeline stage failed to close');
      }
    }
  };
  try {
    for (const entry of plan) {
      const factory = FACTORIES.get(entry.type);
      if (factory === undefined) {
        tuneProxy(entry, proxy, deps.logger);
        continue;
      }
      const stage = await factory.create(entry.parameters, stageDeps);
      if (stage === undefined) continue;
      middlewares.push(stage);
      names.push(entry.type);
      if (stage.handler !== undefined) handlers.push(stage.handler);
    }
  } catch (err) {
    await closeAll();
    throw err;
  }
  let started: Promise<void> | undefined;
  let closed: Promise<void> | undefined;
  return {
    middlewares,
    names,
    proxy,
    handlers,
    start() {
      started ??= Promise.all(middlewares.map((s) => s.start?.())).then(
        () => undefined,
        (err: unknown) => {
          started = undefined;
          throw err;
        },
      );
      return started;
    },
    close() {
      closed ??= closeAll();
      return closed;
    },
  };
}
