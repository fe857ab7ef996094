/**
 * MCPRegistry, EmbeddingServer and VirtualMCPCompositeToolDefinition in `skep.dev/v1beta1`, with
 * ToolHive's field names, defaults, status, printer columns and short names.
 *
 *  - MCPRegistry: ToolHive runs its separate registry server image with `configYAML` mounted as
 *    its config file and never reads it. Skep runs its own registry API (the routes of `skep serve`,
 *    read-only) and reads the sources and registries `configYAML` names (see docs/kubernetes.md).
 *  - EmbeddingServer: a Text Embeddings Inference server (StatefulSet and Service, as the
 *    reference renders them); a VirtualMCPServer's optimizer points at it by `embeddingServerRef`.
 *  - VirtualMCPCompositeToolDefinition: one composite tool (workflow) of the vMCP configuration,
 *    referenced by a VirtualMCPServer's `spec.config.compositeToolRefs`.
 */
import { Type } from 'typebox';
import { ConditionSchema, SecretRefSchema } from '../extauth/schema.js';
import { enumOf, str, stringList, stringMap } from '../k8s-builders.js';
import { AGE_COLUMN, column, conditionColumn, defineKind } from '../kind.js';
import { Opt } from '../shorthand.js';
import { rawObject, ToolAnnotationsOverrideSchema } from './shared-configs.js';

const conditions = () =>
  Opt(
    Type.Array(ConditionSchema, {
      description: 'Latest observations.',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
    }),
  );

export const LocalObjectRefSchema = Type.Object(
  { name: str('Name of the object in the same namespace.', { minLength: 1 }) },
  { description: 'Reference to an object in the same namespace.' },
);

const imagePullSecrets = (description: string) =>
  Opt(Type.Array(LocalObjectRefSchema, { description, 'x-kubernetes-list-type': 'atomic' }));

const rawList = (description: string) =>
  Opt(
    Type.Array(rawObject('One entry, as Kubernetes writes it.'), {
      description,
      'x-kubernetes-list-type': 'atomic',
    }),
  );

// ---- MCPRegistry -------------------------------------------------------------------------

export const MCPRegistrySpecSchema = Type.Object(
  {
    configYAML: str(
      'The registry configuration (sources, registries, auth…), as the reference registry server reads it; never put credentials here (it is a ConfigMap).',
      { minLength: 1 },
    ),
    volumes: rawList('Extra pod volumes (Secrets, ConfigMaps holding registry files, PVCs).'),
    volumeMounts: rawList('Extra mounts of the registry-api container; paths must match configYAML.'),
    pgpassSecretRef: Opt(SecretRefSchema),
    displayName: Opt(str('Human-readable name of the registry.')),
    podTemplateSpec: Opt(rawObject('Merged into the generated pod template (container registry-api).')),
    imagePullSecrets: imagePullSecrets('Pull secrets of the Deployment and its ServiceAccount.'),
  },
  { description: 'A read-only MCP registry API.' },
);

export const MCP_REGISTRY = defineKind({
  kind: 'MCPRegistry',
  plural: 'mcpregistries',
  shortNames: ['mcpreg', 'registry'],
  description: 'MCPRegistry serves an MCP registry API (read-only) from the sources its configuration names.',
  spec: MCPRegistrySpecSchema,
  status: Type.Object(
    {
      conditions: conditions(),
      observedGeneration: Opt(Type.Integer({ format: 'int64' })),
      phase: Opt(enumOf(['Pending', 'Ready', 'Failed', 'Terminating'] as const, 'Phase.')),
      message: Opt(str('Detail of the phase.')),
      url: Opt(str('In-cluster URL of the registry API.')),
      readyReplicas: Opt(Type.Integer({ format: 'int32' })),
    },
    { description: 'Observed state.' },
  ),
  printerColumns: [
    column('Status', '.status.phase'),
    conditionColumn('Ready'),
    column('Replicas', '.status.readyReplicas', 'integer'),
    column('URL', '.status.url'),
    AGE_COLUMN,
  ],
});

// ---- EmbeddingServer ---------------------------------------------------------------------

const metadataOverrides = (description: string) =>
  Type.Object(
    {
      annotations: Opt(stringMap('Annotations to add or override.')),
      labels: Opt(stringMap('Labels to add or override.')),
    },
    { description },
  );

export const ResourceMetadataOverridesSchema = metadataOverrides('Labels and annotations of an object.');

const Quantity = Type.Object({ cpu: Opt(str('CPU, e.g. 500m.')), memory: Opt(str('Memory, e.g. 1Gi.')) });

export const EmbeddingServerSpecSchema = Type.Object(
  {
    model: Opt(str('HuggingFace embedding model.', { default: 'BAAI/bge-small-en-v1.5' })),
    hfTokenSecretRef: Opt(SecretRefSchema),
    image: Opt(
      str('Text Embeddings Inference image.', {
        default: 'ghcr.io/huggingface/text-embeddings-inference:cpu-latest',
      }),
    ),
    imagePullPolicy: Opt(
      enumOf(['Always', 'Never', 'IfNotPresent'] as const, 'Pull policy of the image.', {
        default: 'IfNotPresent',
      }),
    ),
    port: Opt(
      Type.Integer({
        format: 'int32',
        minimum: 1,
        maximum: 65535,
        default: 8080,
        description: 'Service port.',
      }),
    ),
    args: Opt(stringList('Extra arguments of the server.')),
    env: Opt(
      Type.Array(Type.Object({ name: str('Variable name.', { minLength: 1 }), value: str('Value.') }), {
        description: 'Environment of the server.',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
      }),
    ),
    resources: Opt(
      Type.Object({ limits: Opt(Quantity), requests: Opt(Quantity) }, { description: 'Compute resources.' }),
    ),
    modelCache: Opt(
      Type.Object(
        {
          enabled: Opt(
            Type.Boolean({ default: true, description: 'Keep downloaded models in a volume claim.' }),
          ),
          storageClassName: Opt(str('Storage class (default: the cluster default).')),
          size: Opt(str('Size of the claim.', { default: '10Gi' })),
          accessMode: Opt(
            enumOf(['ReadWriteOnce', 'ReadWriteMany', 'ReadOnlyMany'] as const, 'Access mode of the claim.', {
              default: 'ReadWriteOnce',
            }),
          ),
        },
        { description: 'Model cache.' },
      ),
    ),
    podTemplateSpec: Opt(rawObject('Merged into the generated pod template (container embedding).')),
    resourceOverrides: Opt(
      Type.Object(
        {
          statefulSet: Opt(
            Type.Object(
              {
                annotations: Opt(stringMap('Annotations to add or override.')),
                labels: Opt(stringMap('Labels to add or override.')),
                podTemplateMetadataOverrides: Opt(ResourceMetadataOverridesSchema),
              },
              { description: 'The StatefulSet.' },
            ),
          ),
          service: Opt(metadataOverrides('The Service.')),
          persistentVolumeClaim: Opt(metadataOverrides('The model-cache claim.')),
        },
        { description: 'Labels and annotations of the created objects.' },
      ),
    ),
    replicas: Opt(Type.Integer({ format: 'int32', minimum: 1, default: 1, description: 'Replicas.' })),
  },
  { description: 'A Text Embeddings Inference server.' },
);

export const MCP_EMBEDDING_SERVER = defineKind({
  kind: 'EmbeddingServer',
  plural: 'embeddingservers',
  shortNames: ['emb', 'embedding'],
  description: 'EmbeddingServer runs a text-embeddings server for the vMCP optimizer.',
  spec: EmbeddingServerSpecSchema,
  status: Type.Object(
    {
      conditions: conditions(),
      phase: Opt(enumOf(['Pending', 'Downloading', 'Ready', 'Failed', 'Terminating'] as const, 'Phase.')),
      message: Opt(str('Detail of the phase.')),
      url: Opt(str('In-cluster URL of the embedding service.')),
      readyReplicas: Opt(Type.Integer({ format: 'int32' })),
      observedGeneration: Opt(Type.Integer({ format: 'int64' })),
    },
    { description: 'Observed state.' },
  ),
  specRequired: false,
  printerColumns: [
    column('Status', '.status.phase'),
    column('Model', '.spec.model'),
    column('Ready', '.status.readyReplicas', 'integer'),
    column('URL', '.status.url'),
    AGE_COLUMN,
  ],
});

// ---- VirtualMCPCompositeToolDefinition ---------------------------------------------------

const DURATION = '^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$';
const duration = (description: string) => str(description, { pattern: DURATION });

const StepErrorHandling = Type.Object(
  {
    action: Opt(
      enumOf(['abort', 'continue', 'retry'] as const, 'What a failed step does.', { default: 'abort' }),
    ),
    retryCount: Opt(Type.Integer({ minimum: 0, description: 'Retries (retry only).' })),
    retryDelay: Opt(duration('Delay between retries.')),
  },
  { description: 'Error handling of a step.' },
);

const ElicitationResponse = Type.Object(
  {
    action: Opt(
      enumOf(
        ['skip_remaining', 'abort', 'continue'] as const,
        'What a declined or cancelled elicitation does.',
        {
          default: 'abort',
        },
      ),
    ),
  },
  { description: 'Handling of an elicitation answer.' },
);

const stepFields = {
  id: str('Step id (unique in the workflow).', { minLength: 1 }),
  type: Opt(enumOf(['tool', 'elicitation', 'forEach'] as const, 'Step type.', { default: 'tool' })),
  tool: Opt(str('Tool to call, as "workload.tool_name".')),
  arguments: Opt(rawObject('Arguments (templates on first-level strings).')),
  condition: Opt(str('Template; the step runs when it is true.')),
  dependsOn: Opt(stringList('Steps that must finish first.')),
  onError: Opt(StepErrorHandling),
  message: Opt(str('Elicitation message.')),
  schema: Opt(rawObject('Elicitation JSON Schema.')),
  timeout: Opt(duration('Step timeout.')),
  onDecline: Opt(ElicitationResponse),
  onCancel: Opt(ElicitationResponse),
  defaultResults: Opt(rawObject('Output used when the step is skipped.')),
  collection: Opt(str('forEach: template giving the items.')),
  itemVar: Opt(str('forEach: variable name of the item (default item).')),
  maxParallel: Opt(Type.Integer({ minimum: 1, description: 'forEach: parallel iterations (default 10).' })),
  maxIterations: Opt(
    Type.Integer({ minimum: 1, maximum: 1000, description: 'forEach: iterations at most (default 100).' }),
  ),
};

export const WorkflowStepSchema = Type.Object(
  { ...stepFields, step: Opt(rawObject('forEach: the inner tool step.')) },
  { description: 'One step of the workflow.' },
);

export const CompositeToolSpecSchema = Type.Object(
  {
    name: str('Name of the composite tool.', { minLength: 1 }),
    description: Opt(str('Description of the tool.')),
    parameters: Opt(rawObject('JSON Schema of the tool input.')),
    timeout: Opt(duration('Timeout of the whole workflow.')),
    steps: Type.Array(WorkflowStepSchema, { minItems: 1, description: 'Steps of the workflow.' }),
    output: Opt(rawObject('Output of the tool: properties (templates) and required.')),
    annotations: Opt(ToolAnnotationsOverrideSchema),
  },
  { description: 'A composite tool (workflow) of a virtual MCP server.' },
);

export const MCP_COMPOSITE_TOOL_DEFINITION = defineKind({
  kind: 'VirtualMCPCompositeToolDefinition',
  plural: 'virtualmcpcompositetooldefinitions',
  shortNames: ['vmcpctd', 'compositetool'],
  description: 'VirtualMCPCompositeToolDefinition is a composite tool that VirtualMCPServers reference.',
  spec: CompositeToolSpecSchema,
  status: Type.Object(
    {
      validationStatus: Opt(enumOf(['Valid', 'Invalid', 'Unknown'] as const, 'Validation state.')),
      validationErrors: Opt(Type.Array(Type.String(), { 'x-kubernetes-list-type': 'atomic' })),
      referencingVirtualServers: Opt(
        Type.Array(Type.String(), {
          description: 'VirtualMCPServers that reference this tool.',
          'x-kubernetes-list-type': 'set',
        }),
      ),
      observedGeneration: Opt(Type.Integer({ format: 'int64' })),
      conditions: conditions(),
    },
    { description: 'Observed state.' },
  ),
  printerColumns: [
    column('Workflow', '.spec.name'),
    column('Status', '.status.validationStatus'),
    AGE_COLUMN,
    conditionColumn('Ready'),
  ],
});
