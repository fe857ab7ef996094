/**
 * The one definition of the MCPExternalAuthConfig resource, as ToolHive's CRD has it. Every field,
 * default, enum, pattern and bound of that CRD lives here; the cross-field rules are attached as
 * `x-kubernetes-validations` CEL rules so that the same definition yields the TypeScript types
 * (`Static`), the CRD YAML (`src/control/operator/crd.ts`) and the validator (`src/control/operator/validate.ts`,
 * which evaluates those CEL rules with cel-js). Rules that need code (CEL matchers compile, issuer
 * host, forbidden parameters, unique names, HMAC secret length) are in the validator, each naming
 * the field it checks.
 */
import { Type } from 'typebox';
import { type CelRule, enumOf, rules, str, stringList, stringMap } from '../k8s-builders.js';

export const EXTAUTH_GROUP = 'skep.dev';
export const EXTAUTH_VERSION = 'v1beta1';
export const EXTAUTH_API_VERSION = `${EXTAUTH_GROUP}/${EXTAUTH_VERSION}`;
export const EXTAUTH_KIND = 'MCPExternalAuthConfig';
export const EXTAUTH_PLURAL = 'mcpexternalauthconfigs';

/** The block of a `type` (`oidcConfig` for `oidc`) is set if and only if `type` names it. */
const typeBlockRule = (type: string, block: string): CelRule => ({
  rule: `self.type == '${type}' ? has(self.${block}) : !has(self.${block})`,
  message: `${block} must be set if and only if type is '${type}'`,
  fieldPath: `.${block}`,
});

// Patterns (ToolHive's CRD; Go RE2 and JavaScript `u` regexes agree on all of them).
export const PATTERNS = {
  /** awsSts.region: two lowercase letters, hyphen+letters groups, hyphen and digits. */
  region: '^[a-z]{2}(-[a-z]+)+-[0-9]+$',
  /** awsSts ARN: three partitions, 12-digit account, `role/` path. */
  roleArn: '^arn:(aws|aws-cn|aws-us-gov):iam::[0-9]{12}:role/[A-Za-z0-9_+=,.@/-]+$',
  /** upstreamProviders[].name: lowercase alphanumerics and hyphens, alphanumeric ends. */
  providerName: '^[a-z0-9]([a-z0-9-]*[a-z0-9])?$',
  /** issuer: http(s) URL without query, fragment or trailing slash (RFC 8414). */
  issuer: '^https?://[^\\s?#]+[^/\\s?#]$',
  /** oidcConfig.issuerUrl: HTTPS URL. */
  httpsUrl: '^https://[^\\s]+$',
  /** The CRD's "URL starting with http:// or https://". */
  httpUrl: '^https?://[^\\s]+$',
  /** Go durations: decimal number + unit groups. */
  duration: '^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$',
  /** tokenExchange.subjectTokenType: short forms, full URNs, or empty. */
  subjectTokenType:
    '^(access_token|id_token|jwt|urn:ietf:params:oauth:token-type:(access_token|id_token|jwt))?$',
  /** redis addr / sentinelAddrs: host:port (IPv6 hosts in brackets). */
  hostPort: '^(\\[[0-9A-Fa-f:.]+\\]|[^\\s:\\[\\]/]+):[0-9]{1,5}$',
  /** metav1.Condition type: CamelCase, optional DNS-style prefix and slash. */
  conditionType:
    '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
  /** metav1.Condition reason: CamelCase identifier. */
  conditionReason: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
} as const;

export const AUTH_TYPES = [
  'tokenExchange',
  'headerInjection',
  'bearerToken',
  'unauthenticated',
  'embeddedAuthServer',
  'awsSts',
  'upstreamInject',
] as const;

/** The types that carry a block of the same name (`unauthenticated` has none). */
export const BLOCK_TYPES = AUTH_TYPES.filter((t) => t !== 'unauthenticated');

export const SecretRefSchema = Type.Object(
  {
    name: str('Name of the Secret in the same namespace.', { minLength: 1 }),
    key: str('Key within the Secret.', { minLength: 1 }),
  },
  { description: 'Reference to one key of a Kubernetes Secret.' },
);

// ---- awsSts ---------------------------------------------------------------------------
export const RoleMappingSchema = Type.Object(
  {
    roleArn: str('IAM role ARN selected when this mapping matches.', { pattern: PATTERNS.roleArn }),
    claim: Type.Optional(
      str('Value looked up in the claim named by roleClaim (compiled to a CEL membership test).', {
        minLength: 1,
      }),
    ),
    matcher: Type.Optional(str('CEL expression over the `claims` map of all JWT claims.', { minLength: 1 })),
    priority: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 0,
        description: 'Lower values are evaluated first; omitted means lowest priority (stable order).',
      }),
    ),
  },
  {
    description: 'Claim-based role selection rule.',
    ...rules({
      rule: 'has(self.claim) != has(self.matcher)',
      message: 'exactly one of claim or matcher must be set',
    }),
  },
);

export const AwsStsSchema = Type.Object(
  {
    region: str('Region of the STS endpoint and service.', { minLength: 1, pattern: PATTERNS.region }),
    fallbackRoleArn: Type.Optional(
      str('Role ARN assumed when no role mapping matches.', { pattern: PATTERNS.roleArn }),
    ),
    roleClaim: Type.Optional(str('JWT claim evaluated for role mapping.', { default: 'groups' })),
    roleMappings: Type.Optional(
      Type.Array(RoleMappingSchema, { description: 'Claim-based role selection rules.' }),
    ),
    service: Type.Optional(str('Service name used when signing.', { default: 'aws-mcp' })),
    sessionDuration: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 900,
        maximum: 43200,
        default: 3600,
        description: 'Session duration in seconds.',
      }),
    ),
    sessionNameClaim: Type.Optional(str('JWT claim used as the role session name.', { default: 'sub' })),
    subjectProviderName: Type.Optional(
      str('Upstream provider whose access token is the web identity token (VirtualMCPServer only).'),
    ),
  },
  {
    description: 'Request signing with a cloud role assumed through STS.',
    ...rules({
      rule: 'has(self.fallbackRoleArn) || (has(self.roleMappings) && size(self.roleMappings) > 0)',
      message: 'at least one of fallbackRoleArn or roleMappings must be configured',
    }),
  },
);

// ---- simple blocks -------------------------------------------------------------------
export const BearerTokenSchema = Type.Object(
  { tokenSecretRef: SecretRefSchema },
  { description: 'Sends the bearer token held in a Secret.' },
);

export const HeaderInjectionSchema = Type.Object(
  {
    headerName: str('Name of the header to inject.', { minLength: 1 }),
    valueSecretRef: SecretRefSchema,
  },
  { description: 'Adds a header whose value comes from a Secret.' },
);

export const TokenExchangeSchema = Type.Object(
  {
    audience: str('Target audience of the exchanged token.'),
    tokenUrl: str('Token endpoint for the RFC 8693 exchange.'),
    clientId: Type.Optional(str('Client id (optional for some flows).')),
    clientSecretRef: Type.Optional(SecretRefSchema),
    externalTokenHeaderName: Type.Optional(
      str('When set, the exchanged token goes into this header instead of Authorization.'),
    ),
    scopes: Type.Optional(stringList('Scopes requested.')),
    subjectProviderName: Type.Optional(str('Upstream provider whose token is the subject token.')),
    subjectTokenType: Type.Optional(
      str('Subject token type: access_token (default), id_token, jwt, or the full URN.', {
        pattern: PATTERNS.subjectTokenType,
      }),
    ),
  },
  { description: 'RFC 8693 token exchange.' },
);

export const UpstreamInjectSchema = Type.Object(
  {
    providerName: str('Upstream provider whose access token is injected as a bearer token.', {
      minLength: 1,
    }),
  },
  { description: 'Injects an upstream provider access token.' },
);

// ---- embeddedAuthServer --------------------------------------------------------------
const TlsSchema = Type.Object(
  {
    caCertSecretRef: Type.Optional(SecretRefSchema),
    insecureSkipVerify: Type.Optional(Type.Boolean({ description: 'Skip server certificate verification.' })),
  },
  { description: 'Presence enables TLS; system roots are used when caCertSecretRef is omitted.' },
);

export const SentinelConfigSchema = Type.Object(
  {
    masterName: str('Name of the Redis master set.'),
    db: Type.Optional(Type.Integer({ format: 'int32', default: 0, description: 'Redis database number.' })),
    sentinelAddrs: Type.Optional(stringList('Sentinel host:port addresses.', { pattern: PATTERNS.hostPort })),
    sentinelService: Type.Optional(
      Type.Object(
        {
          name: str('Service name of the sentinels.'),
          namespace: Type.Optional(str('Namespace of the Service; defaults to the resource namespace.')),
          port: Type.Optional(
            Type.Integer({ format: 'int32', default: 26379, description: 'Sentinel port.' }),
          ),
        },
        { description: 'Kubernetes Service fronting the sentinels.' },
      ),
    ),
  },
  {
    description: 'Redis Sentinel settings.',
    ...rules({
      rule: 'has(self.sentinelAddrs) != has(self.sentinelService)',
      message: 'exactly one of sentinelAddrs or sentinelService must be set',
    }),
  },
);

export const RedisSchema = Type.Object(
  {
    aclUserConfig: Type.Object(
      {
        passwordSecretRef: SecretRefSchema,
        usernameSecretRef: Type.Optional(SecretRefSchema),
      },
      { description: 'ACL user; password-only authentication when usernameSecretRef is omitted.' },
    ),
    addr: Type.Optional(str('host:port for standalone and cluster modes.', { pattern: PATTERNS.hostPort })),
    clusterMode: Type.Optional(Type.Boolean({ description: 'Enables the cluster protocol; requires addr.' })),
    sentinelConfig: Type.Optional(SentinelConfigSchema),
    sentinelTls: Type.Optional(TlsSchema),
    tls: Type.Optional(TlsSchema),
    dialTimeout: Type.Optional(
      str('Dial timeout (duration).', { pattern: PATTERNS.duration, default: '5s' }),
    ),
    readTimeout: Type.Optional(
      str('Read timeout (duration).', { pattern: PATTERNS.duration, default: '3s' }),
    ),
    writeTimeout: Type.Optional(
      str('Write timeout (duration).', { pattern: PATTERNS.duration, default: '3s' }),
    ),
  },
  {
    description: 'Redis storage backend.',
    ...rules(
      {
        rule: '(has(self.addr) && size(self.addr) > 0) != has(self.sentinelConfig)',
        message: 'exactly one of addr or sentinelConfig must be set',
      },
      {
        rule: '!has(self.clusterMode) || !self.clusterMode || (has(self.addr) && size(self.addr) > 0)',
        message: 'clusterMode requires addr to be set',
        fieldPath: '.clusterMode',
      },
    ),
  },
);

export const StorageSchema = Type.Object(
  {
    type: Type.Optional(enumOf(['memory', 'redis'] as const, 'Storage backend.', { default: 'memory' })),
    redis: Type.Optional(RedisSchema),
  },
  {
    description: 'Storage backend; in-memory when omitted.',
    ...rules({
      rule: "has(self.type) && self.type == 'redis' ? has(self.redis) : !has(self.redis)",
      message: "redis must be set if and only if type is 'redis'",
      fieldPath: '.redis',
    }),
  },
);

export const TokenLifespansSchema = Type.Object(
  {
    accessTokenLifespan: Type.Optional(
      str('Access token lifespan; 1h when empty.', { pattern: PATTERNS.duration }),
    ),
    authCodeLifespan: Type.Optional(
      str('Authorization code lifespan; 10m when empty.', { pattern: PATTERNS.duration }),
    ),
    refreshTokenLifespan: Type.Optional(
      str('Refresh token lifespan; 168h when empty.', { pattern: PATTERNS.duration }),
    ),
  },
  { description: 'Token validity.' },
);

export const UserInfoSchema = Type.Object(
  {
    endpointUrl: str('UserInfo endpoint.', { pattern: PATTERNS.httpUrl }),
    httpMethod: Type.Optional(enumOf(['GET', 'POST'] as const, 'HTTP method.', { default: 'GET' })),
    additionalHeaders: Type.Optional(stringMap('Extra request headers.')),
    fieldMapping: Type.Optional(
      Type.Object(
        {
          emailFields: Type.Optional(stringList('Email claim names, first non-empty wins (default email).')),
          nameFields: Type.Optional(stringList('Name claim names, first non-empty wins (default name).')),
          subjectFields: Type.Optional(
            stringList('Subject claim names, first non-empty wins (default sub).'),
          ),
        },
        { description: 'Ordered field-name lists.' },
      ),
    ),
  },
  { description: 'UserInfo endpoint settings.' },
);

export const DcrConfigSchema = Type.Object(
  {
    discoveryUrl: Type.Optional(
      str('RFC 8414 metadata URL to discover the registration endpoint.', { pattern: PATTERNS.issuer }),
    ),
    registrationEndpoint: Type.Optional(str('RFC 7591 registration endpoint.', { pattern: PATTERNS.issuer })),
    initialAccessTokenRef: Type.Optional(SecretRefSchema),
    softwareId: Type.Optional(str('RFC 7591 software_id.')),
    softwareStatement: Type.Optional(str('RFC 7591 software_statement.')),
  },
  {
    description: 'RFC 7591 dynamic client registration at runtime.',
    ...rules({
      rule: 'has(self.discoveryUrl) != has(self.registrationEndpoint)',
      message: 'exactly one of discoveryUrl or registrationEndpoint must be set',
    }),
  },
);

export const OAuth2ConfigSchema = Type.Object(
  {
    authorizationEndpoint: str('Authorization endpoint.', { pattern: PATTERNS.httpUrl }),
    tokenEndpoint: str('Token endpoint.', { pattern: PATTERNS.httpUrl }),
    clientId: Type.Optional(str('Client id; mutually exclusive with dcrConfig.')),
    clientSecretRef: Type.Optional(SecretRefSchema),
    dcrConfig: Type.Optional(DcrConfigSchema),
    redirectUri: Type.Optional(str('Redirect URI; default {resourceUrl}/oauth/callback.')),
    scopes: Type.Optional(stringList('Scopes.')),
    additionalAuthorizationParams: Type.Optional(stringMap('Extra authorization query parameters.')),
    tokenResponseMapping: Type.Optional(
      Type.Object(
        {
          accessTokenPath: str('Dot-notation path of the access token.', { minLength: 1 }),
          expiresInPath: Type.Optional(str('Path of expires_in.', { default: 'expires_in' })),
          refreshTokenPath: Type.Optional(str('Path of the refresh token.', { default: 'refresh_token' })),
          scopePath: Type.Optional(str('Path of the scope.', { default: 'scope' })),
        },
        { description: 'Mapping for non-standard token responses.' },
      ),
    ),
    userInfo: Type.Optional(UserInfoSchema),
  },
  {
    description: 'Plain OAuth 2.0 upstream.',
    ...rules({
      rule: '(has(self.clientId) && size(self.clientId) > 0) != has(self.dcrConfig)',
      message: 'exactly one of clientId or dcrConfig must be set',
      fieldPath: '.clientId',
    }),
  },
);

export const OidcConfigSchema = Type.Object(
  {
    clientId: str('Client id.'),
    issuerUrl: str('HTTPS issuer URL used for discovery.', { pattern: PATTERNS.httpsUrl }),
    clientSecretRef: Type.Optional(SecretRefSchema),
    redirectUri: Type.Optional(str('Redirect URI; default {resourceUrl}/oauth/callback.')),
    scopes: Type.Optional(stringList('Scopes; default openid, offline_access.')),
    additionalAuthorizationParams: Type.Optional(stringMap('Extra authorization query parameters.')),
    userInfoOverride: Type.Optional(UserInfoSchema),
  },
  { description: 'OpenID Connect upstream.' },
);

export const UpstreamProviderSchema = Type.Object(
  {
    name: str('Unique provider identifier.', { minLength: 1, maxLength: 63, pattern: PATTERNS.providerName }),
    type: enumOf(['oidc', 'oauth2'] as const, 'Provider protocol.'),
    oauth2Config: Type.Optional(OAuth2ConfigSchema),
    oidcConfig: Type.Optional(OidcConfigSchema),
  },
  {
    description: 'Upstream identity provider the embedded server delegates login to.',
    ...rules(typeBlockRule('oauth2', 'oauth2Config'), typeBlockRule('oidc', 'oidcConfig')),
  },
);

export const EmbeddedAuthServerSchema = Type.Object(
  {
    issuer: str('Value of the iss claim.', { pattern: PATTERNS.issuer }),
    upstreamProviders: Type.Array(UpstreamProviderSchema, {
      minItems: 1,
      description: 'Upstream providers; MCPServer and MCPRemoteProxy support one.',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
    }),
    authorizationEndpointBaseUrl: Type.Optional(
      str('Replaces the base of the advertised authorization endpoint.', { pattern: PATTERNS.issuer }),
    ),
    hmacSecretRefs: Type.Optional(
      Type.Array(SecretRefSchema, { description: 'HMAC secrets; the first is current (>= 32 bytes).' }),
    ),
    signingKeySecretRefs: Type.Optional(
      Type.Array(SecretRefSchema, { description: 'JWT signing keys; the first signs, the rest verify.' }),
    ),
    storage: Type.Optional(StorageSchema),
    tokenLifespans: Type.Optional(TokenLifespansSchema),
  },
  { description: 'An OAuth authorization server run in front of the tool server.' },
);

// ---- spec, status, resource ----------------------------------------------------------
const typeBlockRules = BLOCK_TYPES.map((t) => typeBlockRule(t, t));

export const ExtAuthSpecSchema = Type.Object(
  {
    type: enumOf(AUTH_TYPES, 'Authentication method towards external services.'),
    awsSts: Type.Optional(AwsStsSchema),
    bearerToken: Type.Optional(BearerTokenSchema),
    embeddedAuthServer: Type.Optional(EmbeddedAuthServerSchema),
    headerInjection: Type.Optional(HeaderInjectionSchema),
    tokenExchange: Type.Optional(TokenExchangeSchema),
    upstreamInject: Type.Optional(UpstreamInjectSchema),
  },
  { description: 'Outgoing authentication settings.', ...rules(...typeBlockRules) },
);

export const ConditionSchema = Type.Object({
  type: str('Condition type.', { maxLength: 316, pattern: PATTERNS.conditionType }),
  status: enumOf(['True', 'False', 'Unknown'] as const, 'Condition status.'),
  reason: str('Programmatic identifier.', {
    minLength: 1,
    maxLength: 1024,
    pattern: PATTERNS.conditionReason,
  }),
  message: str('Human-readable detail; may be empty.', { maxLength: 32768 }),
  lastTransitionTime: str('Time of the last change of status.', { format: 'date-time' }),
  observedGeneration: Type.Optional(Type.Integer({ format: 'int64', minimum: 0 })),
});

export const REFERENCING_KINDS = ['MCPServer', 'VirtualMCPServer', 'MCPRemoteProxy'] as const;

export const ReferencingWorkloadSchema = Type.Object({
  kind: enumOf(REFERENCING_KINDS, 'Kind of the referencing workload.'),
  name: str('Name of the referencing workload.', { minLength: 1 }),
});

export const ExtAuthStatusSchema = Type.Object(
  {
    conditions: Type.Optional(
      Type.Array(ConditionSchema, {
        description: 'Latest observations.',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['type'],
      }),
    ),
    configHash: Type.Optional(str('Hash of the current configuration, for change detection.')),
    observedGeneration: Type.Optional(
      Type.Integer({ format: 'int64', description: 'Latest generation observed.' }),
    ),
    referencingWorkloads: Type.Optional(
      Type.Array(ReferencingWorkloadSchema, { description: 'Workloads that reference this resource.' }),
    ),
  },
  { description: 'Observed state.' },
);

export const ObjectMetaSchema = Type.Object({
  name: str('Resource name.', { minLength: 1 }),
  namespace: Type.Optional(str('Namespace.')),
  uid: Type.Optional(Type.String()),
  resourceVersion: Type.Optional(Type.String()),
  generation: Type.Optional(Type.Integer()),
  creationTimestamp: Type.Optional(Type.String()),
  deletionTimestamp: Type.Optional(Type.String()),
  finalizers: Type.Optional(Type.Array(Type.String())),
  labels: Type.Optional(Type.Record(Type.String(), Type.String())),
  annotations: Type.Optional(Type.Record(Type.String(), Type.String())),
});

export const ExtAuthConfigSchema = Type.Object({
  apiVersion: Type.Literal(EXTAUTH_API_VERSION),
  kind: Type.Literal(EXTAUTH_KIND),
  metadata: ObjectMetaSchema,
  spec: ExtAuthSpecSchema,
  status: Type.Optional(ExtAuthStatusSchema),
});
