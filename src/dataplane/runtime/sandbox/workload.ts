/**
 * The sandbox of a workload as the manager sees it: refused at create when
 * it must be sandboxed and cannot, and shown in `skep list` and the workload detail. It is
 * the same decision the runner's process runtime takes at start (`chooseSandbox`), from the
 * same config and the same probe of this machine.
 */
import type { SkepConfig } from '../../../config/index.js';
import { definedOnly, isSkepError } from '../../../shared/index.js';
import { bindsFor, outboundPolicy, resolvePermissionProfile } from '../docker/profile.js';
import { serverNetwork } from '../docker/server-container.js';
import type { PermissionProfile } from '../types.js';
import { checkProfileBinds } from './bwrap-args.js';
import { sandboxNetwork } from './bwrap-sandbox.js';
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
  /** `stdio`, `sse` or `streamable-http`: a container with a published port keeps a network. */
  transport?: string | undefined;
}

/**
 * The network the server gets, as enforced: `none` (a namespace with nothing in it),
 * `filtered` (outbound only to an allow-list, through a filtering proxy), `host` (this
 * machine's own network namespace), `open` (a container on the engine's default network, all
 * outbound traffic allowed), or `n/a` (Skep runs no server process for it).
 */
export type WorkloadNetwork = 'none' | 'filtered' | 'host' | 'open' | 'n/a';

export interface WorkloadSandbox {
  /** Whether the server runs isolated: in the bubblewrap sandbox or in a container. */
  sandboxed: boolean;
  /** `bwrap`, `container`, `none`, or `n/a` (a remote server: Skep runs no server process for it). */
  sandbox: 'bwrap' | 'container' | 'none' | 'n/a';
  /** Why not, when it is not ('' otherwise). */
  reason: string;
  network: WorkloadNetwork;
  /** `network` in words: what the server can reach, and why. */
  networkReason: string;
}

/** Hosts and ports of an outbound allow-list, in words (the egress rules: an empty list allows any). */
function allowListWords(hosts: readonly string[], ports: readonly number[]): string {
  const where = hosts.length === 0 ? 'any host' : hosts.join(', ');
  return ports.length === 0 ? where : `${where} on port${ports.length === 1 ? '' : 's'} ${ports.join(', ')}`;
}

type NetworkLabel = Pick<WorkloadSandbox, 'network' | 'networkReason'>;

/** A container's network, from the rule the container runtime applies (`serverNetwork`). */
function containerNetworkLabel(w: WorkloadSandboxFields): NetworkLabel {
  const profile = resolvePermissionProfile(w.permission_profile, w.permission_profile_name_or_path);
  const http = w.transport !== undefined && w.transport !== 'stdio';
  const network = serverNetwork(profile, w.isolate_network !== false, http);
  if (network === 'none') return { network: 'none', networkReason: 'none: the container has no network' };
  if (network === 'egress') {
    const policy = outboundPolicy(profile);
    return {
      network: 'filtered',
      networkReason: `only ${allowListWords(policy.hosts, policy.ports)}, through the egress proxy`,
    };
  }
  return {
    network: 'open',
    networkReason:
      w.isolate_network === false
        ? "the container engine's network, all outbound traffic allowed (network isolation is off)"
        : "the container engine's network, all outbound traffic allowed (its permission profile allows it)",
  };
}

/** A bubblewrap sandbox's network, from the rule the sandbox applies (`sandboxNetwork`). */
function bwrapNetworkLabel(w: WorkloadSandboxFields): NetworkLabel {
  const network = sandboxNetwork({
    ...definedOnly({
      permissionProfile: w.permission_profile,
      permissionProfileName: w.permission_profile_name_or_path,
    }),
    isolateNetwork: w.isolate_network !== false,
  });
  if (network.kind === 'none') return { network: 'none', networkReason: 'none: the sandbox has no network' };
  if (network.kind === 'filtered') {
    return {
      network: 'filtered',
      networkReason: `only ${allowListWords(network.rules.hosts, network.rules.ports)}, through Skep's filtering proxy`,
    };
  }
  return {
    network: 'host',
    networkReason:
      w.isolate_network === false
        ? "this machine's network, unfiltered (network isolation is off)"
        : "this machine's network, unfiltered (its permission profile allows all outbound traffic)",
  };
}

const UNSANDBOXED_NETWORK: NetworkLabel = {
  network: 'host',
  networkReason: "this machine's network, unfiltered (the server is not sandboxed)",
};

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
 * cannot, and `invalid_config` when it runs sandboxed and its profile names a path that leads
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
  if (w.remote_url !== undefined) {
    return {
      sandboxed: false,
      sandbox: 'n/a',
      reason: 'Skep runs no server process for a remote server',
      network: 'n/a',
      networkReason: 'not applicable: Skep runs no server process for a remote server',
    };
  }
  try {
    if (runsInContainer(config, w.image))
      return { sandboxed: true, sandbox: 'container', reason: '', ...containerNetworkLabel(w) };
    const choice = chooseSandbox({
      setting: config.runtime.sandbox ?? 'auto',
      override: w.sandbox,
      profile: w.permission_profile,
      profileName: w.permission_profile_name_or_path,
      isolateNetwork: w.isolate_network !== false,
    });
    return choice.sandboxed
      ? { sandboxed: true, sandbox: 'bwrap', reason: '', ...bwrapNetworkLabel(w) }
      : { sandboxed: false, sandbox: 'none', reason: choice.reason, ...UNSANDBOXED_NETWORK };
  } catch (err) {
    if (isSkepError(err))
      return { sandboxed: false, sandbox: 'none', reason: err.message, ...UNSANDBOXED_NETWORK };
    throw err;
  }
}
