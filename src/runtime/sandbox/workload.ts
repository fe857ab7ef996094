/**
 * The sandbox of a workload as the manager sees it: refused at create when
 * it must be sandboxed and cannot, and shown in `skep list` and the workload detail. It is
 * the same decision the runner's process runtime takes at start (`chooseSandbox`), from the
 * same config and the same probe of this machine.
 */
import type { SkepConfig } from '../../config/index.js';
import { isSkepError } from '../../shared/index.js';
import { bindsFor, resolvePermissionProfile } from '../docker/profile.js';
import type { PermissionProfile } from '../types.js';
import { checkProfileBinds } from './bwrap-args.js';
import { hiddenPathsOf } from './hidden-paths.js';
import { chooseSandbox, type SandboxOverride } from './select.js';

/** The run-configuration fields that decide it. */
export interface WorkloadSandboxFields {
  image: string;
  remote_url?: string | undefined;
  sandbox?: SandboxOverride | undefined;
  permission_profile?: PermissionProfile | undefined;
  permission_profile_name_or_path?: string | undefined;
  isolate_network?: boolean | undefined;
}

export interface WorkloadSandbox {
  /** Whether the server runs isolated: in the bubblewrap sandbox or in a container. */
  sandboxed: boolean;
  /** `bwrap`, `container`, or `none`. */
  sandbox: 'bwrap' | 'container' | 'none';
  /** Why not, when it is not ('' otherwise). */
  reason: string;
}

/** Where a workload's server runs: a container image, or `npx://`/`uvx://` with a base image and an engine allowed. */
function runsInContainer(config: SkepConfig, image: string): boolean {
  const scheme = /^([a-z]+):\/\//.exec(image)?.[1];
  if (scheme === undefined) return true;
  if (scheme === 'cmd' || config.runtime.type === 'process') return false;
  const base =
    scheme === 'npx' ? config.runtime.node_image : scheme === 'uvx' ? config.runtime.uvx_image : undefined;
  return base !== undefined;
}

/**
 * Throws `sandbox_unavailable` when the workload's server would have to run sandboxed and
 * cannot, and `bad_request` when it runs sandboxed and its profile names a path that leads
 * into Skep's own folders, the API socket, `/proc` or `/sys` (the runner checks again at
 * every start).
 */
export function checkWorkloadSandbox(config: SkepConfig, w: WorkloadSandboxFields): void {
  if (w.remote_url !== undefined || runsInContainer(config, w.image)) return;
  const choice = chooseSandbox({
    setting: config.runtime.sandbox ?? 'auto',
    override: w.sandbox,
    profile: w.permission_profile,
    profileName: w.permission_profile_name_or_path,
    isolateNetwork: w.isolate_network !== false,
  });
  if (!choice.sandboxed) return;
  const profile = resolvePermissionProfile(w.permission_profile, w.permission_profile_name_or_path);
  checkProfileBinds(bindsFor(profile), hiddenPathsOf(config.paths));
}

/** Whether (and how) the workload's server runs isolated, and why not. */
export function workloadSandbox(config: SkepConfig, w: WorkloadSandboxFields): WorkloadSandbox {
  if (w.remote_url !== undefined) return { sandboxed: false, sandbox: 'none', reason: 'a remote server' };
  if (runsInContainer(config, w.image)) return { sandboxed: true, sandbox: 'container', reason: '' };
  try {
    const choice = chooseSandbox({
      setting: config.runtime.sandbox ?? 'auto',
      override: w.sandbox,
      profile: w.permission_profile,
      profileName: w.permission_profile_name_or_path,
      isolateNetwork: w.isolate_network !== false,
    });
    return choice.sandboxed
      ? { sandboxed: true, sandbox: 'bwrap', reason: '' }
      : { sandboxed: false, sandbox: 'none', reason: choice.reason };
  } catch (err) {
    if (isSkepError(err)) return { sandboxed: false, sandbox: 'none', reason: err.message };
    throw err;
  }
}
