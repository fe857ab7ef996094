/**
 * Wire schemas of the workloads API (TypeBox): the create/update request, the list item,
 * the detail view and the bulk request. Field names follow ToolHive's workload API and
 * its `createRequest`, so existing clients keep working.
 */
import { type Static, Type } from 'typebox';
import { GuardrailsConfigSchema } from '../guardrails.js';
import { PermissionProfileSchema } from '../permission-profile.js';
import { ProxyModeSchema, TransportSchema } from '../run-config.js';
import { ToolAnnotationsSchema, VmcpConfigSchema } from '../vmcp.js';

const Opt = Type.Optional;
const Strs = () => Type.Array(Type.String());
const StrMap = () => Type.Record(Type.String(), Type.String());

export const SecretRefSchema = Type.Object(
  {
    name: Type.String({ description: 'Secret name in the secrets provider.' }),
    target: Type.String({ description: 'Environment variable the server receives it in.' }),
  },
  { title: 'SecretRef', additionalProperties: false },
);

const ToolOverrideSchema = Type.Object(
  {
    name: Opt(Type.String()),
    description: Opt(Type.String()),
    annotations: Opt(ToolAnnotationsSchema),
  },
  { title: 'ToolOverride', additionalProperties: false },
);

export const OidcRequestSchema = Type.Object(
  {
    issuer: Opt(Type.String()),
    audience: Opt(Type.String()),
    jwks_url: Opt(Type.String()),
    introspection_url: Opt(Type.String()),
    client_id: Opt(Type.String()),
    client_secret: Opt(Type.String({ description: 'Ignored (never stored in plain text).' })),
    scopes: Opt(Strs()),
  },
  { title: 'OidcConfig' },
);

export const OAuthConfigSchema = Type.Object(
  {
    issuer: Opt(Type.String()),
    authorize_url: Opt(Type.String()),
    token_url: Opt(Type.String()),
    client_id: Opt(Type.String()),
    client_secret: Opt(SecretRefSchema),
    bearer_token: Opt(SecretRefSchema),
    scopes: Opt(Strs()),
    use_pkce: Opt(Type.Boolean()),
    oauth_params: Opt(StrMap()),
    callback_port: Opt(Type.Integer({ minimum: 0, maximum: 65535 })),
    skip_browser: Opt(Type.Boolean()),
    resource: Opt(Type.String()),
  },
  { title: 'OAuthConfig' },
);

export const HeaderSchema = Type.Object(
  {
    name: Type.String(),
    description: Opt(Type.String()),
    required: Opt(Type.Boolean()),
    default: Opt(Type.String()),
    secret: Opt(Type.Boolean()),
    choices: Opt(Strs()),
  },
  { title: 'Header' },
);

const HeaderForwardSchema = Type.Object(
  {
    add_plaintext_headers: Opt(StrMap()),
    add_headers_from_secret: Opt(StrMap()),
  },
  { title: 'HeaderForward' },
);
const RuntimeConfigSchema = Type.Object(
  {
    builder_image: Opt(Type.String()),
    additional_packages: Opt(Strs()),
    build_with: Opt(Type.String()),
    runtime_env: Opt(StrMap()),
  },
  { title: 'RuntimeConfig' },
);

/** Every field a create or update may set (update: all optional, omitted ones keep their value). */
const settableFields = {
  image: Opt(
    Type.String({
      description: '`npx://<package>`, `uvx://<package>`, `cmd://<executable>`, or a container image.',
    }),
  ),
  url: Opt(Type.String({ description: 'Remote MCP server URL (no local server is started).' })),
  host: Opt(
    Type.String({
      description:
        'Proxy bind address (default 127.0.0.1). Anything but a loopback address (wildcards ' +
        'included) needs inbound authentication (`oidc` or `embedded_auth_server_config`).',
    }),
  ),
  allowed_origins: Opt(
    Type.Array(Type.String(), {
      description:
        'Skep extension (a reference run-configuration field): browser origins ' +
        '(`scheme://host[:port]`, exact) accepted besides the proxy’s own. An empty list removes them.',
    }),
  ),
  cmd_arguments: Opt(Strs()),
  target_port: Opt(
    Type.Integer({
      minimum: 0,
      maximum: 65535,
      description: 'Port of an sse/streamable-http server (0: allocate).',
    }),
  ),
  proxy_port: Opt(
    Type.Integer({
      minimum: 0,
      maximum: 65535,
      description: 'Proxy port (0: allocate on create, keep on update).',
    }),
  ),
  env_vars: Opt(StrMap()),
  secrets: Opt(Type.Array(SecretRefSchema)),
  volumes: Opt(
    Type.Array(Type.String(), {
      description:
        'Container mounts `host:container[:ro]`; only for a server that runs in a container (400 `unsupported_field` otherwise).',
    }),
  ),
  transport: Opt(TransportSchema),
  authz_config: Opt(
    Type.String({
      description:
        'Path to an authorization config file (JSON or YAML), read and validated now and enforced by the proxy; an empty string removes it.',
    }),
  ),
  oidc: Opt(OidcRequestSchema),
  permission_profile: Opt(PermissionProfileSchema),
  proxy_mode: Opt(ProxyModeSchema),
  network_isolation: Opt(Type.Union([Type.Boolean(), Type.Null()])),
  trust_proxy_headers: Opt(Type.Boolean()),
  allow_docker_gateway: Opt(
    Type.Boolean({
      description: 'Not supported yet: only `false` is accepted (400 `unsupported_field` otherwise).',
    }),
  ),
  tools: Opt(Type.Array(Type.String(), { description: 'Only these tools are exposed.' })),
  tools_override: Opt(Type.Record(Type.String(), ToolOverrideSchema)),
  group: Opt(Type.String()),
  oauth_config: Opt(OAuthConfigSchema),
  headers: Opt(Type.Array(HeaderSchema)),
  header_forward: Opt(HeaderForwardSchema),
  runtime_config: Opt(
    Type.Object(RuntimeConfigSchema.properties, {
      description: 'Not supported yet: only empty values are accepted (400 `unsupported_field` otherwise).',
    }),
  ),
  sandbox: Opt(
    Type.Union([Type.Literal('auto'), Type.Literal('bwrap'), Type.Literal('off')], {
      description:
        'Skep extension, local servers: override `runtime.sandbox` (`off`: run without isolation even when the permission profile asks for it).',
    }),
  ),
  endpoint_access: Opt(
    Type.Union([Type.Literal('owner'), Type.Literal('anyone-on-this-machine')], {
      description:
        "Skep extension: `owner` (default) — the proxy answers only callers with the workload's access token (the `url` carries it); `anyone-on-this-machine` — every local account and process that can connect may call its tools.",
    }),
  ),
  guardrails_config: Opt(
    Type.Object(GuardrailsConfigSchema.properties, {
      additionalProperties: false,
      description:
        'Skep extension (docs/guardrails.md): what the guardrails stage looks for in results and tool arguments, and what it does. Omitted at create: the default (own secrets and known credential formats redacted in results); `{"enabled": false}` turns it off. On update it replaces the stored value.',
    }),
  ),
  autostart: Opt(
    Type.Boolean({
      description:
        'Skep extension: resume the workload when `skep serve` starts and its runner is gone (after a reboot); `false` keeps it stopped until it is started (`skep run --no-autostart`). Default `true` at create. A workload setting, not part of the run configuration (an export does not carry it); an update that sets only this restarts nothing.',
    }),
  ),
  vmcp: Opt(
    Type.Object(VmcpConfigSchema.properties, {
      additionalProperties: false,
      description:
        'Skep extension: a virtual MCP server (one endpoint over the other workloads of the group, or of `groupRef`), configured with the reference vMCP config (camelCase keys). No image or url.',
    }),
  ),
};

export const CreateWorkloadSchema = Type.Object(
  {
    name: Opt(Type.String({ description: 'Workload name; derived from the image when omitted.' })),
    registry: Opt(Type.String({ description: 'Registry name (only `default`); with `server`.' })),
    server: Opt(Type.String({ description: 'Server name in the registry; with `registry`.' })),
    ...settableFields,
  },
  {
    $id: 'CreateWorkloadRequest',
    // Nothing silent: a field this request does not know (a run-configuration field such as
    // `token_exchange_config`, a typo) is a 400 naming it, never accepted and dropped.
    additionalProperties: false,
  },
);

export const UpdateWorkloadSchema = Type.Object(settableFields, {
  $id: 'UpdateWorkloadRequest',
  additionalProperties: false,
  description: 'Merge update: fields that are present replace the stored value; omitted fields keep theirs.',
});

export type CreateWorkloadRequest = Static<typeof CreateWorkloadSchema>;
export type UpdateWorkloadRequest = Static<typeof UpdateWorkloadSchema>;

export const WorkloadStatusSchema = Type.String({
  description: '`starting`, `running`, `stopping`, `stopped`, `error`, `unhealthy`, `removing` or `unknown`.',
});

/**
 * Skep extensions shown in both the list and the detail: how the server runs isolated
 * (docs/sandbox.md), who may call it, its guardrails, and whether it is resumed at start.
 */
const extensionFields = {
  sandboxed: Type.Boolean({
    description: 'Skep extension: the server runs isolated (bubblewrap sandbox or container).',
  }),
  sandbox: Type.String({
    description:
      'Skep extension: how the server is isolated, as enforced: `bwrap` (the bubblewrap sandbox), `container`, `none` (a local process without a sandbox; `sandbox_reason` says why) or `n/a` (a remote or virtual MCP server: Skep runs no server process for it).',
  }),
  network: Type.String({
    description:
      "Skep extension: the network the server gets, as enforced (unlike `network_isolation`, which is the setting asked for): `none` (no network at all), `filtered` (outbound only to the permission profile's allow-list, through a filtering proxy), `host` (this machine's network namespace, unfiltered: an unsandboxed process, or a sandbox whose profile allows all outbound traffic or whose isolation is off), `open` (a container on the engine's default network, all outbound traffic allowed) or `n/a` (a remote or virtual MCP server).",
  }),
  endpoint_access: Type.String({
    description:
      "Skep extension: who may call the workload's tools: `owner` (holders of its access token, which `url` carries), `inbound-auth` (its own OIDC or embedded authorization server decides) or `anyone-on-this-machine` (opened by its owner).",
  }),
  guardrails: Type.String({
    description:
      'Skep extension: what the guardrails stage does, in one line: `off`, or each detector that acts with its action for results (and `/arguments` when those are checked too), e.g. `ownSecrets:redact credentials:redact` (the default). `guardrails_config` in the export has the full configuration.',
  }),
  autostart: Type.Boolean({
    description:
      'Skep extension: whether `skep serve` resumes the workload when it starts and the runner is gone (after a reboot); `false`: it stays stopped until started (`skep run --no-autostart`).',
  }),
};

export const WorkloadSummarySchema = Type.Object(
  {
    name: Type.String(),
    package: Type.String(),
    group: Type.String(),
    labels: StrMap(),
    port: Type.Integer(),
    proxy_mode: Type.String(),
    remote: Type.Boolean(),
    url: Type.String({
      description:
        "The proxy endpoint clients use; it carries the workload's access token (`?skep_token=`) when the workload answers only its owner (`endpoint_access`).",
    }),
    tools: Type.Array(Type.String(), {
      description:
        "The tool names the workload's clients see (after the tools filter and overrides), as its runner last reported them; before a report, or with inbound authentication of its own, the configured tools filter.",
    }),
    transport_type: Type.String(),
    status: WorkloadStatusSchema,
    status_context: Type.String(),
    created_at: Type.String(),
    started_at: Type.String(),
    ...extensionFields,
  },
  { $id: 'WorkloadSummary' },
);
export type WorkloadSummary = Static<typeof WorkloadSummarySchema>;

export const WorkloadDetailSchema = Type.Object(
  {
    name: Type.String(),
    image: Type.String(),
    host: Type.String(),
    group: Type.String(),
    url: Type.String(),
    transport: Type.String(),
    proxy_mode: Type.String(),
    authz_config: Type.String(),
    cmd_arguments: Strs(),
    tools: Strs(),
    volumes: Strs(),
    env_vars: StrMap(),
    headers: Type.Array(HeaderSchema),
    header_forward: HeaderForwardSchema,
    network_isolation: Type.Boolean({
      description:
        'Whether the run configuration asks for network isolation (`isolate_network`); what is enforced is in `network`.',
    }),
    trust_proxy_headers: Type.Boolean(),
    proxy_port: Type.Integer(),
    target_port: Type.Integer(),
    oauth_config: OAuthConfigSchema,
    oidc: OidcRequestSchema,
    permission_profile: PermissionProfileSchema,
    runtime_config: RuntimeConfigSchema,
    secrets: Type.Array(SecretRefSchema),
    tools_override: Type.Record(Type.String(), ToolOverrideSchema),
    status: WorkloadStatusSchema,
    status_context: Type.String(),
    ...extensionFields,
    sandbox_reason: Type.String({
      description: 'Skep extension: why the server is not sandboxed ("" when it is).',
    }),
    network_detail: Type.String({
      description: 'Skep extension: `network` in words: what the server can reach, and why.',
    }),
  },
  { $id: 'WorkloadDetail' },
);
export type WorkloadDetail = Static<typeof WorkloadDetailSchema>;

export const BulkRequestSchema = Type.Object(
  {
    names: Opt(Type.Array(Type.String(), { description: 'Workload names (every one must exist).' })),
    group: Opt(Type.String({ description: 'Every workload of this group (any status).' })),
  },
  { $id: 'BulkWorkloadsRequest', description: 'Exactly one of `names` or `group`.' },
);
export type BulkRequest = Static<typeof BulkRequestSchema>;

const StringChangeSchema = Type.Object({ from: Type.String(), to: Type.String() });
const EnvVarInfoSchema = Type.Object(
  {
    name: Type.String(),
    description: Opt(Type.String()),
    required: Opt(Type.Boolean()),
    secret: Opt(Type.Boolean()),
    default: Opt(Type.String({ description: 'Left out for secret variables.' })),
  },
  { title: 'EnvVarInfo' },
);

export const UpgradeCheckResultSchema = Type.Object(
  {
    workload_name: Type.String(),
    status: Type.Union(
      ['up-to-date', 'upgrade-available', 'not-registry-sourced', 'server-not-found', 'unknown'].map((s) =>
        Type.Literal(s),
      ),
    ),
    current_image: Type.String({ description: 'The image (or remote URL) the workload runs.' }),
    candidate_image: Opt(Type.String({ description: 'What the registry entry names now.' })),
    registry_server: Opt(Type.String({ description: 'The registry entry the workload came from.' })),
    reason: Opt(Type.String()),
    config_drift: Opt(
      Type.Object({ transport: Opt(StringChangeSchema), permission_profile: Opt(StringChangeSchema) }),
    ),
    env_var_drift: Opt(
      Type.Object({ added: Type.Array(EnvVarInfoSchema), removed: Type.Array(EnvVarInfoSchema) }),
    ),
  },
  {
    title: 'UpgradeCheckResult',
    description: 'A registry upgrade check: metadata only, never secret values.',
  },
);

export const UpgradeRequestSchema = Type.Object(
  {
    env: Opt(StrMap()),
    secrets: Opt(
      Type.Array(Type.String({ description: 'A secret reference `<name>,target=<ENV>`; never a value.' })),
    ),
  },
  { $id: 'UpgradeRequest', additionalProperties: false },
);
