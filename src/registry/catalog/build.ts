/**
 * Small builders that turn a compact description of a catalog entry into a `server.json`
 * object with Skep's extension under `_meta`. They keep the catalog readable and make
 * every entry come out in the same shape.
 */
import {
  type CatalogServer,
  EXTENSION_KEY,
  PUBLISHER_META_KEY,
  SERVER_SCHEMA_URL,
  type ServerExtension,
} from '../../schemas/registry/index.js';
import type { PermissionProfile } from '../../schemas/index.js';

/** The version of a catalog entry (not of the server software, which the image tag tracks). */
const ENTRY_VERSION = '1.0.0';

export interface Env {
  name: string;
  description: string;
  required?: boolean;
  secret?: boolean;
  default?: string;
}

interface Common {
  /** Reverse-DNS name: `<namespace>/<short name>`; short names are unique in the catalog. */
  name: string;
  title: string;
  /** One sentence, at most 100 characters (MCP registry rule). */
  description: string;
  overview?: string;
  repository?: string;
  subfolder?: string;
  website?: string;
  tier: 'Official' | 'Community';
  tools: string[];
  tags: string[];
}

export interface PackageEntry extends Common {
  registryType: 'oci' | 'npm' | 'pypi';
  identifier: string;
  transport?: 'stdio' | 'sse' | 'streamable-http';
  /** For sse / streamable-http packages: the port and path the server listens on inside. */
  endpoint?: string;
  args?: string[];
  env?: Env[];
  permissions?: PermissionProfile;
}

export interface RemoteEntry extends Common {
  url: string;
  transport: 'sse' | 'streamable-http';
  headers?: Env[];
  /** The remote authenticates users with OAuth (discovered from the server at run time). */
  oauth?: boolean;
}

function extension(key: string, ext: ServerExtension): Record<string, unknown> {
  return { [PUBLISHER_META_KEY]: { [EXTENSION_KEY]: { [key]: ext } } };
}

function commonFields(e: Common) {
  return {
    $schema: SERVER_SCHEMA_URL,
    name: e.name,
    title: e.title,
    description: e.description,
    version: ENTRY_VERSION,
    ...(e.website !== undefined ? { websiteUrl: e.website } : {}),
    ...(e.repository !== undefined
      ? {
          repository: {
            url: e.repository,
            source: 'github',
            ...(e.subfolder !== undefined ? { subfolder: e.subfolder } : {}),
          },
        }
      : {}),
  };
}

/** An environment variable or header as `server.json` describes an input. */
function input(v: Env) {
  return {
    name: v.name,
    description: v.description,
    isRequired: v.required ?? false,
    isSecret: v.secret ?? false,
  };
}

function extCommon(e: Common): ServerExtension {
  return {
    status: 'active',
    tier: e.tier,
    tools: e.tools,
    tags: e.tags,
    ...(e.overview !== undefined ? { overview: e.overview } : {}),
  };
}

/** No network at all: the server works on local data only. */
export const NO_NETWORK: PermissionProfile = {
  network: { outbound: { insecure_allow_all: false, allow_host: [], allow_port: [] } },
};

/** Outbound HTTPS to the listed hosts only (a leading dot allows subdomains). */
export function httpsTo(...hosts: string[]): PermissionProfile {
  return { network: { outbound: { insecure_allow_all: false, allow_host: hosts, allow_port: [443] } } };
}

/** Any outbound connection (fetchers and browsers reach arbitrary sites). */
export const ANY_NETWORK: PermissionProfile = { network: { outbound: { insecure_allow_all: true } } };

export function pkg(e: PackageEntry): CatalogServer {
  const transportType = e.transport ?? 'stdio';
  const ext: ServerExtension = {
    ...extCommon(e),
    ...(e.permissions !== undefined ? { permissions: e.permissions } : {}),
  };
  return {
    ...commonFields(e),
    packages: [
      {
        registryType: e.registryType,
        identifier: e.identifier,
        transport: { type: transportType, ...(e.endpoint !== undefined ? { url: e.endpoint } : {}) },
        ...(e.args !== undefined
          ? { packageArguments: e.args.map((value) => ({ type: 'positional', value })) }
          : {}),
        ...(e.env !== undefined
          ? {
              environmentVariables: e.env.map((v) =>
                v.default !== undefined ? { ...input(v), default: v.default } : input(v),
              ),
            }
          : {}),
      },
    ],
    _meta: extension(e.identifier, ext),
  };
}

export function remote(e: RemoteEntry): CatalogServer {
  const ext: ServerExtension = {
    ...extCommon(e),
    ...(e.oauth === true ? { custom_metadata: { authentication: 'oauth' } } : {}),
  };
  return {
    ...commonFields(e),
    remotes: [
      {
        type: e.transport,
        url: e.url,
        ...(e.headers !== undefined
          ? {
              headers: e.headers.map(input),
            }
          : {}),
      },
    ],
    _meta: extension(e.url, ext),
  };
}
