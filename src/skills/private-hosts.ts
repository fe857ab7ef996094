/**
 * Which OCI registries and git servers a skill may be fetched from when they are on this machine or
 * a private network (the outbound address policy, `src/shared/net`). A skill reference comes from
 * whoever calls the API (`GET /skills/content?ref=`, install), so by default only public addresses
 * are contacted; the user names their own registries and git servers here, as docker's
 * `insecure-registries` names the ones it may speak plain HTTP to. Link-local and cloud metadata
 * addresses stay refused even when listed.
 *
 * The list is `SKEP_SKILLS_PRIVATE_HOSTS` (read here and nowhere else) plus what the caller
 * passes as `SkillsServiceOptions.privateHosts`: `host` (any port) or `host:port`, separated
 * by commas or spaces, e.g. `127.0.0.1:5000, git.internal`.
 */
import { parseHostList, SkepError } from '../shared/index.js';

export const PRIVATE_HOSTS_ENV = 'SKEP_SKILLS_PRIVATE_HOSTS';

/** Appended to a refusal of a loopback or private skill host: how to allow it. */
export const PRIVATE_HOSTS_HINT = `list it in ${PRIVATE_HOSTS_ENV} (host or host:port) to use a registry or git server on this machine or a private network`;

/** The user's private skill hosts: `configured` plus the environment variable. A bad entry is a 400 naming it. */
export function privateSkillHosts(configured: readonly string[], env: NodeJS.ProcessEnv): string[] {
  const read = (value: string | readonly string[] | undefined, where: string): string[] => {
    try {
      return parseHostList(value);
    } catch (err) {
      throw new SkepError('invalid_config', `${where}: ${(err as Error).message}`);
    }
  };
  return [...read(configured, 'private skill hosts'), ...read(env[PRIVATE_HOSTS_ENV], PRIVATE_HOSTS_ENV)];
}
