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
    policies: Type.Array(Type.String({ minLength: 1 }), {
      minItems: 1,
      description: 'Cedar policies (permit/forbid statements).',
    }),
    entitiesJson: Opt(str('Cedar entities as a JSON array.')),
  },
  { description: 'Cedar authorization of MCP requests.' },
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
};

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
      ...extra,
    },
    { description: 'Observed state.' },
  );

export const MCPServerStatusSchema = workloadStatus(PHASES);

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
  { description: 'A proxy in front of a remote MCP server.', ...rules(redisReplicasRule) },
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
        oidcConfig: Opt(OidcConfigSchema),
      },
      {
        ...rules({
          rule: "self.type != 'oidc' || has(self.oidcConfig)",
          message: 'oidc incoming auth needs oidcConfig',
          fieldPath: '.oidcConfig',
        }),
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
  },
  { description: 'One MCP endpoint aggregating the backends of an MCPGroup.', ...rules(redisReplicasRule) },
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
});

const READY_COLUMN = conditionColumn('Ready');
const PHASE_COLUMN = column('Phase', '.status.phase');
const URL_COLUMN = column('URL', '.status.url');
const REMOTE_URL_COLUMN = column('Remote URL', '.spec.remoteUrl');

export const MCP_SERVER = defineKind({
  kind: 'MCPServer',
  plural: 'mcpservers',
  shortNames: ['mcpsrv'],
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
