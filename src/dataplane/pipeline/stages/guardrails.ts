/**
 * The `guardrails` stage (a Skep extension): built from `guardrails_config`, or from a
 * `middleware_configs` entry `{type: "guardrails", parameters: {config}}`. No
 * `guardrails_config` (a workload created before guardrails existed, a configuration
 * imported from the reference): no stage. New workloads get the defaults written into their
 * run configuration (own secrets and credential formats redacted in results).
 *
 * The own-secrets detector looks for every secret value Skep gives this workload, resolved
 * here from the secrets provider as the runner resolves them: the `secrets` injected into the
 * server's environment, the `header_forward` secret headers, and the remote server's bearer
 * token and OAuth client secret. The values stay in this process's memory; they are never
 * logged, stored, or put in an error or event (events name the secret).
 *
 * Findings are written as `guardrails_finding` audit events to the workload's audit log when
 * it has one (`audit_config`, whose event filters apply), else to the runner's log.
 */
import { parseSecretReference } from '../../../secrets/index.js';
import { SkepError } from '../../../shared/index.js';
import type { RunConfig } from '../../../workloads/index.js';
import type { Stage, StageDeps, StageFactory } from '../types.js';
import { secretName, secretOrLiteral } from './secrets.js';

const TYPE = 'guardrails';
const PARAMETER_KEYS = ['config'];

function configOf(parameters: unknown): unknown {
  if (parameters === undefined || parameters === null) return undefined;
  if (typeof parameters !== 'object' || Array.isArray(parameters))
    throw new SkepError(
      'invalid_config',
      "middleware_configs: the parameters of 'guardrails' must be an object {config}",
    );
  const raw = parameters as Record<string, unknown>;
  const unknown = Object.keys(raw).filter((k) => !PARAMETER_KEYS.includes(k));
  if (unknown.length > 0)
    throw new SkepError(
      'invalid_config',
      `guardrails parameters: unknown key(s) ${unknown.join(', ')} (known: ${PARAMETER_KEYS.join(', ')})`,
    );
  return raw['config'];
}

/**
 * The secret values Skep gives this workload, by a name that identifies each without its
 * value (the secret's name, or the field). A secret that cannot be resolved is skipped: the
 * runner has already refused to start the server without it.
 */
export async function ownSecretValues(config: RunConfig, deps: StageDeps): Promise<Map<string, string>> {
  const values = new Map<string, string>();
  const lookup = deps.secretLookup;
  const add = (name: string, value: string | undefined): void => {
    if (value !== undefined && value !== '') values.set(name, value);
  };
  for (const ref of config.secrets) {
    try {
      const { name } = parseSecretReference(ref);
      add(name, await lookup(name));
    } catch {
      // A malformed reference fails the runner's own resolution, before this stage.
    }
  }
  for (const ref of Object.values(config.header_forward?.add_headers_from_secret ?? {})) {
    const name = secretName(ref);
    add(name, await lookup(name));
  }
  const remote = config.remote_auth_config;
  for (const field of ['bearer_token', 'client_secret'] as const) {
    const ref = remote?.[field];
    if (ref === undefined || ref === '') continue;
    try {
      add(`remote_auth_config.${field}`, await secretOrLiteral(ref, lookup, `remote_auth_config.${field}`));
    } catch {
      // Missing: the remote-auth stage refuses to start with the same error.
    }
  }
  return values;
}

export const guardrailsStage: StageFactory = {
  type: TYPE,

  fromRunConfig(config) {
    const guardrails = config.guardrails_config;
    return guardrails === undefined ? undefined : { config: guardrails };
  },

  async check(parameters: unknown) {
    const { parseGuardrailsConfig } = await import('../../middleware/guardrails/index.js');
    parseGuardrailsConfig(configOf(parameters));
  },

  async create(parameters: unknown, deps: StageDeps): Promise<Stage | undefined> {
    // Loaded here, so that a workload without guardrails never loads the detectors (runner footprint).
    const { describeGuardrails, findingEvent, Guard, parseGuardrailsConfig } =
      await import('../../middleware/guardrails/index.js');
    const config = parseGuardrailsConfig(configOf(parameters));
    if (!config.enabled) {
      deps.logger.info('guardrails are disabled (guardrails_config.enabled is false)');
      return undefined;
    }
    const secrets = await ownSecretValues(deps.config, deps);
    const now = deps.now ?? Date.now;
    const logger = deps.logger;
    const guard = new Guard({
      config,
      secrets,
      report(report) {
        // Read at run time: the audit stage publishes its writer while the pipeline is built.
        const audit = deps.peers?.audit;
        const event = findingEvent(report, audit?.component ?? deps.config.name, now);
        if (audit === undefined) logger.info(event, 'audit_event');
        else if (audit.accepts(event.type)) audit.write(event);
      },
    });
    logger.info(
      { secrets_watched: secrets.size },
      `${describeGuardrails(config)} (${secrets.size} own secret value(s) watched)`,
    );
    if (guard.results === undefined && guard.arguments === undefined) return undefined;
    return {
      name: TYPE,
      async handle(ctx) {
        return guard.handle(ctx);
      },
      screenServerMessage: (message, text) => guard.screenServerMessage(message, text),
    };
  },
};
