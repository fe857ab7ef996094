/**
 * Registry upgrade checks: does the registry entry a workload came from now name a different
 * image (or URL)? An offline comparison of metadata — nothing is pulled. The result also
 * shows what else would change: the transport, the permission profile, and the environment
 * variables the new entry declares that the workload does not supply. Secret values never
 * appear; a secret variable's default is left out.
 */
import { definedOnly } from '../shared/index.js';
import type { RegistryServerSpec, ResolveRegistryServer } from './registry-server.js';
import type { RunConfig } from './run-config.js';

export type UpgradeStatus =
  'up-to-date' | 'upgrade-available' | 'not-registry-sourced' | 'server-not-found' | 'unknown';

export interface EnvVarInfo {
  name: string;
  description?: string;
  required?: boolean;
  secret?: boolean;
  default?: string;
}

export interface UpgradeCheckResult {
  workload_name: string;
  status: UpgradeStatus;
  current_image: string;
  candidate_image?: string;
  registry_server?: string;
  reason?: string;
  config_drift?: {
    transport?: { from: string; to: string };
    permission_profile?: { from: string; to: string };
  };
  env_var_drift?: { added: EnvVarInfo[]; removed: EnvVarInfo[] };
}

/** What a workload runs: its image, or for a remote server its URL. */
const runningRef = (config: RunConfig): string => config.remote_url ?? config.image;

/** A short label for a permission profile: its name, or `custom`. */
function profileLabel(profile: unknown): string {
  if (profile === undefined || profile === null) return 'none';
  const name = (profile as { name?: unknown }).name;
  return typeof name === 'string' && name !== '' ? name : 'custom';
}

/** Env var names the workload supplies: plain values and secret targets. */
function suppliedEnv(config: RunConfig): Set<string> {
  const names = new Set(Object.keys(config.env_vars ?? {}));
  for (const ref of config.secrets ?? []) {
    const target = /,target=(.+)$/.exec(ref)?.[1];
    if (target !== undefined) names.add(target);
  }
  return names;
}

function envInfo(v: NonNullable<RegistryServerSpec['envVars']>[number]): EnvVarInfo {
  return {
    name: v.name,
    ...definedOnly({ description: v.description, required: v.required, secret: v.secret }),
    // A secret's default could itself be sensitive: never shown.
    ...(v.default === undefined || v.secret === true ? {} : { default: v.default }),
  };
}

export async function checkUpgrade(
  config: RunConfig,
  resolve: ResolveRegistryServer | undefined,
): Promise<UpgradeCheckResult> {
  const base = { workload_name: config.name, current_image: runningRef(config) };
  const server = config.registry_server_name;
  if (server === undefined || server === '') return { ...base, status: 'not-registry-sourced' };
  const sourced = { ...base, registry_server: server };
  if (resolve === undefined)
    return { ...sourced, status: 'unknown', reason: 'no registry is available to this service' };
  let entry: RegistryServerSpec | undefined;
  try {
    entry = await resolve(server);
  } catch (err) {
    return {
      ...sourced,
      status: 'unknown',
      reason: `the registry could not be read: ${(err as Error).message}`,
    };
  }
  if (entry === undefined) return { ...sourced, status: 'server-not-found' };

  const candidate = entry.url ?? entry.image;
  const result: UpgradeCheckResult = {
    ...sourced,
    status: candidate === base.current_image ? 'up-to-date' : 'upgrade-available',
    candidate_image: candidate,
  };
  const drift: NonNullable<UpgradeCheckResult['config_drift']> = {};
  const transport = entry.transport ?? (entry.url === undefined ? 'stdio' : 'streamable-http');
  if (transport !== config.transport) drift.transport = { from: config.transport, to: transport };
  if (
    entry.permissions !== undefined &&
    JSON.stringify(entry.permissions) !== JSON.stringify(config.permission_profile ?? {})
  ) {
    drift.permission_profile = {
      from: profileLabel(config.permission_profile),
      to: profileLabel(entry.permissions),
    };
  }
  if (Object.keys(drift).length > 0) result.config_drift = drift;

  // `removed` stays empty: what the old entry declared is not recorded, and a variable the
  // workload has but the new entry does not declare may well be the user's own.
  const supplied = suppliedEnv(config);
  const added = (entry.envVars ?? []).filter((v) => !supplied.has(v.name)).map(envInfo);
  if (added.length > 0) result.env_var_drift = { added, removed: [] };
  return result;
}

/**
 * Variables the candidate requires that the workload would still not supply after the
 * upgrade request's own env and secrets are merged in (and that have no default).
 */
export function missingRequired(result: UpgradeCheckResult, extra: Set<string>): string[] {
  return (result.env_var_drift?.added ?? [])
    .filter((v) => v.required === true && v.default === undefined && !extra.has(v.name))
    .map((v) => v.name);
}

/** Options of a registry upgrade: extra env values and secret references (`<name>,target=<ENV>`). */
export interface UpgradeRequest {
  env?: Record<string, string>;
  secrets?: string[];
}
