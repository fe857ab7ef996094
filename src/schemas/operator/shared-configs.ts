/**
 * The shared configuration kinds of `skep.dev/v1beta1`, with ToolHive's field names, defaults,
 * validation rules, printer columns and short names (its operator CRDs `MCPToolConfig`,
 * `MCPOIDCConfig`, `MCPAuthzConfig`, `MCPTelemetryConfig`, `MCPWebhookConfig`): a workload
 * (MCPServer, MCPRemoteProxy, VirtualMCPServer) names one by a `*Ref` field in its own namespace,
 * and the operator folds it into the workload's run configuration.
 *
 * Every status also lists `referencingWorkloads` (as MCPExternalAuthConfig's does): the reference
 * keeps that list only for MCPExternalAuthConfig; here every shared config shows who uses it and
 * blocks its deletion while it is used.
 */
import { Type } from 'typebox';
import { ConditionSchema, ReferencingWorkloadSchema, SecretRefSchema } from '../extauth/schema.js';
import { enumOf, rules, str, stringList, stringMap } from '../k8s-builders.js';
import { AGE_COLUMN, column, conditionColumn, defineKind } from '../kind.js';
import { Opt } from '../shorthand.js';

/** An object whose fields Kubernetes keeps as written. */
export const rawObject = (description: string) =>
  Type.Object({}, { description, additionalProperties: true, 'x-kubernetes-preserve-unknown-fields': true });

const conditions = () =>
  Opt(
    Type.Array(ConditionSchema, {
      description: 'Latest observations.',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
    }),
  );

/** The status every shared configuration kind has. */
export const sharedConfigStatus = (what: string) =>
  Type.Object(
    {
      conditions: conditions(),
      observedGeneration: Opt(Type.Integer({ format: 'int64', description: 'Latest generation observed.' })),
      configHash: Opt(str(`Hash of the current ${what}, for change detection.`)),
      referencingWorkloads: Opt(
        Type.Array(ReferencingWorkloadSchema, { description: 'Workloads that reference this resource.' }),
      ),
    },
    { description: 'Observed state.' },
  );

const VALID_COLUMN = conditionColumn('Valid');

export const ConfigMapKeyRefSchema = Type.Object(
  {
    name: str('ConfigMap name.', { minLength: 1 }),
    key: Opt(str('Key within the ConfigMap (default ca.crt).')),
  },
  { description: 'One key of a ConfigMap in the same namespace.' },
);

export const CABundleSourceSchema = Type.Object(
  { configMapRef: Opt(ConfigMapKeyRefSchema) },
  { description: 'Where a CA certificate bundle comes from.' },
);

// ---- MCPToolConfig -----------------------------------------------------------------------

export const ToolAnnotationsOverrideSchema = Type.Object(
  {
    title: Opt(str('Human-readable title.')),
    readOnlyHint: Opt(Type.Boolean()),
    destructiveHint: Opt(Type.Boolean()),
    idempotentHint: Opt(Type.Boolean()),
    openWorldHint: Opt(Type.Boolean()),
  },
  { description: 'Overrides of the tool annotations; unset fields pass through from the server.' },
);

export const ToolOverrideSchema = Type.Object(
  {
    name: Opt(str('New name of the tool.')),
    description: Opt(str('New description of the tool.')),
    annotations: Opt(ToolAnnotationsOverrideSchema),
  },
  { description: 'A tool renamed and/or re-described.' },
);

export const MCPToolConfigSpecSchema = Type.Object(
  {
    toolsFilter: Opt(
      Type.Array(Type.String({ minLength: 1 }), {
        description: 'Tool names to expose (allow list); empty exposes every tool.',
        'x-kubernetes-list-type': 'set',
      }),
    ),
    toolsOverride: Opt(
      Type.Record(Type.String(), ToolOverrideSchema, {
        description: 'Per original tool name: its new name and/or description.',
      }),
    ),
  },
  { description: 'Tool filtering and renaming shared by workloads.' },
);

export const MCP_TOOL_CONFIG = defineKind({
  kind: 'MCPToolConfig',
  plural: 'mcptoolconfigs',
  shortNames: ['tc', 'toolconfig'],
  description: 'MCPToolConfig filters and renames the tools of the workloads that reference it.',
  spec: MCPToolConfigSpecSchema,
  status: sharedConfigStatus('tool configuration'),
  specRequired: false,
  printerColumns: [VALID_COLUMN, AGE_COLUMN],
});

// ---- MCPOIDCConfig -----------------------------------------------------------------------

export const MCPOIDCConfigSpecSchema = Type.Object(
  {
    type: enumOf(['kubernetesServiceAccount', 'inline'] as const, 'Where the OIDC settings come from.'),
    kubernetesServiceAccount: Opt(
      Type.Object(
        {
          serviceAccount: Opt(
            str('Accept only the tokens of this service account (default: any service account).'),
          ),
          namespace: Opt(
            str(
              "Accept only the tokens of service accounts in this namespace (default: any; the workload's when serviceAccount is set).",
            ),
          ),
          issuer: Opt(str('Issuer URL of the tokens.', { default: 'https://kubernetes.default.svc' })),
          jwksUrl: Opt(str('JWKS URL (default: discovered).')),
          introspectionUrl: Opt(str('Token introspection URL (default: discovered).')),
          useClusterAuth: Opt(
            Type.Boolean({
              description: "Use the pod's service-account CA and token to reach the issuer (default true).",
            }),
          ),
        },
        { description: 'Accept Kubernetes service-account tokens.' },
      ),
    ),
    inline: Opt(
      Type.Object(
        {
          issuer: str('Issuer URL.', { minLength: 1 }),
          jwksUrl: Opt(str('JWKS URL.')),
          introspectionUrl: Opt(str('Token introspection URL.')),
          clientId: Opt(str('Client id (for introspection).')),
          clientSecretRef: Opt(SecretRefSchema),
          caBundleRef: Opt(CABundleSourceSchema),
          jwksAuthTokenPath: Opt(str('File holding a bearer token for the JWKS and discovery requests.')),
          jwksAllowPrivateIP: Opt(
            Type.Boolean({ default: false, description: 'Allow JWKS/OIDC endpoints on private addresses.' }),
          ),
          protectedResourceAllowPrivateIP: Opt(
            Type.Boolean({
              default: false,
              description: 'Allow a protected-resource URL on a private address.',
            }),
          ),
          insecureAllowHTTP: Opt(
            Type.Boolean({
              default: false,
              description: 'Allow http:// issuer and JWKS URLs (development only).',
            }),
          ),
        },
        { description: 'OIDC provider settings, without the per-server audience and scopes.' },
      ),
    ),
  },
  {
    description: 'OIDC provider settings shared by workloads.',
    ...rules(
      {
        rule: "self.type == 'kubernetesServiceAccount' ? has(self.kubernetesServiceAccount) : !has(self.kubernetesServiceAccount)",
        message:
          "kubernetesServiceAccount must be set when type is 'kubernetesServiceAccount', and must not be set otherwise",
      },
      {
        rule: "self.type == 'inline' ? has(self.inline) : !has(self.inline)",
        message: "inline must be set when type is 'inline', and must not be set otherwise",
      },
    ),
  },
);

export const MCP_OIDC_CONFIG = defineKind({
  kind: 'MCPOIDCConfig',
  plural: 'mcpoidcconfigs',
  shortNames: ['mcpoidc'],
  description: 'MCPOIDCConfig is an OIDC provider whose tokens the referencing workloads accept.',
  spec: MCPOIDCConfigSpecSchema,
  status: sharedConfigStatus('OIDC configuration'),
  printerColumns: [column('Source', '.spec.type'), VALID_COLUMN, AGE_COLUMN],
});

/** `oidcConfigRef` of a workload: the shared provider plus what is per server. */
export const MCPOIDCConfigRefSchema = Type.Object(
  {
    name: str('Name of the MCPOIDCConfig.', { minLength: 1 }),
    audience: str('Audience the tokens must carry; unique per server (prevents token replay).', {
      minLength: 1,
    }),
    scopes: Opt(stringList('Scopes advertised in the protected-resource metadata (default ["openid"]).')),
    resourceUrl: Opt(str('Public URL of the protected resource (RFC 9728), when exposed outside.')),
  },
  { description: 'Incoming authentication from a shared MCPOIDCConfig.' },
);

// ---- MCPAuthzConfig ----------------------------------------------------------------------

/** The authorizer types Skep evaluates, and the key their `config` sits under in `authz_config`. */
export const AUTHZ_CONFIG_KEYS = { cedarv1: 'cedar', httpv1: 'pdp' } as const;

export const MCPAuthzConfigSpecSchema = Type.Object(
  {
    type: str('Authorizer backend: cedarv1 (Cedar policies) or httpv1 (an external decision point).', {
      minLength: 1,
    }),
    config: rawObject(
      'Backend settings: cedarv1 {policies, entities_json, ...}; httpv1 {http {url, timeout, insecure_skip_verify}, claim_mapping, context}.',
    ),
  },
  { description: 'Authorization shared by workloads.' },
);

export const MCP_AUTHZ_CONFIG = defineKind({
  kind: 'MCPAuthzConfig',
  plural: 'mcpauthzconfigs',
  shortNames: ['authzcfg'],
  description: 'MCPAuthzConfig authorizes the MCP requests of the workloads that reference it.',
  spec: MCPAuthzConfigSpecSchema,
  status: sharedConfigStatus('authorization configuration'),
  printerColumns: [column('Type', '.spec.type'), VALID_COLUMN, AGE_COLUMN],
});

// ---- MCPTelemetryConfig ------------------------------------------------------------------

export const MCPTelemetryConfigSpecSchema = Type.Object(
  {
    openTelemetry: Opt(
      Type.Object(
        {
          enabled: Opt(Type.Boolean({ default: false, description: 'Export OpenTelemetry.' })),
          endpoint: Opt(str('OTLP/HTTP endpoint (host:port or URL).')),
          insecure: Opt(Type.Boolean({ default: false, description: 'Plain HTTP to the endpoint.' })),
          headers: Opt(stringMap('Headers sent to the endpoint (use sensitiveHeaders for credentials).')),
          sensitiveHeaders: Opt(
            Type.Array(
              Type.Object({
                name: str('Header name.', { minLength: 1 }),
                secretKeyRef: SecretRefSchema,
              }),
              {
                description: 'Headers whose values come from Secrets.',
                'x-kubernetes-list-type': 'map',
                'x-kubernetes-list-map-keys': ['name'],
              },
            ),
          ),
          resourceAttributes: Opt(stringMap('Resource attributes added to every signal.')),
          metrics: Opt(
            Type.Object(
              { enabled: Opt(Type.Boolean({ default: false, description: 'Send OTLP metrics.' })) },
              { description: 'Metrics.' },
            ),
          ),
          tracing: Opt(
            Type.Object(
              {
                enabled: Opt(Type.Boolean({ default: false, description: 'Send OTLP traces.' })),
                samplingRate: Opt(
                  str('Trace sampling rate between 0 and 1.', {
                    default: '0.05',
                    pattern: '^(0(\\.\\d+)?|1(\\.0+)?)$',
                  }),
                ),
              },
              { description: 'Tracing.' },
            ),
          ),
          useLegacyAttributes: Opt(
            Type.Boolean({ default: true, description: 'Also emit the legacy attribute names.' }),
          ),
          caBundleRef: Opt(CABundleSourceSchema),
        },
        {
          description: 'OpenTelemetry export (the service name is set per workload).',
          ...rules({
            rule: '!has(self.headers) || !has(self.sensitiveHeaders) || self.sensitiveHeaders.all(sh, !(sh.name in self.headers))',
            message: 'a header name cannot appear in both headers and sensitiveHeaders',
          }),
        },
      ),
    ),
    prometheus: Opt(
      Type.Object(
        { enabled: Opt(Type.Boolean({ default: false, description: 'Serve /metrics on the proxy port.' })) },
        { description: 'Prometheus.' },
      ),
    ),
  },
  { description: 'Telemetry shared by workloads.' },
);

export const MCP_TELEMETRY_CONFIG = defineKind({
  kind: 'MCPTelemetryConfig',
  plural: 'mcptelemetryconfigs',
  shortNames: ['mcpotel'],
  description: 'MCPTelemetryConfig is the telemetry export of the workloads that reference it.',
  spec: MCPTelemetryConfigSpecSchema,
  status: sharedConfigStatus('telemetry configuration'),
  specRequired: false,
  printerColumns: [
    column('Endpoint', '.spec.openTelemetry.endpoint'),
    VALID_COLUMN,
    column('Tracing', '.spec.openTelemetry.tracing.enabled', 'boolean'),
    column('Metrics', '.spec.openTelemetry.metrics.enabled', 'boolean'),
    AGE_COLUMN,
  ],
});

export const MCPTelemetryConfigRefSchema = Type.Object(
  {
    name: str('Name of the MCPTelemetryConfig.', { minLength: 1 }),
    serviceName: Opt(str('Service name of this workload (default: its name).')),
  },
  { description: 'Telemetry from a shared MCPTelemetryConfig.' },
);

// ---- MCPWebhookConfig --------------------------------------------------------------------

export const WebhookSpecSchema = Type.Object({
  name: str('Unique name of the webhook.', { minLength: 1, maxLength: 63 }),
  url: str('HTTP(S) endpoint called for every MCP request.', { format: 'uri', pattern: '^https?://' }),
  timeout: Opt(
    str('Go duration to wait for an answer (default 10s, at most 30s).', {
      pattern: '^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$',
    }),
  ),
  failurePolicy: Opt(
    enumOf(['fail', 'ignore'] as const, 'On a webhook error: deny (fail) or allow (ignore).', {
      default: 'fail',
    }),
  ),
  tlsConfig: Opt(
    Type.Object(
      {
        caSecretRef: Opt(SecretRefSchema),
        clientCertSecretRef: Opt(SecretRefSchema),
        clientKeySecretRef: Opt(SecretRefSchema),
        insecureSkipVerify: Opt(Type.Boolean({ description: 'Do not verify the server certificate.' })),
      },
      {
        description: 'TLS to the webhook.',
        ...rules({
          rule: 'has(self.clientCertSecretRef) == has(self.clientKeySecretRef)',
          message: 'clientCertSecretRef and clientKeySecretRef go together (mTLS)',
        }),
      },
    ),
  ),
  hmacSecretRef: Opt(SecretRefSchema),
});

export const MCPWebhookConfigSpecSchema = Type.Object(
  {
    validating: Opt(Type.Array(WebhookSpecSchema, { description: 'Webhooks that allow or deny requests.' })),
    mutating: Opt(Type.Array(WebhookSpecSchema, { description: 'Webhooks that rewrite requests.' })),
  },
  {
    description: 'Webhook middleware shared by workloads.',
    ...rules({
      rule: '(has(self.validating) ? size(self.validating) : 0) + (has(self.mutating) ? size(self.mutating) : 0) > 0',
      message: 'at least one validating or mutating webhook must be defined',
    }),
  },
);

export const MCP_WEBHOOK_CONFIG = defineKind({
  kind: 'MCPWebhookConfig',
  plural: 'mcpwebhookconfigs',
  shortNames: ['mwc'],
  description: 'MCPWebhookConfig is the webhook middleware of the workloads that reference it.',
  spec: MCPWebhookConfigSpecSchema,
  status: sharedConfigStatus('webhook configuration'),
  printerColumns: [VALID_COLUMN, AGE_COLUMN],
});

export const SHARED_CONFIG_KINDS = [
  MCP_TOOL_CONFIG,
  MCP_OIDC_CONFIG,
  MCP_AUTHZ_CONFIG,
  MCP_TELEMETRY_CONFIG,
  MCP_WEBHOOK_CONFIG,
];
