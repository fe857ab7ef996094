/**
 * The registry seam of the workload engine: what a registry entry contributes to a workload,
 * and the lookup the registry domain implements. The manager (create, `skep run <name>`) and
 * the upgrade check both depend on it, and on nothing of each other.
 */
import { didYouMean, SkepError } from '../shared/index.js';
import type { RunConfig } from './run-config.js';

/** What a registry entry contributes to a workload (the registry domain implements the lookup). */
export interface RegistryServerSpec {
  /** Image or package reference; '' for a remote server. */
  image: string;
  /** Set for a remote server: the URL the proxy forwards to. */
  url?: string;
  transport?: 'stdio' | 'sse' | 'streamable-http';
  args?: string[];
  env?: Record<string, string>;
  target_port?: number;
  tools?: string[];
  /** The entry's permission profile; applies unless the request brings its own. */
  permissions?: RunConfig['permission_profile'];
  /** The entry's provenance: who signs its image (becomes the workload's `image_verification`). */
  provenance?: {
    signer_identity?: string;
    cert_issuer?: string;
    repository_uri?: string;
    public_key?: string;
  };
  /** The environment variables the entry declares (for upgrade checks; no secret values). */
  envVars?: Array<{
    name: string;
    description?: string;
    required?: boolean;
    secret?: boolean;
    default?: string;
  }>;
}
/**
 * Resolves a registry server name; `undefined` when the registry has no such server. `similar`,
 * when the registry can list its names, gives the close ones for the error message.
 */
export type ResolveRegistryServer = ((name: string) => Promise<RegistryServerSpec | undefined>) & {
  similar?: (name: string) => Promise<string[]>;
};

/** Looks a server up through the seam: 400 without a registry, 404 for an unknown name. */
export async function requireRegistryServer(
  resolve: ResolveRegistryServer | undefined,
  name: string,
): Promise<RegistryServerSpec> {
  if (resolve === undefined) {
    throw new SkepError(
      'invalid_reference',
      `'${name}' is not an image or npx://, uvx://, cmd:// reference, and registry lookup is not available in this build`,
    );
  }
  const entry = await resolve(name);
  if (entry === undefined) {
    const similar = (await resolve.similar?.(name).catch(() => [])) ?? [];
    throw new SkepError('server_not_found', `server '${name}' is not in the registry${didYouMean(similar)}`);
  }
  return entry;
}
