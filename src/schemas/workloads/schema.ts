/**
 * The one definition of the Kubernetes workload kinds in `skep.dev/v1beta1`: MCPServer,
 * MCPRemoteProxy, MCPServerEntry, VirtualMCPServer and MCPGroup. Field names follow ToolHive's
 * operator CRDs (`toolhive.stacklok.dev`). Each TypeBox schema yields the TypeScript type, the CRD
 * (`src/control/operator/crd.ts`) and the validator (`src/control/operator/workload-validate.ts`, which also
 * evaluates the CEL rules attached here).
 *
 * Skep extensions (documented in docs/kubernetes.md): `MCPServer.spec.command` (a stdio server's
 * command line: the runner starts it inside the server's container, and Kubernetes cannot
 * read an image's entrypoint without pulling it), and `sessionStorage.passwordRef` reaching
 * the runner as `SKEP_SESSION_REDIS_PASSWORD`.
 */
import { type TSchema, Type } from 'typebox';
import { ConditionSchema, EXTAUTH_KIND, PATTERNS, SecretRefSchema } from '../extauth/schema.js';
import { type CelRule, enumOf, rules, str, stringMap } from '../k8s-builders.js';
import { AGE_COLUMN, column, conditionColumn, defineKind } from '../kind.js';
import { Opt } from '../shorthand.js';
import { VmcpConfigSchema } from '../vmcp.js';
import { MCPOIDCConfigRefSchema, MCPTelemetryConfigRefSchema } from '../operator/shared-configs.js';
import { LocalObjectRefSchema, ResourceMetadataOverridesSchema } from '../operator/registry-embedding.js';

/** An object whose fields Kubernetes keeps as written (raw PodTemplateSpec, vMCP config). */
const rawObject = (description: string) =>
  Type.Object({}, { description, additionalProperties: true, 'x-kubernetes-preserve-unknown-fields': true });

const port = (description: string, def?: number) =>
  Type.Integer({
    format: 'int32',
    minimum: 1,
    maximum: 65535,
    description,
    ...(def === undefined ? {} : { default: def }),
  });

/** DNS-1123 label: what a resource name must be for the objects derived from it. */
export const NAME_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';

export const LocalRefSchema = Type.Object(
  { name: str('Name of the resource in the same namespace.', { minLength: 1 }) },
  { description: 'Reference to a resource in the same namespace.' },
);

export const AuthServerRefSchema = Type.Object(
  {
    kind: Opt(enumOf([EXTAUTH_KIND] as const, 'Kind of the referenced resource.', { default: EXTAUTH_KIND })),
    name: str('Name of the MCPExternalAuthConfig (type embeddedAuthServer).', { minLength: 1 }),
  },
  { description: 'The embedded authorization server for incoming requests.' },
);

const QuantityMap = Type.Object({
  cpu: Opt(str('CPU quantity, e.g. 100m.', { pattern: '^[0-9]+(\\.[0-9]+)?m?$' })),
  memory: Opt(
    str('Memory quantity, e.g. 128Mi.', { pattern: '^[0-9]+(\\.[0-9]+)?([EPTGMK]i?|[eE][0-9]+)?$' }),
  ),
});

export const ResourcesSchema = Type.Object(
  { limits: Opt(QuantityMap), requests: Opt(QuantityMap) },
  { description: 'Resources of the Skep runner container.' },
);

export const EnvVarSchema = Type.Object({
  name: str('Variable name.', { minLength: 1, pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }),
  value: str('Value.'),
});

export const ServerSecretSchema = Type.Object({
  name: str('Secret name.', { minLength: 1 }),
  key: str('Key within the Secret.', { minLength: 1 }),
  targetEnvName: Opt(
    str('Environment variable of the server (default: the key).', { pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }),
  ),
});

export const PermissionProfileRefSchema = Type.Object(
  {
    type: enumOf(['builtin', 'configmap'] as const, 'Where the profile comes from.'),
    name: str('builtin: none or network; configmap: the ConfigMap name.', { minLength: 1 }),
    key: Opt(str('Key within the ConfigMap (configmap only).')),
  },
  {
    description: 'The permission profile of the server.',
    ...rules(
      {
        rule: "self.type != 'builtin' || self.name in ['none', 'network']",
        message: 'builtin profiles are none and network',
        fieldPath: '.name',
      },
      {
        rule: "self.type != 'configmap' || has(self.key)",
        message: 'a configmap profile needs key',
        fieldPath: '.key',
      },
    ),
  },
);

export const OidcConfigSchema = Type.Object(
  {
    issuer: str('Issuer URL of the tokens.', { pattern: PATTERNS.httpUrl }),
    audience: Opt(str('Required audience.')),
    jwksUrl: Opt(str('JWKS URL (default: discovered from the issuer).', { pattern: PATTERNS.httpUrl })),
    introspectionUrl: Opt(str('Token introspection URL.', { pattern: PATTERNS.httpUrl })),
    clientId: Opt(str('Client id for introspection.')),
    resourceUrl: Opt(str('Protected resource URL advertised to clients.')),
    scopes: Opt(Type.Array(Type.String(), { description: 'Scopes advertised to clients.' })),
  },
  { description: 'Incoming authentication: requests must carry a token from this issuer.' },
);

export const AuthzConfigSchema = Type.Object(
  {
    type: Opt(
      enumOf(
        ['configMap', 'inline'] as const,
        'Where the Cedar configuration comes from (configMap or inline).',
      ),
    ),
    configMap: Opt(
      Type.Object(
        {
          name: str('ConfigMap name.', { minLength: 1 }),
          key: Opt(
            str('Key holding the authorization configuration (JSON or YAML).', { default: 'authz.json' }),
          ),
        },
        { description: 'A ConfigMap in the same namespace (type configMap).' },
      ),
    ),
    inline: Opt(
      Type.Object(
        {
          policies: Type.Array(Type.String({ minLength: 1 }), {
            minItems: 1,
            description: 'Cedar policies (permit/forbid statements).',
            'x-kubernetes-list-type': 'atomic',
          }),
          entitiesJson: Opt(str('Cedar entities as a JSON array.', { default: '[]' })),
          primaryUpstreamProvider: Opt(
            str(
              'Upstream provider whose token claims Cedar evaluates (not used on MCPServer/MCPRemoteProxy).',
              {
                minLength: 1,
                maxLength: 63,
                pattern: '^[a-z0-9]([a-z0-9-]*[a-z0-9])?$',
              },
            ),
          ),
        },
        { description: 'Cedar policies given here (type inline).' },
      ),
    ),
    groupClaimName: Opt(str('JWT claim holding the groups.', { maxLength: 253 })),
    roleClaimName: Opt(str('JWT claim holding the roles.', { maxLength: 253 })),
    groupEntityType: Opt(
      str('Cedar entity type of groups and roles (default THVGroup).', {
        maxLength: 63,
        pattern: '^[A-Za-z_][A-Za-z0-9_]*$',
      }),
    ),
    policies: Opt(
      Type.Array(Type.String({ minLength: 1 }), {
        minItems: 1,
        description: 'Skep shorthand of type inline: Cedar policies given directly.',
      }),
    ),
    entitiesJson: Opt(str('Skep shorthand of type inline: Cedar entities as a JSON array.')),
  },
  {
    description: 'Cedar authorization of MCP requests.',
    ...rules(
      {
        rule: 'has(self.type) != has(self.policies)',
        message: 'set type (inline or configMap) or the policies shorthand, not both and not neither',
        fieldPath: '.type',
      },
      {
        rule: "!has(self.type) || (self.type == 'configMap' ? has(self.configMap) : !has(self.configMap))",
        message: "configMap must be set when type is 'configMap', and must not be set otherwise",
        fieldPath: '.configMap',
      },
      {
        rule: "!has(self.type) || (self.type == 'inline' ? has(self.inline) : !has(self.inline))",
        message: "inline must be set when type is 'inline', and must not be set otherwise",
        fieldPath: '.inline',
      },
      {
        rule: 'has(self.policies) || !has(self.entitiesJson)',
        message: 'entitiesJson goes with policies (or inside inline)',
        fieldPath: '.entitiesJson',
      },
    ),
  },
);

export const AuditSchema = Type.Object(
  { enabled: Type.Boolean({ default: false, description: 'Write audit events to the runner log.' }) },
  { description: 'Audit logging.' },
);

export const TelemetrySchema = Type.Object(
  {
    endpoint: Opt(str('OTLP/HTTP endpoint (host:port or URL).')),
    serviceName: Opt(str('Service name of the exported telemetry.')),
    insecure: Opt(Type.Boolean({ description: 'Plain HTTP to the endpoint.' })),
    tracingEnabled: Opt(Type.Boolean()),
    metricsEnabled: Opt(Type.Boolean()),
    samplingRate: Opt(str('Sampling rate between 0 and 1.', { pattern: '^(0(\\.[0-9]+)?|1(\\.0+)?)$' })),
    prometheusMetricsPath: Opt(Type.Boolean({ description: 'Serve /metrics on the proxy port.' })),
  },
  { description: 'OpenTelemetry and Prometheus.' },
);

export const SessionStorageSchema = Type.Object(
  {
    provider: enumOf(['memory', 'redis'] as const, 'Where sessions live.', { default: 'memory' }),
    address: Opt(str('Redis host:port.', { pattern: PATTERNS.hostPort })),
    db: Opt(Type.Integer({ format: 'int32', minimum: 0, description: 'Redis database.' })),
    keyPrefix: Opt(str('Prefix of the session keys.')),
    passwordRef: Opt(SecretRefSchema),
  },
  {
    description: 'Session storage shared by the replicas.',
    ...rules({
      rule: "self.provider != 'redis' || has(self.address)",
      message: 'redis session storage needs address',
      fieldPath: '.address',
    }),
  },
);

export const HeaderForwardSchema = Type.Object(
  {
    addPlaintextHeaders: Opt(stringMap('Headers added to every request to the remote server.')),
    addHeadersFromSecret: Opt(
      Type.Array(
        Type.Object({
          headerName: str('Header name.', { minLength: 1, pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$" }),
          valueSecretRef: SecretRefSchema,
        }),
        { description: 'Headers whose values come from Secrets.' },
      ),
    ),
  },
  { description: 'Headers added to the requests to the remote server.' },
);

const bucket = (description: string) =>
  Type.Object(
    {
      maxTokens: Type.Integer({ format: 'int32', minimum: 1, description: 'Bucket size (burst).' }),
      refillPeriod: str('Go duration in which the bucket refills completely, e.g. 1m.', {
        pattern: '^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$',
      }),
    },
    { description },
  );

export const RateLimitingSchema = Type.Object(
  {
    shared: Opt(bucket('One bucket for every caller.')),
    perUser: Opt(bucket('One bucket per authenticated user.')),
    tools: Opt(
      Type.Array(
        Type.Object(
          {
            name: str('Tool name.', { minLength: 1 }),
            shared: Opt(bucket('One bucket for every caller of this tool.')),
            perUser: Opt(bucket('One bucket per user of this tool.')),
          },
          {
            ...rules({
              rule: 'has(self.shared) || has(self.perUser)',
              message: 'at least one of shared or perUser must be configured',
            }),
          },
        ),
        { description: 'Per-tool limits.' },
      ),
    ),
  },
  {
    description: 'Token-bucket rate limits of MCP requests (needs redis session storage).',
    ...rules({
      rule: 'has(self.shared) || has(self.perUser) || (has(self.tools) && size(self.tools) > 0)',
      message: 'at least one of shared, perUser, or tools must be configured',
    }),
  },
);

export const ResourceOverridesSchema = Type.Object(
  {
    proxyDeployment: Opt(
      Type.Object(
        {
          annotations: Opt(stringMap('Annotations to add or override on the Deployment.')),
          labels: Opt(stringMap('Labels to add or override on the Deployment.')),
          podTemplateMetadataOverrides: Opt(ResourceMetadataOverridesSchema),
          env: Opt(
            Type.Array(EnvVarSchema, {
              description: 'Environment of the Skep runner (not of the server).',
              'x-kubernetes-list-type': 'map',
              'x-kubernetes-list-map-keys': ['name'],
            }),
          ),
          imagePullSecrets: Opt(
            Type.Array(LocalObjectRefSchema, {
              description: 'Pull secrets of the pod and its ServiceAccount.',
              'x-kubernetes-list-type': 'atomic',
            }),
          ),
        },
        { description: 'The Deployment.' },
      ),
    ),
    proxyService: Opt(ResourceMetadataOverridesSchema),
  },
  { description: 'Labels, annotations, runner env and pull secrets of the created objects.' },
);

const SESSION_AFFINITY = enumOf(['ClientIP', 'None'] as const, 'Service session affinity.', {
  default: 'ClientIP',
});
const replicas = (description: string) => Type.Integer({ format: 'int32', minimum: 0, description });

/** The workload fields MCPServer and MCPRemoteProxy share. */
const proxyFields = {
  proxyPort: port('Port of the Skep proxy (the Service port).', 8080),
  oidcConfig: Opt(OidcConfigSchema),
  authzConfig: Opt(AuthzConfigSchema),
  audit: Opt(AuditSchema),
  telemetry: Opt(TelemetrySchema),
  externalAuthConfigRef: Opt(LocalRefSchema),
  authServerRef: Opt(AuthServerRefSchema),
  groupRef: Opt(LocalRefSchema),
  resources: Opt(ResourcesSchema),
  serviceAccount: Opt(str('An existing ServiceAccount for the pod (default: one is created).')),
  podTemplateSpec: Opt(rawObject('Merged into the generated pod template (containers by name).')),
  trustProxyHeaders: Opt(Type.Boolean({ description: 'Trust X-Forwarded-* headers.' })),
  sessionAffinity: Opt(SESSION_AFFINITY),
  replicas: Opt(replicas('Proxy replicas (default 1).')),
  sessionStorage: Opt(SessionStorageSchema),
  oidcConfigRef: Opt(MCPOIDCConfigRefSchema),
  authzConfigRef: Opt(LocalRefSchema),
  toolConfigRef: Opt(LocalRefSchema),
  telemetryConfigRef: Opt(MCPTelemetryConfigRefSchema),
  endpointPrefix: Opt(str('Path prefix of the SSE endpoint URLs (an ingress that strips a prefix).')),
  resourceOverrides: Opt(ResourceOverridesSchema),
};

/** Rules every proxy workload (MCPServer, MCPRemoteProxy) has. */
const proxyRules: CelRule[] = [
  {
    rule: '!(has(self.authzConfig) && has(self.authzConfigRef))',
    message:
      'authzConfig and authzConfigRef are mutually exclusive; use authzConfigRef to reference a shared MCPAuthzConfig',
  },
  {
    rule: '!(has(self.oidcConfig) && has(self.oidcConfigRef))',
    message: 'oidcConfig and oidcConfigRef are mutually exclusive',
  },
  {
    rule: '!(has(self.telemetry) && has(self.telemetryConfigRef))',
    message: 'telemetry and telemetryConfigRef are mutually exclusive',
  },
];

const redisReplicasRule: CelRule = {
  rule: "!has(self.replicas) || self.replicas <= 1 || (has(self.sessionStorage) && self.sessionStorage.provider == 'redis')",
  message: 'more than one replica needs sessionStorage provider redis (sessions must be shared)',
  fieldPath: '.replicas',
};

export const MCPServerSpecSchema = Type.Object(
  {
    image: str('Image of the MCP server.', { minLength: 1 }),
    transport: enumOf(['stdio', 'streamable-http', 'sse'] as const, 'How the server speaks MCP.', {
      default: 'stdio',
    }),
    proxyMode: Opt(
      enumOf(['streamable-http', 'sse'] as const, 'Transport advertised in status.url (stdio only).', {
        default: 'streamable-http',
      }),
    ),
    mcpPort: Opt(port('Port the server listens on (HTTP transports; default 8081).')),
    command: Opt(
      Type.Array(Type.String({ minLength: 1 }), {
        minItems: 1,
        description:
          "stdio: the server command in its image (the runner starts it; default: the image's entrypoint and cmd, read from its registry). Skep extension.",
      }),
    ),
    args: Opt(Type.Array(Type.String(), { description: 'Arguments of the server.' })),
    env: Opt(Type.Array(EnvVarSchema, { description: 'Environment of the server.' })),
    secrets: Opt(Type.Array(ServerSecretSchema, { description: 'Secret keys given to the server as env.' })),
    permissionProfile: Opt(PermissionProfileRefSchema),
    backendReplicas: Opt(replicas('Server replicas (HTTP transports; each pod runs one).')),
    volumes: Opt(
      Type.Array(
        Type.Object({
          name: str('Volume name.', { minLength: 1 }),
          hostPath: str('Path on the node.', { minLength: 1 }),
          mountPath: str('Path in the server container.', { minLength: 1 }),
          readOnly: Opt(Type.Boolean({ default: false, description: 'Mount read-only.' })),
        }),
        {
          description: 'hostPath volumes mounted in the server container.',
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['name'],
        },
      ),
    ),
    webhookConfigRef: Opt(LocalRefSchema),
    rateLimiting: Opt(RateLimitingSchema),
    ...proxyFields,
  },
  {
    description: 'A containerized MCP server behind the Skep proxy.',
    ...rules(
      {
        rule: "self.transport != 'stdio' || !has(self.mcpPort)",
        message: 'mcpPort applies to streamable-http and sse servers only',
        fieldPath: '.mcpPort',
      },
      {
        rule: "self.transport != 'stdio' || !has(self.replicas) || self.replicas <= 1",
        message: 'a stdio server is one process: replicas must be at most 1',
        fieldPath: '.replicas',
      },
      {
        rule: "self.transport != 'stdio' || !has(self.backendReplicas) || self.backendReplicas <= 1",
        message: 'a stdio server is one process: backendReplicas must be at most 1',
        fieldPath: '.backendReplicas',
      },
      redisReplicasRule,
      ...proxyRules,
      {
        rule: "!has(self.rateLimiting) || (has(self.sessionStorage) && self.sessionStorage.provider == 'redis')",
        message: "rateLimiting requires sessionStorage with provider 'redis'",
        fieldPath: '.rateLimiting',
      },
      {
        rule: '!(has(self.rateLimiting) && has(self.rateLimiting.perUser)) || has(self.oidcConfigRef) || has(self.oidcConfig) || has(self.externalAuthConfigRef)',
        message: 'rateLimiting.perUser requires authentication (oidcConfigRef or externalAuthConfigRef)',
        fieldPath: '.rateLimiting.perUser',
      },
      {
        rule: '!has(self.rateLimiting) || !has(self.rateLimiting.tools) || self.rateLimiting.tools.all(t, !has(t.perUser)) || has(self.oidcConfigRef) || has(self.oidcConfig) || has(self.externalAuthConfigRef)',
        message:
          'per-tool perUser rate limiting requires authentication (oidcConfigRef or externalAuthConfigRef)',
        fieldPath: '.rateLimiting.tools',
      },
    ),
  },
);

const PHASES = ['Pending', 'Ready', 'Failed', 'Terminating', 'Stopped'] as const;

const workloadStatus = (phases: readonly string[], extra: Record<string, TSchema> = {}) =>
  Type.Object(
    {
      phase: Opt(enumOf(phases, 'Lifecycle phase.')),
      message: Opt(str('Detail of the phase.')),
      url: Opt(str('In-cluster URL of the MCP endpoint.')),
      readyReplicas: Opt(Type.Integer({ format: 'int32' })),
      observedGeneration: Opt(Type.Integer({ format: 'int64' })),
      conditions: Opt(
        Type.Array(ConditionSchema, {
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['type'],
        }),
      ),
      externalAuthConfigHash: Opt(str('configHash of the referenced MCPExternalAuthConfig.')),
      authServerConfigHash: Opt(str('configHash of the authServerRef MCPExternalAuthConfig.')),
      toolConfigHash: Opt(str('configHash of the referenced MCPToolConfig.')),
      oidcConfigHash: Opt(str('configHash of the referenced MCPOIDCConfig.')),
      authzConfigHash: Opt(str('configHash of the referenced MCPAuthzConfig.')),
      telemetryConfigHash: Opt(str('configHash of the referenced MCPTelemetryConfig.')),
      ...extra,
    },
    { description: 'Observed state.' },
  );

export const MCPServerStatusSchema = workloadStatus(PHASES, {
  webhookConfigHash: Opt(str('configHash of the referenced MCPWebhookConfig.')),
});

export const MCPRemoteProxySpecSchema = Type.Object(
  {
    remoteUrl: str('URL of the remote MCP server.', { pattern: '^https?://[^\\s]+$' }),
    allowPrivateEndpoint: Opt(
      Type.Boolean({
        default: false,
        description: 'Allow a remoteUrl whose host is a private, link-local or loopback address.',
      }),
    ),
    transport: enumOf(['streamable-http', 'sse'] as const, 'Transport of the remote server.', {
      default: 'streamable-http',
    }),
    headerForward: Opt(HeaderForwardSchema),
    ...proxyFields,
  },
  { description: 'A proxy in front of a remote MCP server.', ...rules(redisReplicasRule, ...proxyRules) },
);

export const MCPRemoteProxyStatusSchema = workloadStatus(
  PHASES.filter((p) => p !== 'Stopped'),
  {
    externalUrl: Opt(str('URL outside the cluster, when exposed.')),
  },
);

export const MCPServerEntrySpecSchema = Type.Object(
  {
    remoteUrl: str('URL of the remote MCP server.', { pattern: '^https?://[^\\s]+$' }),
    allowPrivateEndpoint: Opt(
      Type.Boolean({ default: false, description: 'Allow a private remoteUrl host.' }),
    ),
    transport: enumOf(['streamable-http', 'sse'] as const, 'Transport of the remote server.'),
    groupRef: LocalRefSchema,
    externalAuthConfigRef: Opt(LocalRefSchema),
    headerForward: Opt(HeaderForwardSchema),
    caBundleRef: Opt(
      Type.Object({
        configMapRef: Type.Object({
          name: str('ConfigMap name.', { minLength: 1 }),
          key: str('Key.', { minLength: 1 }),
        }),
      }),
    ),
  },
  { description: 'A remote MCP server listed in a group for a VirtualMCPServer; creates no workload.' },
);

export const MCPServerEntryStatusSchema = Type.Object({
  phase: Opt(enumOf(['Valid', 'Pending', 'Failed'] as const, 'Validation phase.', { default: 'Pending' })),
  observedGeneration: Opt(Type.Integer({ format: 'int64' })),
  conditions: Opt(Type.Array(ConditionSchema)),
});

export const MCPGroupSpecSchema = Type.Object(
  { description: Opt(str('What the group is for.')) },
  { description: 'A set of MCP servers, proxies and entries aggregated by a VirtualMCPServer.' },
);

export const MCPGroupStatusSchema = Type.Object({
  phase: Opt(enumOf(['Ready', 'Pending', 'Failed'] as const, 'Phase.')),
  servers: Opt(Type.Array(Type.String())),
  serverCount: Opt(Type.Integer({ format: 'int32' })),
  remoteProxies: Opt(Type.Array(Type.String())),
  remoteProxyCount: Opt(Type.Integer({ format: 'int32' })),
  entries: Opt(Type.Array(Type.String())),
  entryCount: Opt(Type.Integer({ format: 'int32' })),
  observedGeneration: Opt(Type.Integer({ format: 'int64' })),
  conditions: Opt(Type.Array(ConditionSchema)),
});

export const VirtualMCPServerSpecSchema = Type.Object(
  {
    groupRef: LocalRefSchema,
    incomingAuth: Type.Object(
      {
        type: enumOf(['anonymous', 'oidc'] as const, 'How clients authenticate to the vMCP.'),
        oidcConfigRef: Opt(MCPOIDCConfigRefSchema),
        oidcConfig: Opt(OidcConfigSchema),
        authzConfig: Opt(AuthzConfigSchema),
        authzConfigRef: Opt(LocalRefSchema),
      },
      {
        ...rules(
          {
            rule: "self.type != 'oidc' || has(self.oidcConfigRef) || has(self.oidcConfig)",
            message: 'spec.incomingAuth.oidcConfigRef is required when type is oidc',
            fieldPath: '.oidcConfigRef',
          },
          {
            rule: '!(has(self.oidcConfig) && has(self.oidcConfigRef))',
            message: 'oidcConfig and oidcConfigRef are mutually exclusive',
            fieldPath: '.oidcConfig',
          },
          {
            rule: '!(has(self.authzConfig) && has(self.authzConfigRef))',
            message:
              'authzConfig and authzConfigRef are mutually exclusive; use authzConfigRef to reference a shared MCPAuthzConfig',
            fieldPath: '.authzConfig',
          },
        ),
      },
    ),
    outgoingAuth: Opt(
      Type.Object({
        source: enumOf(['discovered', 'inline'] as const, 'Where backend auth comes from.', {
          default: 'discovered',
        }),
        default: Opt(
          Type.Object({
            type: enumOf(['discovered', 'unauthenticated', 'externalAuthConfigRef'] as const, 'Strategy.'),
            externalAuthConfigRef: Opt(LocalRefSchema),
          }),
        ),
      }),
    ),
    config: Opt(VmcpConfigSchema),
    passthroughHeaders: Opt(Type.Array(Type.String())),
    serviceType: Opt(
      enumOf(['ClusterIP', 'NodePort', 'LoadBalancer'] as const, 'Service type.', { default: 'ClusterIP' }),
    ),
    sessionAffinity: Opt(SESSION_AFFINITY),
    serviceAccount: Opt(str('An existing ServiceAccount for the pod.')),
    podTemplateSpec: Opt(rawObject('Merged into the generated pod template (container vmcp).')),
    replicas: Opt(replicas('vMCP replicas (default 1).')),
    sessionStorage: Opt(SessionStorageSchema),
    resources: Opt(ResourcesSchema),
    telemetryConfigRef: Opt(MCPTelemetryConfigRefSchema),
    embeddingServerRef: Opt(LocalRefSchema),
    imagePullSecrets: Opt(
      Type.Array(LocalObjectRefSchema, {
        description:
          'Pull secrets of the pod and its ServiceAccount (merged by name with the podTemplateSpec list).',
        'x-kubernetes-list-type': 'atomic',
      }),
    ),
  },
  {
    description: 'One MCP endpoint aggregating the backends of an MCPGroup.',
    ...rules(
      redisReplicasRule,
      {
        rule: "!has(self.config) || !has(self.config.rateLimiting) || (has(self.sessionStorage) && self.sessionStorage.provider == 'redis')",
        message: "config.rateLimiting requires sessionStorage with provider 'redis'",
        fieldPath: '.config.rateLimiting',
      },
      {
        rule: "!(has(self.embeddingServerRef) && has(self.config) && has(self.config.optimizer) && has(self.config.optimizer.embeddingProvider) && self.config.optimizer.embeddingProvider == 'openai')",
        message:
          "embeddingServerRef provisions a managed TEI server and cannot be combined with optimizer.embeddingProvider 'openai'; openai mode uses embeddingService directly",
        fieldPath: '.embeddingServerRef',
      },
    ),
  },
);

export const DiscoveredBackendSchema = Type.Object({
  name: str('Backend workload name.'),
  kind: enumOf(['MCPServer', 'MCPRemoteProxy', 'MCPServerEntry'] as const, 'Backend kind.'),
  url: str('URL the vMCP calls.'),
  transport: Opt(Type.String()),
  authConfigRef: Opt(str('MCPExternalAuthConfig the backend is called with.')),
  status: Opt(enumOf(['ready', 'unavailable'] as const, 'Backend status.')),
});

export const VirtualMCPServerStatusSchema = Type.Object({
  phase: Opt(enumOf(['Pending', 'Ready', 'Degraded', 'Failed'] as const, 'Phase.')),
  message: Opt(Type.String()),
  url: Opt(Type.String()),
  observedGeneration: Opt(Type.Integer({ format: 'int64' })),
  conditions: Opt(
    Type.Array(ConditionSchema, { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] }),
  ),
  discoveredBackends: Opt(Type.Array(DiscoveredBackendSchema)),
  backendCount: Opt(Type.Integer({ format: 'int32' })),
  authzConfigHash: Opt(str('configHash of the referenced MCPAuthzConfig.')),
  oidcConfigHash: Opt(str('configHash of the referenced MCPOIDCConfig.')),
  telemetryConfigHash: Opt(str('configHash of the referenced MCPTelemetryConfig.')),
});

const READY_COLUMN = conditionColumn('Ready');
const PHASE_COLUMN = column('Phase', '.status.phase');
const URL_COLUMN = column('URL', '.status.url');
const REMOTE_URL_COLUMN = column('Remote URL', '.spec.remoteUrl');

export const MCP_SERVER = defineKind({
  kind: 'MCPServer',
  plural: 'mcpservers',
  // The reference's short names, and Skep's earlier mcpsrv.
  shortNames: ['mcpserver', 'mcpservers', 'mcpsrv'],
  description: 'MCPServer runs an MCP server image behind the Skep proxy.',
  spec: MCPServerSpecSchema,
  status: MCPServerStatusSchema,
  printerColumns: [
    column('Status', '.status.phase'),
    READY_COLUMN,
    column('Replicas', '.status.readyReplicas', 'integer'),
    URL_COLUMN,
    AGE_COLUMN,
  ],
});

export const MCP_REMOTE_PROXY = defineKind({
  kind: 'MCPRemoteProxy',
  plural: 'mcpremoteproxies',
  shortNames: ['rp', 'mcprp'],
  description: 'MCPRemoteProxy runs the Skep proxy in front of a remote MCP server.',
  spec: MCPRemoteProxySpecSchema,
  status: MCPRemoteProxyStatusSchema,
  printerColumns: [PHASE_COLUMN, REMOTE_URL_COLUMN, URL_COLUMN, READY_COLUMN, AGE_COLUMN],
});

export const MCP_SERVER_ENTRY = defineKind({
  kind: 'MCPServerEntry',
  plural: 'mcpserverentries',
  shortNames: ['mcpentry'],
  description: 'MCPServerEntry lists a remote MCP server in a group; it creates no workload.',
  spec: MCPServerEntrySpecSchema,
  status: MCPServerEntryStatusSchema,
  printerColumns: [
    PHASE_COLUMN,
    column('Transport', '.spec.transport'),
    REMOTE_URL_COLUMN,
    column('Group', '.spec.groupRef.name'),
    AGE_COLUMN,
  ],
});

export const VIRTUAL_MCP_SERVER = defineKind({
  kind: 'VirtualMCPServer',
  plural: 'virtualmcpservers',
  shortNames: ['vmcp', 'virtualmcp'],
  description: 'VirtualMCPServer aggregates the backends of an MCPGroup behind one endpoint.',
  spec: VirtualMCPServerSpecSchema,
  status: VirtualMCPServerStatusSchema,
  printerColumns: [
    PHASE_COLUMN,
    URL_COLUMN,
    column('Backends', '.status.backendCount', 'integer'),
    AGE_COLUMN,
    READY_COLUMN,
  ],
});

export const MCP_GROUP = defineKind({
  kind: 'MCPGroup',
  plural: 'mcpgroups',
  shortNames: ['mcpg', 'mcpgroup'],
  description: 'MCPGroup gathers MCP servers, remote proxies and entries.',
  spec: MCPGroupSpecSchema,
  status: MCPGroupStatusSchema,
  specRequired: false,
  printerColumns: [
    column('Servers', '.status.serverCount', 'integer'),
    column('Proxies', '.status.remoteProxyCount', 'integer'),
    PHASE_COLUMN,
    AGE_COLUMN,
  ],
});

export const WORKLOAD_KINDS = [MCP_SERVER, MCP_REMOTE_PROXY, MCP_SERVER_ENTRY, VIRTUAL_MCP_SERVER, MCP_GROUP];
