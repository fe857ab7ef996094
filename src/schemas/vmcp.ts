/**
 * The virtual MCP server's configuration schema: ONE schema for the reference's single vMCP
 * config struct, used for `skep vmcp --config file.yaml`, the `vmcp` field of a workload's run
 * configuration and the `VirtualMCPServer` CRD's `spec.config`. Keys are camelCase as in the
 * reference. `vmcp/config.ts` validates with it and resolves the defaults.
 */
import { type Static, Type } from 'typebox';
import { Opt, Str, StrMap, Strs } from './shorthand.js';
import { CodeModeSchema, CompositeToolSchema } from './vmcp-composite.js';

/**
 * The `optimizer` block (its presence turns the optimizer on; without `embeddingService` the
 * search is BM25 only). The two numbers the reference sends as strings (Kubernetes has no
 * portable float) are accepted as strings or numbers.
 */
const NumberOrString = () => Type.Union([Type.Number(), Type.String()]);

export const OptimizerConfigSchema = Type.Object(
  {
    embeddingService: Opt(
      Type.String({ description: 'Base URL of the embedding service (TEI, or OpenAI-compatible).' }),
    ),
    embeddingServiceTimeout: Opt(
      Type.String({ description: 'Go duration of one embedding request; default 30s.' }),
    ),
    embeddingProvider: Opt(Type.Union([Type.Literal('tei'), Type.Literal('openai')])),
    embeddingModel: Opt(Type.String({ description: 'Model name; required for the openai provider.' })),
    embeddingHeaders: Opt(Type.Record(Type.String(), Type.String())),
    maxToolsToReturn: Opt(Type.Integer({ minimum: 1, maximum: 50 })),
    hybridSearchSemanticRatio: Opt(NumberOrString()),
    semanticDistanceThreshold: Opt(NumberOrString()),
  },
  { additionalProperties: false },
);

export type OptimizerConfig = Static<typeof OptimizerConfigSchema>;

const Closed = { additionalProperties: false } as const;
/** A Go duration string ("30s", "1m30s", "500ms"), the reference's format. */
const Duration = () =>
  Type.String({
    pattern: '^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$',
    description: 'Go duration, e.g. "30s".',
  });

const HeaderInjectionSchema = Type.Object(
  { headerName: Str(), headerValue: Opt(Str()), headerValueEnv: Opt(Str()) },
  Closed,
);
const TokenExchangeSchema = Type.Object(
  {
    tokenUrl: Str(),
    clientId: Opt(Str()),
    clientSecret: Opt(Str()),
    clientSecretEnv: Opt(Str()),
    audience: Opt(Str()),
    scopes: Opt(Strs()),
    subjectTokenType: Opt(Str()),
    subjectProviderName: Opt(Str()),
  },
  Closed,
);
const UpstreamInjectSchema = Type.Object({ providerName: Str() }, Closed);
const AwsStsSchema = Type.Object(
  {
    region: Str(),
    service: Opt(Str()),
    fallbackRoleArn: Opt(Str()),
    roleMappings: Opt(
      Type.Array(
        Type.Object(
          { claim: Opt(Str()), matcher: Opt(Str()), roleArn: Str(), priority: Opt(Type.Integer()) },
          Closed,
        ),
      ),
    ),
    roleClaim: Opt(Str()),
    sessionDuration: Opt(Type.Integer()),
    sessionNameClaim: Opt(Str()),
    subjectProviderName: Opt(Str()),
  },
  Closed,
);

/**
 * ToolHive's `pkg/vmcp/auth/types.BackendAuthStrategy`. `obo` and `xaa` are accepted by the schema,
 * refused at parse.
 */
const BackendAuthStrategySchema = Type.Object(
  {
    type: Type.Union([
      Type.Literal('unauthenticated'),
      Type.Literal('header_injection'),
      Type.Literal('token_exchange'),
      Type.Literal('upstream_inject'),
      Type.Literal('aws_sts'),
      Type.Literal('obo'),
      Type.Literal('xaa'),
      // CRD level (ToolHive's `spec.outgoingAuth`): filled from the backend workload's own configuration.
      Type.Literal('discovered'),
    ]),
    headerInjection: Opt(HeaderInjectionSchema),
    tokenExchange: Opt(TokenExchangeSchema),
    upstreamInject: Opt(UpstreamInjectSchema),
    awsSts: Opt(AwsStsSchema),
    obo: Opt(Type.Record(Type.String(), Type.Unknown())),
    xaa: Opt(Type.Record(Type.String(), Type.Unknown())),
  },
  Closed,
);

/**
 * MCP tool annotations (MCP 2025-11-25 `ToolAnnotations`) as an override sets them: each field
 * replaces the tool's own, unset fields pass through. Shared with the run configuration's
 * `tools_override`.
 */
export const ToolAnnotationsSchema = Type.Object(
  {
    title: Opt(Str()),
    readOnlyHint: Opt(Type.Boolean()),
    destructiveHint: Opt(Type.Boolean()),
    idempotentHint: Opt(Type.Boolean()),
    openWorldHint: Opt(Type.Boolean()),
  },
  Closed,
);
const ToolOverrideSchema = Type.Object(
  { name: Opt(Str()), description: Opt(Str()), annotations: Opt(ToolAnnotationsSchema) },
  Closed,
);
const WorkloadToolsSchema = Type.Object(
  {
    workload: Type.String({ minLength: 1 }),
    filter: Opt(Strs()),
    overrides: Opt(Type.Record(Type.String(), ToolOverrideSchema)),
    excludeAll: Opt(Type.Boolean()),
    toolConfigRef: Opt(Type.Object({ name: Str() }, Closed)),
  },
  Closed,
);

const AggregationSchema = Type.Object(
  {
    conflictResolution: Opt(
      Type.Union([Type.Literal('prefix'), Type.Literal('priority'), Type.Literal('manual')]),
    ),
    conflictResolutionConfig: Opt(
      Type.Object(
        {
          prefixFormat: Opt(Str()),
          priorityOrder: Opt(Strs()),
          prefixOnlyConflicts: Opt(
            Type.Boolean({
              description:
                'Skep extension: with `prefix`, rename only names that more than one backend offers.',
            }),
          ),
        },
        Closed,
      ),
    ),
    tools: Opt(Type.Array(WorkloadToolsSchema)),
    excludeAllTools: Opt(Type.Boolean()),
    defaultToolVisibility: Opt(Type.Union([Type.Literal('allow'), Type.Literal('deny'), Type.Literal('')])),
  },
  Closed,
);

const OperationalSchema = Type.Object(
  {
    logLevel: Opt(Str()),
    timeouts: Opt(
      Type.Object(
        { default: Opt(Duration()), perWorkload: Opt(Type.Record(Type.String(), Duration())) },
        Closed,
      ),
    ),
    failureHandling: Opt(
      Type.Object(
        {
          healthCheckInterval: Opt(Duration()),
          unhealthyThreshold: Opt(Type.Integer({ minimum: 1 })),
          healthCheckTimeout: Opt(Duration()),
          statusReportingInterval: Opt(Duration()),
          partialFailureMode: Opt(Type.Union([Type.Literal('fail'), Type.Literal('best_effort')])),
          circuitBreaker: Opt(
            Type.Object(
              {
                enabled: Opt(Type.Boolean()),
                failureThreshold: Opt(Type.Integer({ minimum: 1 })),
                timeout: Opt(Duration()),
              },
              Closed,
            ),
          ),
        },
        Closed,
      ),
    ),
  },
  Closed,
);

export const StaticBackendSchema = Type.Object(
  {
    name: Str(),
    url: Str(),
    transport: Type.Union([Type.Literal('sse'), Type.Literal('streamable-http')]),
    type: Opt(Str()),
    caBundlePath: Opt(Str()),
    metadata: Opt(StrMap()),
  },
  Closed,
);

const Loose = () => Type.Record(Type.String(), Type.Unknown());

export const VmcpConfigSchema = Type.Object(
  {
    name: Opt(Str()),
    groupRef: Opt(Str()),
    backends: Opt(Type.Array(StaticBackendSchema)),
    incomingAuth: Opt(
      Type.Object(
        {
          type: Type.Union([Type.Literal('oidc'), Type.Literal('local'), Type.Literal('anonymous')]),
          oidc: Opt(Loose()),
          authz: Opt(Loose()),
        },
        Closed,
      ),
    ),
    outgoingAuth: Opt(
      Type.Object(
        {
          source: Opt(Type.Union([Type.Literal('inline'), Type.Literal('discovered')])),
          default: Opt(BackendAuthStrategySchema),
          backends: Opt(Type.Record(Type.String(), BackendAuthStrategySchema)),
        },
        Closed,
      ),
    ),
    aggregation: Opt(AggregationSchema),
    compositeTools: Opt(Type.Array(CompositeToolSchema)),
    compositeToolRefs: Opt(Type.Array(Type.Object({ name: Str() }, Closed))),
    operational: Opt(OperationalSchema),
    metadata: Opt(StrMap()),
    telemetry: Opt(Loose()),
    audit: Opt(Loose()),
    optimizer: Opt(OptimizerConfigSchema),
    codeMode: Opt(CodeModeSchema),
    sessionStorage: Opt(Loose()),
    rateLimiting: Opt(Loose()),
    passthroughHeaders: Opt(Strs()),
    clientEntries: Opt(
      Type.Union([Type.Literal('virtual'), Type.Literal('all')], {
        description:
          'Skep extension: what a client registered for the group gets when this virtual workload serves its own group: `virtual` (default) only the virtual endpoint, `all` every workload besides it.',
      }),
    ),
  },
  {
    // No $id: the run configuration embeds this schema, and one validator may compile both.
    additionalProperties: false,
    description: 'Virtual MCP server configuration (the reference vMCP config, camelCase keys).',
  },
);

export type VmcpConfig = Static<typeof VmcpConfigSchema>;
export type BackendAuthStrategy = Static<typeof BackendAuthStrategySchema>;
export type WorkloadToolsConfig = Static<typeof WorkloadToolsSchema>;
export type StaticBackendConfig = Static<typeof StaticBackendSchema>;
