/**
 * The one definition of the embedded authorization server's configuration as the run configuration
 * stores it (`embedded_auth_server_config`, snake_case, as in ToolHive). The workload run
 * configuration embeds this schema, the authorization server parses its input with it, and the
 * operator's mapping from the CRD (`MCPExternalAuthConfig` `spec.embeddedAuthServer`, camelCase)
 * produces this type.
 *
 * The schema holds the structure: types, required fields, enumerations and the upstream name
 * pattern. What a schema cannot say — cross-field rules, URL checks, duration bounds, and
 * anything that reads a file or a secret — is checked when the server resolves it
 * (`src/authserver/config.ts`). `issuer`, `allowed_audiences` and `upstreams` may be absent
 * here: the runner fills the first two from the workload's URL, and resolving requires them.
 * Unknown fields are kept (a reference run configuration may carry more).
 */
import { type Static, Type } from 'typebox';
import { PATTERNS } from './extauth/schema.js';
import { Bool, Opt, Str, StrMap, Strs } from './shorthand.js';

const UserInfoSchema = Type.Object({
  endpoint_url: Str(),
  /** GET or POST, in any case (checked when resolved). */
  http_method: Opt(Str()),
  additional_headers: Opt(StrMap()),
  field_mapping: Opt(
    Type.Object({ subject_fields: Opt(Strs()), name_fields: Opt(Strs()), email_fields: Opt(Strs()) }),
  ),
});

/**
 * What the embedded server uses at an upstream of either kind, as its OAuth client there: its
 * secret (a file or an env var), the redirect back to it, the scopes and extra authorization
 * parameters it asks for, and whether plain HTTP is allowed.
 */
const upstreamClientFields = {
  client_secret_file: Opt(Str()),
  client_secret_env_var: Opt(Str()),
  redirect_uri: Opt(Str()),
  scopes: Opt(Strs()),
  additional_authorization_params: Opt(StrMap()),
  insecure_allow_http: Opt(Bool()),
};

const OidcUpstreamSchema = Type.Object({
  issuer_url: Str(),
  client_id: Type.String({ minLength: 1 }),
  ...upstreamClientFields,
  userinfo_override: Opt(UserInfoSchema),
  subject_claim: Opt(Str()),
});

const DcrSchema = Type.Object({
  discovery_url: Opt(Str()),
  registration_endpoint: Opt(Str()),
  initial_access_token_file: Opt(Str()),
  initial_access_token_env_var: Opt(Str()),
  software_id: Opt(Str()),
  software_statement: Opt(Str()),
});

const TokenResponseMappingSchema = Type.Object({
  access_token_path: Type.String({ minLength: 1 }),
  expires_in_path: Opt(Str()),
  refresh_token_path: Opt(Str()),
  scope_path: Opt(Str()),
});

const OAuth2UpstreamSchema = Type.Object({
  authorization_endpoint: Str(),
  token_endpoint: Str(),
  client_id: Opt(Str()),
  ...upstreamClientFields,
  dcr_config: Opt(DcrSchema),
  token_response_mapping: Opt(TokenResponseMappingSchema),
  userinfo: Opt(UserInfoSchema),
});

const UpstreamSchema = Type.Object({
  name: Type.String({ maxLength: 63, pattern: PATTERNS.providerName }),
  type: Type.Enum(['oidc', 'oauth2'], { type: 'string' }),
  oidc_config: Opt(OidcUpstreamSchema),
  oauth2_config: Opt(OAuth2UpstreamSchema),
});

const RedisTlsSchema = Type.Object({ ca_cert_file: Opt(Str()), insecure_skip_verify: Opt(Bool()) });

const RedisSchema = Type.Object({
  addr: Opt(Str()),
  cluster_mode: Opt(Bool()),
  sentinel_config: Opt(
    Type.Object({
      master_name: Type.String({ minLength: 1 }),
      sentinel_addrs: Opt(Strs()),
      db: Opt(Type.Integer()),
    }),
  ),
  auth_type: Opt(Type.Enum(['aclUser'], { type: 'string' })),
  acl_user_config: Opt(Type.Object({ username_env_var: Opt(Str()), password_env_var: Opt(Str()) })),
  key_prefix: Opt(Str()),
  dial_timeout: Opt(Str()),
  read_timeout: Opt(Str()),
  write_timeout: Opt(Str()),
  tls: Opt(RedisTlsSchema),
  sentinel_tls: Opt(RedisTlsSchema),
});

export const EmbeddedAuthServerConfigSchema = Type.Object(
  {
    schema_version: Opt(Str()),
    issuer: Opt(Str()),
    authorization_endpoint_base_url: Opt(Str()),
    signing_key_config: Opt(
      Type.Object({ key_dir: Opt(Str()), signing_key_file: Opt(Str()), fallback_key_files: Opt(Strs()) }),
    ),
    hmac_secret_files: Opt(Strs()),
    token_lifespans: Opt(
      Type.Object({
        access_token_lifespan: Opt(Str()),
        auth_code_lifespan: Opt(Str()),
        refresh_token_lifespan: Opt(Str()),
      }),
    ),
    upstreams: Opt(Type.Array(UpstreamSchema)),
    scopes_supported: Opt(Strs()),
    allowed_audiences: Opt(Strs()),
    storage: Opt(
      Type.Object({
        type: Opt(Type.Enum(['memory', 'redis'], { type: 'string' })),
        redis_config: Opt(RedisSchema),
      }),
    ),
    insecure_allow_http: Opt(Bool()),
  },
  { description: 'The embedded OAuth 2.1 authorization server mounted on the workload proxy.' },
);

export type EmbeddedAuthServerConfig = Static<typeof EmbeddedAuthServerConfigSchema>;
export type UpstreamConfig = Static<typeof UpstreamSchema>;
export type OidcUpstreamConfig = Static<typeof OidcUpstreamSchema>;
export type OAuth2UpstreamConfig = Static<typeof OAuth2UpstreamSchema>;
export type UserInfoConfig = Static<typeof UserInfoSchema>;
export type RedisConfig = Static<typeof RedisSchema>;
export type RedisTlsConfig = Static<typeof RedisTlsSchema>;
export type TokenResponseMapping = Static<typeof TokenResponseMappingSchema>;
