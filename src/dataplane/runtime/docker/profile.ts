/**
 * Permission profiles (ToolHive's PermissionProfile, `src/schemas/permission-profile.ts`) turned
 * into container settings. Built-in profiles: `none` (no network at all) and `network`
 * (unrestricted outbound). A profile may also come from a JSON file
 * (`permission_profile_name_or_path`), the run configuration, or the registry entry (the manager
 * copies it in at create). With no profile at all the server gets `network`, as in the reference.
 *
 * Mount entries: `read` / `write` hold `host[:container]` paths (container path defaults to
 * the host path); `read` becomes a read-only bind, `write` a read-write bind.
 */
import { readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { jsonSyntaxError, SkepError } from '../../../shared/index.js';
import type { PermissionProfile } from '../types.js';

export const BUILTIN_PROFILES: Readonly<Record<'none' | 'network', PermissionProfile>> = Object.freeze({
  none: {
    name: 'none',
    network: { outbound: { insecure_allow_all: false, allow_host: [], allow_port: [] } },
  },
  network: { name: 'network', network: { outbound: { insecure_allow_all: true } } },
});

function isEmptyProfile(profile: PermissionProfile | undefined): boolean {
  if (profile === undefined) return true;
  return (
    profile.network === undefined &&
    (profile.read ?? []).length === 0 &&
    (profile.write ?? []).length === 0 &&
    profile.privileged === undefined
  );
}

/** The effective profile: a built-in or file named by `nameOrPath`, else `profile`, else `network`. */
export function resolvePermissionProfile(
  profile: PermissionProfile | undefined,
  nameOrPath?: string,
): PermissionProfile {
  if (nameOrPath !== undefined && nameOrPath !== '') {
    if (nameOrPath === 'none' || nameOrPath === 'network')
      return structuredClone(BUILTIN_PROFILES[nameOrPath]);
    if (!isAbsolute(nameOrPath)) {
      throw new SkepError(
        'invalid_config',
        `permission profile '${nameOrPath}' is neither 'none', 'network' nor an absolute file path`,
      );
    }
    let text: string;
    try {
      text = readFileSync(nameOrPath, 'utf8');
    } catch (err) {
      throw new SkepError(
        'invalid_config',
        `cannot read permission profile ${nameOrPath}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      // V8's message quotes the text: the path may name any file this process can read.
      throw new SkepError(
        'invalid_config',
        `permission profile ${nameOrPath} is not valid JSON (${jsonSyntaxError(text, err)})`,
      );
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new SkepError('invalid_config', `permission profile ${nameOrPath} is not a JSON object`);
    }
    return parsed;
  }
  if (profile?.name !== undefined) {
    const { name, ...rules } = profile;
    if (isEmptyProfile(rules) && (name === 'none' || name === 'network'))
      return structuredClone(BUILTIN_PROFILES[name]);
  }
  if (isEmptyProfile(profile)) return structuredClone(BUILTIN_PROFILES.network);
  return profile as PermissionProfile;
}

export interface OutboundPolicy {
  /** No restriction: the default network. */
  allowAll: boolean;
  hosts: string[];
  ports: number[];
}

export function outboundPolicy(profile: PermissionProfile): OutboundPolicy {
  const out = profile.network?.outbound;
  if (out?.insecure_allow_all === true) return { allowAll: true, hosts: [], ports: [] };
  return { allowAll: false, hosts: [...(out?.allow_host ?? [])], ports: [...(out?.allow_port ?? [])] };
}

/** True when the policy lets nothing out (then a stdio server needs no network at all). */
export function deniesEverything(policy: OutboundPolicy): boolean {
  return !policy.allowAll && policy.hosts.length === 0 && policy.ports.length === 0;
}

/** `read`/`write` entries (and run-config `volumes`) → Docker `Binds`. */
export function bindsFor(profile: PermissionProfile, volumes: readonly string[] = []): string[] {
  const binds: string[] = [];
  const add = (entry: string, readOnly: boolean, what: string) => {
    const { host, container, mode } = parseMount(entry, what);
    binds.push(`${host}:${container}:${readOnly || mode === 'ro' ? 'ro' : 'rw'}`);
  };
  for (const entry of profile.read ?? []) add(entry, true, 'permission_profile.read');
  for (const entry of profile.write ?? []) add(entry, false, 'permission_profile.write');
  for (const entry of volumes) add(entry, false, 'volumes');
  return binds;
}

function parseMount(entry: string, what: string): { host: string; container: string; mode?: string } {
  const parts = entry.split(':');
  let mode: string | undefined;
  if (parts.length === 3 || (parts.length === 2 && (parts[1] === 'ro' || parts[1] === 'rw')))
    mode = parts.pop();
  const host = parts[0] ?? '';
  const container = parts[1] ?? host;
  if (parts.length > 2 || !isAbsolute(host) || !isAbsolute(container)) {
    throw new SkepError(
      'invalid_config',
      `${what}: '${entry}' must be an absolute host path, optionally ':/container/path' and ':ro' or ':rw'`,
    );
  }
  if (mode !== undefined && mode !== 'ro' && mode !== 'rw') {
    throw new SkepError('invalid_config', `${what}: '${entry}' has mode '${mode}'; use ro or rw`);
  }
  return mode === undefined ? { host, container } : { host, container, mode };
}
