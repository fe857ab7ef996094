/**
 * Checks of a built `RunConfig` that need to look something up — the group exists, the
 * secrets it references exist, the server can run here (a local package's executable, the
 * sandbox a profile demands, a usable container engine) — and the proxy's reach. Nothing is
 * written: every check passes before the manager records a workload.
 */
import type { SkepConfig } from '../config/index.js';
import { type GroupService, validateGroupName } from '../groups/index.js';
import { checkPipeline } from './pipeline-check.js';
import { checkLocalExecutable, checkWorkloadSandbox } from '../dataplane/runtime/index.js';
import { findExecutable, SkepError } from '../shared/index.js';
import { IMAGE_SCHEMES } from './config-builder.js';
import { allowedOriginsProblem } from '../schemas/index.js';
import { hostExposureProblem } from './exposure.js';
import type { RunConfig } from './run-config.js';
import { sessionStorageOf } from './session-storage.js';
import { checkSupportedFields } from './unsupported-fields.js';
import {
  parseSecretReference as parseSecretRef,
  requireSecrets,
  type SecretLookup,
  type SecretReference as SecretRef,
} from './secrets.js';

export interface WorkloadContainers {
  /** Throws `runtime_unavailable` when `image` (a container image) cannot run here. */
  check(image: string): Promise<void>;
  /** Removes the containers, networks and volumes of `name` (best effort). */
  remove(name: string): Promise<void>;
}

/** What the checks look things up in. */
export interface ConfigCheckContext {
  config: SkepConfig;
  groups: GroupService;
  secretLookup: SecretLookup;
  containers: WorkloadContainers | undefined;
  /**
   * The workloads a virtual workload over `group` would serve (the non-virtual ones other than
   * `self`), each with the tool names its runner reported, if it has.
   */
  groupBackends?: (group: string, self: string) => Array<{ name: string; tools: string[] | undefined }>;
}

/** The proxy's reach (`exposure.ts`): a 400 naming the field before anything is written. */
export function checkExposure(config: RunConfig): void {
  const problem = allowedOriginsProblem(config.allowed_origins ?? []) ?? hostExposureProblem(config);
  if (problem !== undefined) throw new SkepError('invalid_config', problem);
}

/**
 * What the run configuration asks of the proxy: fields this build would store and
 * ignore are refused (`unsupported_field`), the middleware pipeline must be one the runner can
 * build (known `middleware_configs` types, no conflicting fields), and an authorization policy
 * must be valid — all before anything is written, not when the workload starts.
 */
export async function checkHonouredFields(ctx: ConfigCheckContext, config: RunConfig): Promise<void> {
  checkSupportedFields(config, ctx.config);
  // session_ttl and scaling_config.session_redis: durations, address, db, key prefix.
  sessionStorageOf(config);
  // The middleware pipeline: types, combinations and each stage's own configuration
  // (authorization policies, the audit config, webhooks).
  await checkPipeline(config);
}

/** Everything about a config that can be checked without side effects. */
export async function validateConfig(ctx: ConfigCheckContext, config: RunConfig): Promise<void> {
  checkExposure(config);
  if (config.remote_url !== undefined) {
    let url: URL;
    try {
      url = new URL(config.remote_url);
    } catch {
      throw new SkepError('invalid_config', `url '${config.remote_url}' is not a valid URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new SkepError('invalid_config', 'url must be http:// or https://');
    if (config.transport === 'stdio')
      throw new SkepError(
        'invalid_config',
        "a remote server (url) needs transport 'sse' or 'streamable-http'",
      );
  }
  validateGroupName(config.group);
  ctx.groups.require(config.group);
  const refs: SecretRef[] = config.secrets.map(parseSecretRef);
  for (const extra of [config.remote_auth_config?.client_secret, config.remote_auth_config?.bearer_token]) {
    if (extra !== undefined) refs.push(parseSecretRef(extra));
  }
  await requireSecrets(refs, ctx.secretLookup);
  await checkRunnable(ctx, config);
  await checkHonouredFields(ctx, config);
  for (const key of Object.keys(config.env_vars)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key))
      throw new SkepError('invalid_config', `env_vars: '${key}' is not a valid variable name`);
  }
}

/** Whether the server can run here: a remote URL always can; a package or image is checked. */
export async function checkRunnable(ctx: ConfigCheckContext, config: RunConfig): Promise<void> {
  if (config.vmcp !== undefined) {
    // A virtual MCP server runs no server of its own: its config is all there is to check.
    if (config.image !== '' || config.remote_url !== undefined)
      throw new SkepError('invalid_config', "a virtual MCP server ('vmcp') takes no 'image' or 'url'");
    const { parseVmcpConfig } = await import('../dataplane/vmcp/config.js');
    const vmcp = parseVmcpConfig(config.vmcp);
    if (ctx.groupBackends !== undefined && vmcp.composites.length > 0) {
      // The steps' tools against what the group's backends reported (the rest waits for start).
      const { checkCompositeRefs } = await import('../dataplane/vmcp/composite/resolve.js');
      const group = vmcp.groupRef ?? config.group;
      checkCompositeRefs(vmcp, group, ctx.groupBackends(group, config.name));
    }
    return;
  }
  if (config.remote_url !== undefined) return;
  if (config.image === '') throw new SkepError('invalid_reference', "'image' is empty");
  checkImageScheme(config.image);
  if (config.permission_profile.privileged === true && !ctx.config.runtime.allow_privileged) {
    throw new SkepError(
      'privileged_not_allowed',
      'the permission profile asks for a privileged container; set runtime.allow_privileged: true in the config to allow it',
    );
  }
  if (IMAGE_SCHEMES.test(config.image)) {
    // The runner starts the server with this environment (and the workload's PATH, if set).
    checkLocalExecutable(config.image, { ...process.env, ...config.env_vars });
    checkUvx(ctx.config, config);
    // A profile that asks for isolation never runs unisolated without an explicit opt-out.
    checkWorkloadSandbox(ctx.config, config);
  } else if (ctx.containers !== undefined) {
    await ctx.containers.check(config.image);
  } else {
    throw new SkepError(
      'runtime_unavailable',
      `'${config.image}' is a container image; this build runs servers as local processes only (npx://, uvx://, cmd://)`,
    );
  }
}

/**
 * A `uvx://` server runs `uvx` on this machine unless `runtime.uvx_image` puts it in a
 * container (or `runtime.type` is docker): without uvx it could only fail, so create refuses
 * and says how to get it.
 */
function checkUvx(skep: SkepConfig, config: RunConfig): void {
  if (!config.image.startsWith('uvx://')) return;
  if (skep.runtime.uvx_image !== undefined || skep.runtime.type === 'docker') return;
  if (findExecutable('uvx', { ...process.env, ...config.env_vars }) !== undefined) return;
  throw new SkepError(
    'executable_not_found',
    `cannot start '${config.image}': uvx is not on PATH. uvx comes with uv: install it ` +
      '(https://docs.astral.sh/uv/getting-started/installation/, e.g. `pipx install uv`), ' +
      'or set runtime.uvx_image to run uvx:// servers in a container',
  );
}

/**
 * A `scheme://` image must be one the process runtime starts and name what to run: `npx://`
 * alone would create a workload that can only fail (and be restarted) with nothing to run.
 */
function checkImageScheme(image: string): void {
  const match = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/(.*)$/.exec(image);
  if (match === null) return;
  const scheme = (match[1] as string).toLowerCase();
  const target = (match[2] as string).trim();
  if (scheme === 'http' || scheme === 'https')
    throw new SkepError(
      'invalid_reference',
      `image '${image}' is a URL: give a remote MCP server as 'url' (skep run <url>), not as 'image'`,
    );
  if (scheme !== 'npx' && scheme !== 'uvx' && scheme !== 'cmd')
    throw new SkepError(
      'invalid_reference',
      `image '${image}': unknown scheme '${scheme}://'; use npx://<package>, uvx://<package>, cmd://<executable> or a container image`,
    );
  if (target === '') {
    const hint =
      scheme === 'npx'
        ? 'a package: npx://<package>, e.g. npx://@modelcontextprotocol/server-everything'
        : scheme === 'uvx'
          ? 'a package: uvx://<package>, e.g. uvx://mcp-server-fetch'
          : 'a program: cmd://<executable>, e.g. cmd:///usr/local/bin/my-server';
    throw new SkepError('invalid_reference', `image '${image}' names nothing to run; add ${hint}`);
  }
}
