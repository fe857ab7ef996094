/**
 * Whether a local (process) server runs in the bubblewrap sandbox. Inputs:
 * `runtime.sandbox` in the config (`auto`, `bwrap`, `off`, or the absolute path of a bwrap
 * binary), the workload's override (`sandbox` in its run configuration: `auto`, `bwrap`,
 * `off`) and its permission profile. `auto` sandboxes when bubblewrap works on this machine,
 * probed once per binary like the container engine detection (a miss is probed again after a
 * pause, so installing bubblewrap needs no restart). A profile that asks for isolation is
 * never run unisolated without an explicit opt-out: with no usable sandbox it is refused
 * (`sandbox_unavailable`) unless the workload says `sandbox: off`.
 */
import { spawnSync } from 'node:child_process';
import { isAbsolute } from 'node:path';
import { findExecutable, isExecutable, SkepError } from '../../../shared/index.js';
import { deniesEverything, outboundPolicy, resolvePermissionProfile } from '../docker/profile.js';
import type { PermissionProfile } from '../types.js';

export type SandboxOverride = 'auto' | 'bwrap' | 'off';

export type SandboxChoice = { sandboxed: true; binary: string } | { sandboxed: false; reason: string };

export type ProbeResult = { ok: true; path: string } | { ok: false; reason: string };

/** How long a failed probe is trusted before bubblewrap is tried again, ms. */
const MISS_RECHECK_MS = 10_000;
const probes = new Map<string, { at: number; result: ProbeResult }>();

/**
 * The flags the sandbox really uses, on `true`: bubblewrap that is installed but cannot
 * create namespaces here (user namespaces disabled, a seccomp-confined container) fails
 * now, with its own message, instead of at every start.
 */
const PROBE_ARGS: readonly string[] = [
  '--ro-bind',
  '/',
  '/',
  '--dev',
  '/dev',
  '--proc',
  '/proc',
  '--unshare-all',
  '--cap-drop',
  'ALL',
  '--new-session',
  '--die-with-parent',
  'true',
];

/** Whether `binary` (a name on PATH or an absolute path) is a bubblewrap that works here. */
export function probeBwrap(binary: string, env: NodeJS.ProcessEnv = process.env): ProbeResult {
  const cached = probes.get(binary);
  if (cached !== undefined && (cached.result.ok || Date.now() - cached.at < MISS_RECHECK_MS))
    return cached.result;
  const result = runProbe(binary, env);
  probes.set(binary, { at: Date.now(), result });
  return result;
}

function runProbe(binary: string, env: NodeJS.ProcessEnv): ProbeResult {
  // Not built yet (docs/sandbox.md, "Other systems"): macOS would use a sandbox-exec (Seatbelt)
  // profile, Windows an AppContainer.
  if (process.platform === 'darwin')
    return { ok: false, reason: 'no sandbox on macOS yet (a sandbox-exec profile would enforce it)' };
  if (process.platform !== 'linux')
    return { ok: false, reason: `no sandbox on ${process.platform} yet (bubblewrap is Linux only)` };
  const path = isAbsolute(binary) ? (isExecutable(binary) ? binary : undefined) : findExecutable(binary, env);
  if (path === undefined) {
    return {
      ok: false,
      reason: isAbsolute(binary)
        ? `${binary} does not exist or is not executable`
        : `${binary} is not installed (not found on PATH)`,
    };
  }
  const run = spawnSync(path, PROBE_ARGS, {
    encoding: 'utf8',
    timeout: 10_000,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  if (run.status === 0) return { ok: true, path };
  const why = run.error?.message ?? (run.stderr.trim() || `exit ${run.status ?? run.signal}`);
  return { ok: false, reason: `${path} does not work here: ${why.split('\n')[0]}` };
}

/**
 * What a profile asks the sandbox to enforce, in words, or `undefined` when it asks for
 * nothing a plain process lacks (the built-in `network` profile, or no profile at all).
 */
export function isolationDemand(
  profile: PermissionProfile | undefined,
  profileName: string | undefined,
  isolateNetwork: boolean,
): string | undefined {
  const resolved = resolvePermissionProfile(profile, profileName);
  const asks: string[] = [];
  if (resolved.network?.mode === 'none') asks.push('no network (network.mode none)');
  else if (isolateNetwork) {
    const policy = outboundPolicy(resolved);
    if (!policy.allowAll)
      asks.push(deniesEverything(policy) ? 'no outbound network' : 'an outbound allow-list');
  }
  if ((resolved.read ?? []).length > 0 || (resolved.write ?? []).length > 0) asks.push('read/write paths');
  return asks.length === 0 ? undefined : asks.join(', ');
}

export interface SandboxSelection {
  /** `runtime.sandbox`. */
  setting: string;
  /** The workload's `sandbox`, if set. */
  override?: SandboxOverride | undefined;
  profile?: PermissionProfile | undefined;
  profileName?: string | undefined;
  isolateNetwork: boolean;
  /** Defaults to `probeBwrap`. */
  probe?: (binary: string) => ProbeResult;
}

const OPT_OUT = 'or set "sandbox": "off" in the workload’s run configuration to run it without isolation';

/** Sandboxed or not, and why not; throws `sandbox_unavailable` when it must be and cannot. */
export function chooseSandbox(input: SandboxSelection): SandboxChoice {
  const { setting, override } = input;
  if (override === 'off') return { sandboxed: false, reason: 'the workload opts out (sandbox: off)' };
  const demand = isolationDemand(input.profile, input.profileName, input.isolateNetwork);
  if (setting === 'off' && override !== 'bwrap') {
    if (demand !== undefined) {
      throw new SkepError(
        'sandbox_unavailable',
        `the permission profile asks for ${demand}, but runtime.sandbox is off; set runtime.sandbox to auto or bwrap, ${OPT_OUT}`,
      );
    }
    return { sandboxed: false, reason: 'runtime.sandbox is off' };
  }
  const binary = isAbsolute(setting) ? setting : 'bwrap';
  const required = override === 'bwrap' || setting === 'bwrap' || isAbsolute(setting);
  const probe = (input.probe ?? probeBwrap)(binary);
  if (probe.ok) return { sandboxed: true, binary: probe.path };
  if (required) {
    const who =
      override === 'bwrap' ? 'the workload asks for the bwrap sandbox' : `runtime.sandbox is ${setting}`;
    throw new SkepError(
      'sandbox_unavailable',
      `${who}, but ${probe.reason}; install bubblewrap (Debian/Ubuntu: apt install bubblewrap), ${OPT_OUT}`,
    );
  }
  if (demand !== undefined) {
    throw new SkepError(
      'sandbox_unavailable',
      `the permission profile asks for ${demand}, and no sandbox is available (${probe.reason}); install bubblewrap (Debian/Ubuntu: apt install bubblewrap), ${OPT_OUT}`,
    );
  }
  return { sandboxed: false, reason: `no sandbox available: ${probe.reason}` };
}
