/**
 * The run configuration of a workload: everything needed to start it again, persisted per workload
 * and returned verbatim by export. Field names and nesting follow ToolHive's run configuration as
 * its export returns it (schema `v0.1.0`), including fields such as `allowed_origins` and
 * `session_ttl`, so an export from the reference can be fed to `skep run --from-config`. Secrets
 * appear only as references (`"<name>,target=<ENV_VAR>"`), never as values.
 * `workloads/run-config.ts` fills the omitted fields and validates with it.
 */
import { type Static, Type } from 'typebox';
import { AuditConfigSchema } from './audit.js';
import { EmbeddedAuthServerConfigSchema } from './embedded-auth-server.js';
import { ImageVerificationSchema } from './image-verification.js';
import { GuardrailsConfigSchema } from './guardrails.js';
import { PermissionProfileSchema } from './permission-profile.js';
import { RateLimitConfigSchema } from './rate-limit.js';
import { Opt, Str, StrMap, Strs } from './shorthand.js';
import { TelemetryConfigSchema } from './telemetry.js';
import { ToolAnnotationsSchema, VmcpConfigSchema } from './vmcp.js';

export const RUN_CONFIG_SCHEMA_VERSION = 'v0.1.0';

export const TransportSchema = Type.Union(
  [Type.Literal('stdio'), Type.Literal('sse'), Type.Literal('streamable-http')],
  { description: 'How the server itself speaks MCP.' },
);
export const ProxyModeSchema = Type.Union([Type.Literal('sse'), Type.Literal('streamable-http')], {
  description: 'Which transport the proxy advertises as the workload URL (both are always served).',
});

const ToolOverride = Type.Object({
  name: Opt(Str()),
  description: Opt(Str()),
  // Skep extension (the reference's MCPToolConfig has it; its runner's run configuration does not).
  annotations: Opt(ToolAnnotationsSchema),
});
const HeaderForward = Type.Object({
  add_headers_from_secret: Opt(StrMap()),
  add_plaintext_headers: Opt(StrMap()),
});
// ToolHive's webhook entry; unknown keys are refused here, on create and import, rather
// than at the workload's start (src/dataplane/middleware/webhooks/config.ts checks the values).
const Webhook = Type.Object(
  {
    failure_policy: Opt(Str()),
    hmac_secret_ref: Opt(Str()),
    name: Opt(Str()),
    url: Opt(Str()),
    // Integer nanoseconds (what the reference writes) or a Go duration string ("5s").
    timeout: Opt(Type.Union([Type.Integer(), Str()])),
    tls_config: Opt(
      Type.Object(
        {
          ca_bundle_path: Opt(Str()),
          client_cert_path: Opt(Str()),
          client_key_path: Opt(Str()),
          insecure_skip_verify: Opt(Type.Boolean()),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export const RunConfigSchema = Type.Object(
  {
    schema_version: Str(),
    name: Str(),
    base_name: Opt(Str()),
    container_name: Opt(Str()),
    image: Str(),
    remote_url: Opt(Str()),
    registry_api_url: Opt(Str()),
    registry_url: Opt(Str()),
    registry_server_name: Opt(Str()),
    cmd_args: Strs(),
    transport: TransportSchema,
    proxy_mode: Opt(ProxyModeSchema),
    host: Str(),
    port: Type.Integer({ minimum: 0, maximum: 65535 }),
    target_port: Opt(Type.Integer({ minimum: 0, maximum: 65535 })),
    target_host: Opt(Str()),
    publish: Opt(Strs()),
    allowed_origins: Opt(Strs()),
    endpoint_access: Opt(
      Type.Union([Type.Literal('owner'), Type.Literal('anyone-on-this-machine')], {
        description:
          'Skep extension: who may call the workload through its proxy when it has no inbound ' +
          'authentication of its own. `owner` (default): only callers that present the ' +
          "workload's access token (its URL from the API carries it; client configs Skep writes " +
          'have it). `anyone-on-this-machine`: every local account and process that can connect ' +
          '(an explicit opt-out, shown by `skep list` and the UI).',
      }),
    ),
    group: Str(),
    env_vars: StrMap(),
    env_file_dir: Opt(Str()),
    secrets: Strs(),
    volumes: Strs(),
    container_labels: StrMap(),
    debug: Opt(Type.Boolean()),
    isolate_network: Opt(Type.Boolean()),
    allow_docker_gateway: Opt(Type.Boolean()),
    trust_proxy_headers: Opt(Type.Boolean()),
    strict_protocol_validation: Opt(Type.Boolean()),
    stateless: Opt(Type.Boolean()),
    session_mode: Opt(
      Type.Union([Type.Literal('shared'), Type.Literal('per-session')], {
        description:
          'Skep extension, stdio servers on the process runtime only. `shared` (default): every ' +
          'client session shares one server process. `per-session`: each client session gets its ' +
          'own process (for servers that keep per-client state), stopped when the session ends ' +
          'or idles for 30 minutes; at most 16 at once, further sessions get HTTP 503.',
      }),
    ),
    sandbox: Opt(
      Type.Union([Type.Literal('auto'), Type.Literal('bwrap'), Type.Literal('off')], {
        description:
          'Skep extension, local (process) servers only: override `runtime.sandbox` for this ' +
          'workload. `bwrap`: refuse to run without the sandbox. `off`: run without it even when ' +
          'the permission profile asks for isolation (an explicit opt-out).',
      }),
    ),
    session_ttl: Opt(Str()),
    tools_filter: Opt(Strs()),
    tools_override: Opt(Type.Record(Type.String(), ToolOverride)),
    permission_profile_name_or_path: Opt(Str()),
    permission_profile: PermissionProfileSchema,
    runtime_config: Opt(
      Type.Object({
        additional_packages: Opt(Strs()),
        builder_image: Opt(Str()),
        build_with: Opt(Str()),
        runtime_env: Opt(StrMap()),
      }),
    ),
    header_forward: Opt(HeaderForward),
    ignore_config: Opt(Type.Object({ loadGlobal: Opt(Type.Boolean()), printOverlays: Opt(Type.Boolean()) })),
    mcpserver_generation: Opt(Type.Integer()),
    k8s_pod_template_patch: Opt(Str()),
    endpoint_prefix: Opt(Str()),
    svc_ca_bundle: Opt(Str()),
    jwks_auth_token_file: Opt(Str()),
    authz_config: Opt(Type.Object({ type: Opt(Str()), version: Opt(Str()) }, { additionalProperties: true })),
    authz_config_path: Opt(Str()),
    /** The audit middleware's configuration: its one schema, checked by the runner's validator too. */
    audit_config: Opt(AuditConfigSchema),
    audit_config_path: Opt(Str()),
    aws_sts_config: Opt(
      Type.Object({
        fallback_role_arn: Opt(Str()),
        region: Opt(Str()),
        role_claim: Opt(Str()),
        service: Opt(Str()),
        session_name_claim: Opt(Str()),
        subject_provider_name: Opt(Str()),
        session_duration: Opt(Type.Integer()),
        role_mappings: Opt(
          Type.Array(
            Type.Object({
              claim: Opt(Str()),
              matcher: Opt(Str()),
              priority: Opt(Type.Integer()),
              role_arn: Opt(Str()),
            }),
          ),
        ),
      }),
    ),
    oidc_config: Opt(
      Type.Object({
        allowPrivateIP: Opt(Type.Boolean()),
        insecureAllowHTTP: Opt(Type.Boolean()),
        audience: Opt(Str()),
        authTokenFile: Opt(Str()),
        cacertPath: Opt(Str()),
        clientID: Opt(Str()),
        clientSecret: Opt(Str()),
        introspectionURL: Opt(Str()),
        issuer: Opt(Str()),
        jwksurl: Opt(Str()),
        resourceURL: Opt(Str()),
        scopes: Opt(Strs()),
        /**
         * Skep extension: accept only the Kubernetes service-account tokens of `namespace` (and of
         * the account `name`), e.g. from an MCPOIDCConfig `kubernetesServiceAccount`.
         */
        kubernetesServiceAccount: Opt(
          Type.Object({ namespace: Type.String({ minLength: 1 }), name: Opt(Type.String({ minLength: 1 })) }),
        ),
      }),
    ),
    /** Rate limits at the proxy: their one schema, checked by the runner's validator too. */
    rate_limit_config: Opt(RateLimitConfigSchema),
    rate_limit_namespace: Opt(Str()),
    /**
     * Skep extension: guardrails on what the server answers and on tool arguments (own
     * secrets, credential formats, personal data, prompt-injection phrases; each `off`,
     * `audit`, `redact` or `block`). New workloads get `defaultGuardrailsConfig()`; absent:
     * no guardrails (workloads created before them, configurations from the reference).
     */
    guardrails_config: Opt(GuardrailsConfigSchema),
    /** Skep extension: check the container image's cosign signature before it starts (`warn`/`enforce`). */
    image_verification: Opt(ImageVerificationSchema),
    middleware_configs: Opt(Type.Array(Type.Object({ type: Str(), parameters: Opt(Type.Unknown()) }))),
    additional_middleware_configs: Opt(
      Type.Array(Type.Object({ type: Str(), parameters: Opt(Type.Unknown()) })),
    ),
    validating_webhooks: Opt(Type.Array(Webhook)),
    mutating_webhooks: Opt(Type.Array(Webhook)),
    remote_auth_config: Opt(
      Type.Object({
        authorize_url: Opt(Str()),
        bearer_token: Opt(Str()),
        bearer_token_file: Opt(Str()),
        cached_cimd_client_id: Opt(Str()),
        cached_client_id: Opt(Str()),
        cached_client_secret_ref: Opt(Str()),
        cached_refresh_token_ref: Opt(Str()),
        cached_reg_token_ref: Opt(Str()),
        cached_secret_expiry: Opt(Str()),
        cached_token_expiry: Opt(Str()),
        client_id: Opt(Str()),
        client_secret: Opt(Str()),
        client_secret_file: Opt(Str()),
        issuer: Opt(Str()),
        resource: Opt(Str()),
        scope_param_name: Opt(Str()),
        token_url: Opt(Str()),
        timeout: Opt(Str()),
        callback_port: Opt(Type.Integer()),
        oauth_params: Opt(StrMap()),
        scopes: Opt(Strs()),
        skip_browser: Opt(Type.Boolean()),
        use_pkce: Opt(Type.Boolean()),
        headers: Opt(Type.Array(Type.Record(Type.String(), Type.Unknown()))),
        env_vars: Opt(Type.Array(Type.Record(Type.String(), Type.Unknown()))),
      }),
    ),
    scaling_config: Opt(
      Type.Object({
        backend_replicas: Opt(Type.Integer()),
        session_redis: Opt(
          Type.Object({ address: Opt(Str()), db: Opt(Type.Integer()), key_prefix: Opt(Str()) }),
        ),
      }),
    ),
    /** Telemetry at the proxy (OTLP, Prometheus): its one schema, checked by the runner's validator too. */
    telemetry_config: Opt(TelemetryConfigSchema),
    token_exchange_config: Opt(
      Type.Object({
        audience: Opt(Str()),
        client_id: Opt(Str()),
        client_secret: Opt(Str()),
        external_token_header_name: Opt(Str()),
        header_strategy: Opt(Str()),
        scopes: Opt(Strs()),
        subject_token_type: Opt(Str()),
        token_url: Opt(Str()),
      }),
    ),
    upstream_swap_config: Opt(
      Type.Object({ custom_header_name: Opt(Str()), header_strategy: Opt(Str()), provider_name: Opt(Str()) }),
    ),
    /** The embedded OAuth 2.1 authorization server: its one schema lives in `src/schemas`. */
    embedded_auth_server_config: Opt(EmbeddedAuthServerConfigSchema),
    /**
     * Skep extension: this workload is a virtual MCP server over the other workloads of its
     * group (or `vmcp.groupRef`) instead of running a server; the reference's vMCP config.
     */
    vmcp: Opt(VmcpConfigSchema),
  },
  {
    $id: 'RunConfig',
    additionalProperties: false,
    description: 'The persisted run configuration of a workload.',
  },
);

export type RunConfig = Static<typeof RunConfigSchema>;
export type Transport = Static<typeof TransportSchema>;
export type ProxyMode = Static<typeof ProxyModeSchema>;
