/**
 * The `audit` stage (ToolHive's audit middleware): one event per exchange, written to
 * `audit_config.logFile` or the runner's log. Built from `audit_config` (else the JSON file
 * of `audit_config_path`), or from a `middleware_configs` entry with the reference's
 * parameters `{config_path?, config_data?, component?, transport_type?}`.
 *
 * `component`: the config's own, else the `component` parameter, else `toolhive-api` (the
 * reference's rules). The run configuration path passes the workload's name, as the
 * reference's CLI does, so every Skep workload's events name their server; only an explicit
 * `middleware_configs` entry without one gets `toolhive-api`.
 *
 * `enabled: false` is honoured (the reference installs the middleware anyway): the stage is
 * absent and one INFO line says so. `transport_type` is accepted and checked but not needed:
 * the proxy serves both client transports for every server, so each event's transport is the
 * one its request used.
 */
import {
  AUDIT_DEFAULTS,
  type AuditConfig,
  type AuditSink,
  loadAuditConfigFile,
  parseAuditConfig,
} from '../../middleware/audit/index.js';
import { SkepError } from '../../../shared/index.js';
import { localUserIdentity } from '../identity.js';
import type { Stage, StageDeps, StageFactory } from '../types.js';

interface AuditParameters {
  config_path?: string;
  config_data?: unknown;
  component?: string;
  transport_type?: string;
}

const PARAMETER_KEYS = new Set(['config_path', 'config_data', 'component', 'transport_type']);
const TRANSPORTS = new Set(['stdio', 'sse', 'streamable-http']);

function bad(message: string): never {
  throw new SkepError('invalid_config', message);
}

function parseParameters(value: unknown): AuditParameters {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) bad('audit parameters must be a JSON object');
  const raw = value as Record<string, unknown>;
  const unknown = Object.keys(raw).filter((k) => !PARAMETER_KEYS.has(k));
  if (unknown.length > 0)
    bad(
      `audit parameters: unknown key${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; ` +
        `known keys: ${[...PARAMETER_KEYS].join(', ')}`,
    );
  const out: AuditParameters = {};
  for (const key of ['config_path', 'component', 'transport_type'] as const) {
    const v = raw[key];
    if (v === undefined || v === null || v === '') continue;
    if (typeof v !== 'string') bad(`audit parameters.${key} must be a string`);
    out[key] = v;
  }
  if (out.transport_type !== undefined && !TRANSPORTS.has(out.transport_type))
    bad(`audit parameters.transport_type must be one of ${[...TRANSPORTS].join(', ')}`);
  if (raw['config_data'] !== undefined && raw['config_data'] !== null) out.config_data = raw['config_data'];
  return out;
}

async function configOf(params: AuditParameters): Promise<AuditConfig> {
  if (params.config_data !== undefined) return parseAuditConfig(params.config_data, 'audit_config');
  if (params.config_path !== undefined) return loadAuditConfigFile(params.config_path);
  return parseAuditConfig({});
}

export const auditStage: StageFactory = {
  type: 'audit',

  fromRunConfig(config) {
    const common = { component: config.name, transport_type: config.transport };
    if (config.audit_config !== undefined) return { config_data: config.audit_config, ...common };
    if (config.audit_config_path !== undefined && config.audit_config_path !== '')
      return { config_path: config.audit_config_path, ...common };
    return undefined;
  },

  async check(parameters: unknown) {
    await configOf(parseParameters(parameters));
  },

  async create(parameters: unknown, deps: StageDeps): Promise<Stage | undefined> {
    const params = parseParameters(parameters);
    const config = await configOf(params);
    if (!config.enabled) {
      deps.logger.info('audit is disabled (audit_config.enabled is false): no audit events are written');
      return undefined;
    }
    // Loaded here, so that a workload without audit never loads the auditor (runner footprint).
    const { Auditor, AuditWriter, loggerSink, openAuditFile } =
      await import('../../middleware/audit/runtime.js');
    const sink: AuditSink<unknown> =
      config.logFile === undefined ? loggerSink(deps.logger) : await openAuditFile(config.logFile);
    const writer = new AuditWriter({ sink, logger: deps.logger });
    // Without inbound authentication every caller is the local user (as in ToolHive); with it, a
    // request that was not authenticated (a 401) is "anonymous".
    const authenticates =
      deps.config.oidc_config !== undefined || deps.config.embedded_auth_server_config !== undefined;
    const auditor = new Auditor({
      config,
      component: config.component ?? params.component ?? AUDIT_DEFAULTS.component,
      trustProxyHeaders: deps.config.trust_proxy_headers === true,
      writer,
      unauthenticatedClaims: authenticates ? () => undefined : () => localUserIdentity().claims,
      ...(deps.now === undefined ? {} : { now: deps.now }),
    });
    if (deps.peers !== undefined)
      deps.peers.audit = {
        component: config.component ?? params.component ?? AUDIT_DEFAULTS.component,
        accepts: (type) =>
          !config.excludeEventTypes.includes(type) &&
          (config.eventTypes.length === 0 || config.eventTypes.includes(type)),
        write: (event) => writer.write(event),
      };
    deps.logger.info(
      { audit_log: config.logFile ?? 'runner log' },
      `audit: writing events to ${config.logFile ?? 'the runner log'}`,
    );
    return {
      name: 'audit',
      handle(ctx) {
        auditor.handle(ctx);
        return undefined;
      },
      close: () => auditor.close(),
    };
  },
};
