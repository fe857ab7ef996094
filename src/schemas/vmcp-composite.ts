/**
 * The virtual MCP server's composite tools (the reference's `CompositeToolConfig`, "workflows")
 * and code mode (`CodeModeConfig`): the shapes of `compositeTools[]`, `compositeToolRefs[]` and
 * `codeMode` in the vMCP configuration, with the reference's camelCase field names. What the
 * shapes cannot say (unique step ids, dependency cycles, templates, limits) is checked by
 * `src/dataplane/vmcp/composite/definition.ts` at config load.
 */
import { type Static, Type } from 'typebox';
import { Opt, Str, Strs } from './shorthand.js';

const Closed = { additionalProperties: false } as const;
const Loose = () => Type.Record(Type.String(), Type.Unknown());
/** A Go duration string ("30s", "1m30s", "500ms"), the reference's format. */
const Duration = () =>
  Type.String({
    pattern: '^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$',
    description: 'Go duration, e.g. "30s".',
  });

export const CompositeAnnotationsSchema = Type.Object(
  {
    title: Opt(Str()),
    readOnlyHint: Opt(Type.Boolean()),
    destructiveHint: Opt(Type.Boolean()),
    idempotentHint: Opt(Type.Boolean()),
    openWorldHint: Opt(Type.Boolean()),
  },
  Closed,
);

const OnErrorSchema = Type.Object(
  {
    action: Opt(Type.Union([Type.Literal('abort'), Type.Literal('continue'), Type.Literal('retry')])),
    retryCount: Opt(Type.Integer({ minimum: 0 })),
    /** What the reference's own example files write for `retryCount`; read as its alias. */
    maxRetries: Opt(Type.Integer({ minimum: 0 })),
    retryDelay: Opt(Duration()),
  },
  Closed,
);

const ElicitationResponseSchema = Type.Object(
  {
    action: Type.Union([Type.Literal('skip_remaining'), Type.Literal('abort'), Type.Literal('continue')]),
  },
  Closed,
);

/** The fields every step kind shares (a forEach's inner `step` has these only). */
const stepFields = {
  id: Type.String({ minLength: 1 }),
  type: Opt(Type.Union([Type.Literal('tool'), Type.Literal('elicitation'), Type.Literal('forEach')])),
  tool: Opt(Type.String({ description: 'A backend tool: its advertised name, or "workload.tool_name".' })),
  arguments: Opt(Loose()),
  condition: Opt(Str()),
  dependsOn: Opt(Strs()),
  onError: Opt(OnErrorSchema),
  message: Opt(Str()),
  schema: Opt(Loose()),
  timeout: Opt(Duration()),
  onDecline: Opt(ElicitationResponseSchema),
  onCancel: Opt(ElicitationResponseSchema),
  defaultResults: Opt(Loose()),
};

export const InnerStepSchema = Type.Object(
  {
    ...stepFields,
    // The inner step of a forEach needs no id of its own (the reference requires none).
    id: Opt(Type.String()),
  },
  Closed,
);

export const WorkflowStepSchema = Type.Object(
  {
    ...stepFields,
    collection: Opt(Str()),
    itemVar: Opt(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' })),
    maxParallel: Opt(Type.Integer({ minimum: 0, maximum: 50 })),
    maxIterations: Opt(Type.Integer({ minimum: 0, maximum: 1000 })),
    step: Opt(InnerStepSchema),
  },
  Closed,
);

export interface OutputPropertyShape {
  type: string;
  description?: string;
  value?: string;
  properties?: Record<string, OutputPropertyShape>;
  default?: unknown;
}

const OutputLeafSchema = Type.Object(
  {
    type: Type.Union(
      ['string', 'integer', 'number', 'boolean', 'object', 'array'].map((t) => Type.Literal(t)),
    ),
    description: Opt(Str()),
    value: Opt(Str()),
    properties: Opt(Type.Record(Type.String(), Loose())),
    default: Opt(Type.Unknown()),
  },
  Closed,
);

export const OutputConfigSchema = Type.Object(
  {
    properties: Type.Record(Type.String(), OutputLeafSchema),
    required: Opt(Strs()),
  },
  Closed,
);

export const CompositeToolSchema = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    description: Opt(Str()),
    parameters: Opt(Loose()),
    timeout: Opt(Duration()),
    steps: Type.Array(WorkflowStepSchema, { minItems: 1, maxItems: 100 }),
    output: Opt(OutputConfigSchema),
    annotations: Opt(CompositeAnnotationsSchema),
    /**
     * What the reference's own example files write (`abort` stops at the first failure,
     * `continue` runs every step it can); the reference drops it. Here a step without its own
     * `onError` follows it.
     */
    failureMode: Opt(Type.Union([Type.Literal('abort'), Type.Literal('continue')])),
  },
  Closed,
);

export const CodeModeSchema = Type.Object(
  {
    enabled: Opt(Type.Boolean()),
    stepLimit: Opt(Type.Integer({ minimum: 1 })),
    parallelMaxConcurrency: Opt(Type.Integer({ minimum: 1 })),
    toolCallTimeout: Opt(Duration()),
  },
  Closed,
);

export type CompositeToolConfig = Static<typeof CompositeToolSchema>;
export type WorkflowStepConfig = Static<typeof WorkflowStepSchema>;
export type InnerStepConfig = Static<typeof InnerStepSchema>;
export type OutputConfig = Static<typeof OutputConfigSchema>;
export type CompositeAnnotations = Static<typeof CompositeAnnotationsSchema>;
export type CodeModeConfig = Static<typeof CodeModeSchema>;
