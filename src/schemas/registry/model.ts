/**
 * The registry's one internal model and its schemas.
 *
 * Every server is held as an MCP registry `server.json` object (registry API v0.1, schema
 * 2025-12-11, camelCase keys). What MCP's format has no field for — the image's permission profile,
 * the tool list, tier, OAuth settings of a remote — sits in the publisher-provided `_meta` map
 * under the `io.github.stacklok` key, keyed by image reference or remote URL, so registry files
 * written for ToolHive load unchanged (ToolHive's catalog server and its `_meta`). The native
 * shapes (ToolHive's `ImageServer`, `RemoteServer` and registry content) are views computed from it
 * in `src/registry/native-view.ts`; nothing is stored twice.
 */
import { type Static, Type } from 'typebox';
// The files themselves, not the schemas index: the web UI type-checks this module with the
// browser's types, and the index reaches Node-only code (src/control/ui/types.ts).
import { PermissionProfileSchema } from '../permission-profile.js';
import { Opt, Str, Strs } from '../shorthand.js';

// ---------------------------------------------------------------------------------------
// Catalog shape (server.json)
// ---------------------------------------------------------------------------------------

const inputFields = {
  description: Opt(Str()),
  isRequired: Opt(Type.Boolean()),
  isSecret: Opt(Type.Boolean()),
  format: Opt(Str()),
  default: Opt(Str()),
  placeholder: Opt(Str()),
  value: Opt(Str()),
  choices: Opt(Strs()),
};

const NestedInput = Type.Object(inputFields);

/** A variable definition (the format's `Input`). */
export const Input = Type.Object({ ...inputFields, variables: Opt(Type.Record(Type.String(), NestedInput)) });
/** An input that has a name: environment variables and headers. */
export const NamedInput = Type.Object({
  name: Type.String({ minLength: 1 }),
  ...inputFields,
  variables: Opt(Type.Record(Type.String(), NestedInput)),
});
export const Argument = Type.Object({
  name: Opt(Str()),
  ...inputFields,
  variables: Opt(Type.Record(Type.String(), NestedInput)),
  type: Opt(Str()),
  isRepeated: Opt(Type.Boolean()),
  valueHint: Opt(Str()),
});

export const Transport = Type.Object({
  type: Type.String({ minLength: 1, description: '`stdio`, `sse` or `streamable-http`.' }),
  url: Opt(Str()),
  headers: Opt(Type.Array(NamedInput)),
  variables: Opt(Type.Record(Type.String(), Input)),
});

export const Package = Type.Object({
  registryType: Type.String({ minLength: 1, description: '`oci`, `npm`, `pypi` or `mcpb`.' }),
  registryBaseUrl: Opt(Str()),
  identifier: Type.String({ minLength: 1 }),
  version: Opt(Str()),
  fileSha256: Opt(Str()),
  runtimeHint: Opt(Str()),
  transport: Transport,
  runtimeArguments: Opt(Type.Array(Argument)),
  packageArguments: Opt(Type.Array(Argument)),
  environmentVariables: Opt(Type.Array(NamedInput)),
});

export const Remote = Type.Object({
  type: Type.String({ minLength: 1 }),
  url: Type.String({ minLength: 1 }),
  headers: Opt(Type.Array(NamedInput)),
  variables: Opt(Type.Record(Type.String(), Input)),
});

export const CatalogServer = Type.Object(
  {
    $schema: Opt(Str()),
    name: Type.String({
      minLength: 3,
      maxLength: 200,
      pattern: '^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$',
      description: 'Reverse-DNS namespace, one slash, server name.',
    }),
    title: Opt(Str()),
    description: Type.String({ minLength: 1 }),
    version: Type.String({ minLength: 1 }),
    websiteUrl: Opt(Str()),
    icons: Opt(
      Type.Array(
        Type.Object({ src: Opt(Str()), mimeType: Opt(Str()), sizes: Opt(Strs()), theme: Opt(Str()) }),
      ),
    ),
    repository: Opt(
      Type.Object({ url: Opt(Str()), source: Opt(Str()), id: Opt(Str()), subfolder: Opt(Str()) }),
    ),
    packages: Opt(Type.Array(Package)),
    remotes: Opt(Type.Array(Remote)),
    _meta: Opt(Type.Record(Type.String(), Type.Unknown())),
  },
  { description: 'A server in the MCP registry `server.json` shape.' },
);
export type CatalogServer = Static<typeof CatalogServer>;
export type NamedInput = Static<typeof NamedInput>;
export type Argument = Static<typeof Argument>;

export const Provenance = Type.Object({
  attestation: Opt(Type.Object({ predicate: Opt(Type.Unknown()), predicate_type: Opt(Str()) })),
  cert_issuer: Opt(Str()),
  /** Skep extension: the publisher's cosign public key (SPKI PEM) for key-based image verification. */
  public_key: Opt(Str()),
  repository_ref: Opt(Str()),
  repository_uri: Opt(Str()),
  runner_environment: Opt(Str()),
  signer_identity: Opt(Str()),
  sigstore_url: Opt(Str()),
});

/**
 * Who signs a skill, as a registry entry states it: ToolHive's skill entries carry the image
 * servers' `provenance` object at the top level of the entry, and so does Skep. Skep adds
 * `signer_identity_regexp` (a CI identity names the tag it ran for, so releases need a pattern).
 * What install enforces, and which fields it refuses, is in `src/skills/registry-policy.ts`.
 */
export const SkillProvenance = Type.Object({
  ...Provenance.properties,
  signer_identity_regexp: Opt(Str()),
});
export type SkillProvenance = Static<typeof SkillProvenance>;

export const CatalogSkill = Type.Object(
  {
    namespace: Type.String({ minLength: 3, maxLength: 128 }),
    name: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z0-9]([a-z0-9-]*[a-z0-9])?$' }),
    description: Type.String({ minLength: 1, maxLength: 1024 }),
    version: Type.String({ minLength: 1 }),
    status: Opt(Str()),
    title: Opt(Str()),
    license: Opt(Str()),
    compatibility: Opt(Str()),
    allowedTools: Opt(Strs()),
    repository: Opt(Type.Object({ url: Opt(Str()), type: Opt(Str()) })),
    icons: Opt(
      Type.Array(Type.Object({ src: Opt(Str()), size: Opt(Str()), type: Opt(Str()), label: Opt(Str()) })),
    ),
    packages: Opt(
      Type.Array(
        Type.Object({
          registryType: Str(),
          identifier: Opt(Str()),
          digest: Opt(Str()),
          mediaType: Opt(Str()),
          url: Opt(Str()),
          ref: Opt(Str()),
          commit: Opt(Str()),
          subfolder: Opt(Str()),
        }),
      ),
    ),
    provenance: Opt(SkillProvenance),
    metadata: Opt(Type.Record(Type.String(), Type.Unknown())),
    _meta: Opt(Type.Record(Type.String(), Type.Unknown())),
  },
  { description: 'A skill in the registry catalog.' },
);
export type CatalogSkill = Static<typeof CatalogSkill>;

/**
 * A group of servers that are installed together (Skep's extension of the upstream format,
 * `data.groups`): members are named by their full reverse-DNS name and must be servers of the
 * same document. The native view shows each group with its members' `servers` and
 * `remote_servers` (ToolHive's group shape), which is what ToolHive Studio's group install reads.
 */
export const RegistryGroup = Type.Object(
  {
    // The group name becomes a Skep group on install: the same rule as `POST /api/v1beta/groups`.
    name: Type.String({ minLength: 1, maxLength: 100, pattern: '^[a-z0-9_-]+( [a-z0-9_-]+)*$' }),
    description: Type.String({ minLength: 1 }),
    servers: Type.Array(Type.String({ minLength: 1 }), {
      minItems: 1,
      description: 'Full names of servers of `data.servers`.',
    }),
  },
  { description: 'Servers installed together (Skep extension).' },
);
export type RegistryGroup = Static<typeof RegistryGroup>;

/** A registry file or URL body: the upstream registry wrapper (ToolHive `upstream-registry.schema.json`). */
export const RegistryDocument = Type.Object({
  $schema: Opt(Str()),
  version: Type.String({ minLength: 1 }),
  meta: Opt(Type.Object({ last_updated: Opt(Str()) })),
  data: Type.Object({
    servers: Type.Array(CatalogServer),
    skills: Opt(Type.Array(CatalogSkill)),
    groups: Opt(Type.Array(RegistryGroup)),
  }),
});
export type RegistryDocument = Static<typeof RegistryDocument>;

// ---------------------------------------------------------------------------------------
// The publisher-provided extension (Skep's image / remote metadata)
// ---------------------------------------------------------------------------------------

export const PUBLISHER_META_KEY = 'io.modelcontextprotocol.registry/publisher-provided';
/** The publisher key ToolHive registries use; Skep writes and reads the same one for compatibility. */
export const EXTENSION_KEY = 'io.github.stacklok';
export const SERVER_SCHEMA_URL =
  'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json';

export const EnvVar = Type.Object({
  name: Str(),
  description: Opt(Str()),
  required: Opt(Type.Boolean()),
  secret: Opt(Type.Boolean()),
  default: Opt(Str()),
});
export type EnvVar = Static<typeof EnvVar>;

/** A remote's header: what an environment variable has, and the values it may take. */
export const Header = Type.Object({ ...EnvVar.properties, choices: Opt(Strs()) });
export type Header = Static<typeof Header>;

export const Metadata = Type.Object({
  stars: Opt(Type.Integer()),
  last_updated: Opt(Str()),
  kubernetes: Opt(
    Type.Object({
      image: Opt(Str()),
      kind: Opt(Str()),
      name: Opt(Str()),
      namespace: Opt(Str()),
      transport: Opt(Str()),
      uid: Opt(Str()),
    }),
  ),
});

export const OAuthConfig = Type.Object({
  authorize_url: Opt(Str()),
  callback_port: Opt(Type.Integer()),
  client_id: Opt(Str()),
  issuer: Opt(Str()),
  oauth_params: Opt(Type.Record(Type.String(), Type.String())),
  resource: Opt(Str()),
  scopes: Opt(Strs()),
  token_url: Opt(Str()),
  use_pkce: Opt(Type.Boolean()),
});

/** What the extension may hold; unknown keys are kept but ignored. */
export const ServerExtension = Type.Object({
  status: Opt(Str()),
  tier: Opt(Str()),
  tools: Opt(Strs()),
  tags: Opt(Strs()),
  overview: Opt(Str()),
  metadata: Opt(Metadata),
  custom_metadata: Opt(Type.Record(Type.String(), Type.Unknown())),
  stateless: Opt(Type.Boolean()),
  // image servers
  permissions: Opt(PermissionProfileSchema),
  args: Opt(Strs()),
  provenance: Opt(Provenance),
  docker_tags: Opt(Strs()),
  proxy_port: Opt(Type.Integer()),
  target_port: Opt(Type.Integer()),
  // remote servers
  oauth_config: Opt(OAuthConfig),
  env_vars: Opt(Type.Array(EnvVar)),
});
export type ServerExtension = Static<typeof ServerExtension>;

// ---------------------------------------------------------------------------------------
// Native shape (ToolHive's "ImageServer", "RemoteServer", registry content)
// ---------------------------------------------------------------------------------------

const baseNative = {
  name: Str(),
  title: Opt(Str()),
  description: Str(),
  overview: Opt(Str()),
  tier: Str(),
  status: Str(),
  transport: Str(),
  stateless: Opt(Type.Boolean()),
  tools: Strs(),
  tags: Opt(Strs()),
  metadata: Opt(Metadata),
  repository_url: Opt(Str()),
  custom_metadata: Opt(Type.Record(Type.String(), Type.Unknown())),
  proxy_port: Opt(Type.Integer()),
  env_vars: Opt(Type.Array(EnvVar)),
};

export const ImageServer = Type.Object(
  {
    ...baseNative,
    image: Str(),
    docker_tags: Opt(Strs()),
    args: Opt(Strs()),
    target_port: Opt(Type.Integer()),
    permissions: Opt(PermissionProfileSchema),
    provenance: Opt(Provenance),
  },
  { description: 'A server that runs from an image or a package (`npx://`, `uvx://`).' },
);
export type ImageServer = Static<typeof ImageServer>;

export const RemoteServer = Type.Object(
  {
    ...baseNative,
    url: Str(),
    headers: Opt(Type.Array(Header)),
    oauth_config: Opt(OAuthConfig),
  },
  { description: 'A server reached at a URL.' },
);
export type RemoteServer = Static<typeof RemoteServer>;

/** A group in the native shape (ToolHive's). */
export interface NativeGroup {
  name: string;
  description: string;
  servers: Record<string, ImageServer>;
  remote_servers: Record<string, RemoteServer>;
}

/** The native registry content (ToolHive's). */
export interface NativeRegistry {
  version: string;
  last_updated: string;
  servers: Record<string, ImageServer>;
  remote_servers: Record<string, RemoteServer>;
  groups: NativeGroup[];
}

/** Where the default registry reads from (`type` in the API). */
export type SourceType = 'default' | 'file' | 'url' | 'api';

/** The native list entry (ToolHive's registry list entry). */
export interface RegistryInfo {
  name: string;
  type: SourceType;
  source: string;
  version: string;
  last_updated: string;
  server_count: number;
  auth_status: string;
  auth_type: string;
  /** The registry login's public settings, when one is configured (never a secret). */
  auth_config?: { issuer: string; client_id: string; audience?: string; scopes: string[] };
}

/** A server looked up by name, with both views; what `skep run <registry-name>` consumes. */
export type FoundServer =
  | { name: string; is_remote: false; server: ImageServer; catalog: CatalogServer }
  | { name: string; is_remote: true; remote_server: RemoteServer; catalog: CatalogServer };
