/**
 * Composite tools at config load: `compositeTools[]` checked and compiled before anything
 * runs, with the reference's rules (unique step ids, known `dependsOn` targets, no cycles,
 * type-specific fields, retry bounds, forEach limits, `defaultResults` for fields of a step
 * that may be skipped) and more: every template is parsed here (`template.ts`), a template may
 * only read steps that run before it (its step's transitive `dependsOn`), and a field that
 * has no effect on a step's type is refused instead of ignored. Every problem is a 400
 * `invalid_config` that names the composite tool and the step.
 */
import { goDurationMs, SkepError } from '../../../shared/index.js';
import type { VmcpConfig } from '../../../schemas/index.js';

type CompositeToolConfig = NonNullable<VmcpConfig['compositeTools']>[number];
type WorkflowStepConfig = CompositeToolConfig['steps'][number];
type InnerStepConfig = NonNullable<WorkflowStepConfig['step']>;
type OutputConfig = NonNullable<CompositeToolConfig['output']>;
type CompositeAnnotations = NonNullable<CompositeToolConfig['annotations']>;
import { parseTemplate, type Template, TEMPLATE_ROOTS } from './template.js';

/** Limits, with their units (the reference's values). */
export const COMPOSITE_LIMITS = {
  defaultWorkflowTimeoutMs: 30 * 60_000,
  defaultStepTimeoutMs: 5 * 60_000,
  maxRetryCount: 10,
  defaultRetryDelayMs: 1000,
  /** Exponential backoff is capped at this multiple of `retryDelay` (the reference's 60×). */
  maxRetryDelayFactor: 60,
  defaultMaxParallel: 10,
  defaultMaxIterations: 100,
  maxIterations: 1000,
  /** The DAG runs at most this many independent steps at once. */
  maxParallelSteps: 10,
} as const;

/** An argument value: templates in strings, at any depth (as the reference's expander does). */
export type ArgTree =
  | { readonly k: 'tpl'; readonly t: Template }
  | { readonly k: 'lit'; readonly v: unknown }
  | { readonly k: 'obj'; readonly entries: ReadonlyArray<readonly [string, ArgTree]> }
  | { readonly k: 'arr'; readonly items: readonly ArgTree[] };

export interface OnError {
  readonly action: 'abort' | 'continue' | 'retry';
  readonly retryCount: number;
  readonly retryDelayMs: number;
}

export interface ToolCallSpec {
  /** As written: an advertised name, or `workload.tool_name`. */
  readonly tool: string;
  readonly arguments: ArgTree | undefined;
  readonly onError: OnError;
  readonly timeoutMs: number;
}

export type ElicitationAction = 'skip_remaining' | 'abort' | 'continue';

export interface CompiledStep {
  readonly id: string;
  /** `compositeTools[i].steps[j]`, for messages. */
  readonly where: string;
  readonly type: 'tool' | 'elicitation' | 'forEach';
  readonly dependsOn: readonly string[];
  readonly condition: Template | undefined;
  readonly defaultResults: Record<string, unknown> | undefined;
  readonly timeoutMs: number;
  readonly onError: OnError;
  /** tool steps; the forEach's inner call. */
  readonly call: ToolCallSpec | undefined;
  readonly message: Template | undefined;
  readonly schema: Record<string, unknown> | undefined;
  readonly onDecline: ElicitationAction | undefined;
  readonly onCancel: ElicitationAction | undefined;
  readonly collection: Template | undefined;
  readonly itemVar: string;
  readonly maxParallel: number;
  readonly maxIterations: number;
}

export interface OutputProperty {
  readonly type: 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array';
  readonly description: string | undefined;
  readonly value: Template | undefined;
  readonly properties: ReadonlyMap<string, OutputProperty> | undefined;
  readonly default: unknown;
  readonly hasDefault: boolean;
}

export interface CompiledOutput {
  readonly properties: ReadonlyMap<string, OutputProperty>;
  readonly required: readonly string[];
  /** The advertised `outputSchema`. */
  readonly schema: Record<string, unknown>;
}

export interface CompiledComposite {
  readonly name: string;
  readonly where: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
  readonly timeoutMs: number;
  /** In declaration order. */
  readonly steps: readonly CompiledStep[];
  readonly output: CompiledOutput | undefined;
  readonly annotations: CompositeAnnotations | undefined;
  /** Every tool reference a step makes, with the step that makes it. */
  readonly toolRefs: ReadonlyArray<{ readonly step: string; readonly tool: string }>;
}

const TOOL_REF = /^[a-zA-Z0-9][a-zA-Z0-9._-]*$/;

function invalid(message: string): SkepError {
  return new SkepError('invalid_config', message);
}

function durationOf(text: string | undefined, field: string): number | undefined {
  if (text === undefined) return undefined;
  const ms = goDurationMs(text) ?? 0;
  if (!(ms > 0)) throw invalid(`${field} must be a positive duration such as "30s" (got "${text}")`);
  return ms;
}

function compileArgs(value: unknown, where: string, roots: ReadonlySet<string>): ArgTree {
  if (typeof value === 'string') {
    const t = parseTemplate(value, where, roots);
    return t.isStatic ? { k: 'lit', v: value } : { k: 'tpl', t };
  }
  if (Array.isArray(value))
    return { k: 'arr', items: value.map((v, i) => compileArgs(v, `${where}[${i}]`, roots)) };
  if (typeof value === 'object' && value !== null)
    return {
      k: 'obj',
      entries: Object.entries(value).map(([k, v]) => [k, compileArgs(v, `${where}.${k}`, roots)] as const),
    };
  return { k: 'lit', v: value };
}

/** The templates of an argument tree. */
export function argTemplates(tree: ArgTree | undefined, out: Template[] = []): Template[] {
  if (tree === undefined) return out;
  if (tree.k === 'tpl') out.push(tree.t);
  else if (tree.k === 'arr') for (const i of tree.items) argTemplates(i, out);
  else if (tree.k === 'obj') for (const [, v] of tree.entries) argTemplates(v, out);
  return out;
}

function onErrorOf(
  raw: WorkflowStepConfig['onError'],
  where: string,
  failureMode: 'abort' | 'continue',
): OnError {
  if (raw === undefined) return { action: failureMode, retryCount: 0, retryDelayMs: 0 };
  if (raw.retryCount !== undefined && raw.maxRetries !== undefined && raw.retryCount !== raw.maxRetries)
    throw invalid(`${where}.onError: retryCount and maxRetries are the same setting; give one`);
  const count = raw.retryCount ?? raw.maxRetries ?? 0;
  const action = raw.action ?? 'abort';
  // `retry` retries, then aborts (the reference's rule). With `abort` or `continue`, a retry
  // count (what the reference's example files write: `action: abort, maxRetries: 2`) retries
  // first, then aborts or continues; the reference drops it.
  if (action === 'retry' && count < 1)
    throw invalid(`${where}.onError.retryCount must be at least 1 when action is retry`);
  if (count > COMPOSITE_LIMITS.maxRetryCount)
    throw invalid(
      `${where}.onError.retryCount must be at most ${COMPOSITE_LIMITS.maxRetryCount} (got ${count})`,
    );
  if (count === 0 && raw.retryDelay !== undefined)
    throw invalid(`${where}.onError.retryDelay has no effect without retries; set retryCount or remove it`);
  return {
    action,
    retryCount: count,
    retryDelayMs:
      count === 0
        ? 0
        : (durationOf(raw.retryDelay, `${where}.onError.retryDelay`) ?? COMPOSITE_LIMITS.defaultRetryDelayMs),
  };
}

function refuseForeign(step: WorkflowStepConfig | InnerStepConfig, type: string, where: string): void {
  const allowed: Record<string, readonly string[]> = {
    tool: ['tool', 'arguments', 'onError'],
    elicitation: ['message', 'schema', 'onDecline', 'onCancel'],
    forEach: ['collection', 'itemVar', 'maxParallel', 'maxIterations', 'step', 'onError'],
  };
  const specific = new Set(Object.values(allowed).flat());
  for (const key of Object.keys(step)) {
    if (specific.has(key) && !(allowed[type] ?? []).includes(key))
      throw invalid(`${where}.${key} has no effect on a step of type "${type}"; remove it`);
  }
}

function checkToolRef(tool: string | undefined, where: string): string {
  if (tool === undefined || tool === '') throw invalid(`${where}.tool is required when type is tool`);
  if (!TOOL_REF.test(tool))
    throw invalid(`${where}.tool "${tool}" is not a tool name (an advertised name or "workload.tool_name")`);
  return tool;
}

function checkSchemaObject(value: Record<string, unknown> | undefined, where: string): void {
  if (value === undefined) return;
  if (value['type'] !== 'object')
    throw invalid(
      `${where} must be a JSON Schema of type "object" (got type ${JSON.stringify(value['type'])})`,
    );
  const props = value['properties'];
  if (props !== undefined && (typeof props !== 'object' || props === null || Array.isArray(props)))
    throw invalid(`${where}.properties must be an object`);
}

function compileOutputProps(
  props: Record<string, unknown>,
  where: string,
  templates: Template[],
): Map<string, OutputProperty> {
  const out = new Map<string, OutputProperty>();
  for (const [name, rawProp] of Object.entries(props)) {
    const w = `${where}.${name}`;
    const p = rawProp as Record<string, unknown>;
    const type = p['type'];
    if (
      typeof type !== 'string' ||
      !['string', 'integer', 'number', 'boolean', 'object', 'array'].includes(type)
    )
      throw invalid(`${w}.type must be one of string, integer, number, boolean, object, array`);
    for (const k of Object.keys(p))
      if (!['type', 'description', 'value', 'properties', 'default'].includes(k))
        throw invalid(
          `${w}.${k} is not an output property field (type, description, value, properties, default)`,
        );
    const value = p['value'];
    const nested = p['properties'];
    if (value !== undefined && typeof value !== 'string')
      throw invalid(`${w}.value must be a template string`);
    if ((value === undefined) === (nested === undefined))
      throw invalid(`${w} needs exactly one of value (a template) and properties (nested fields)`);
    if (nested !== undefined && type !== 'object')
      throw invalid(`${w}.properties needs type "object" (got "${type}")`);
    let tpl: Template | undefined;
    if (typeof value === 'string') {
      tpl = parseTemplate(value, `${w}.value`);
      templates.push(tpl);
    }
    const description = p['description'];
    out.set(name, {
      type: type as OutputProperty['type'],
      description: typeof description === 'string' ? description : undefined,
      value: tpl,
      properties:
        nested === undefined
          ? undefined
          : compileOutputProps(nested as Record<string, unknown>, `${w}.properties`, templates),
      default: p['default'],
      hasDefault: 'default' in p,
    });
  }
  return out;
}

function outputSchemaOf(
  props: ReadonlyMap<string, OutputProperty>,
  required?: readonly string[],
): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const [name, p] of props) {
    const s: Record<string, unknown> = { type: p.type };
    if (p.description !== undefined) s['description'] = p.description;
    if (p.properties !== undefined) Object.assign(s, outputSchemaOf(p.properties));
    properties[name] = s;
  }
  const schema: Record<string, unknown> = { type: 'object', properties };
  if (required !== undefined && required.length > 0) schema['required'] = [...required];
  return schema;
}

function compileOutput(
  raw: OutputConfig | undefined,
  where: string,
  templates: Template[],
): CompiledOutput | undefined {
  if (raw === undefined) return undefined;
  const properties = compileOutputProps(raw.properties, `${where}.properties`, templates);
  if (properties.size === 0) throw invalid(`${where}.properties must define at least one property`);
  const required = raw.required ?? [];
  for (const r of required)
    if (!properties.has(r)) throw invalid(`${where}.required names "${r}", which is not an output property`);
  return { properties, required, schema: outputSchemaOf(properties, required) };
}

/** Checks and compiles one composite tool; `where` is e.g. `vmcp.compositeTools[0]`. */
export function compileComposite(raw: CompositeToolConfig, where: string): CompiledComposite {
  const w = `${where} (${raw.name})`;
  if (raw.description === undefined || raw.description.trim() === '')
    throw invalid(`${w}.description is required: it is what the model reads`);
  if (raw.parameters !== undefined) checkSchemaObject(raw.parameters, `${w}.parameters`);
  const failureMode = raw.failureMode ?? 'abort';
  const ids = new Map<string, number>();
  for (const [i, s] of raw.steps.entries()) {
    if (!/^[A-Za-z_][A-Za-z0-9_-]*$/.test(s.id))
      throw invalid(
        `${w}.steps[${i}].id "${s.id}" must start with a letter or _ and hold letters, digits, _ and -`,
      );
    if (ids.has(s.id)) throw invalid(`${w}.steps[${i}].id "${s.id}" is used by steps[${ids.get(s.id)}] too`);
    ids.set(s.id, i);
  }
  const plainRoots = new Set<string>(TEMPLATE_ROOTS.filter((r) => r !== 'forEach'));
  const steps: CompiledStep[] = [];
  const stepTemplates = new Map<string, Template[]>();
  const toolRefs: Array<{ step: string; tool: string }> = [];
  for (const [i, s] of raw.steps.entries()) {
    const sw = `${w}.steps[${i}] (${s.id})`;
    if (s.type === undefined && s.tool !== undefined && s.message !== undefined)
      throw invalid(`${sw} has both tool and message: set type to say which it is`);
    const type = s.type ?? 'tool';
    refuseForeign(s, type, sw);
    for (const d of s.dependsOn ?? []) {
      if (d === s.id) throw invalid(`${sw}.dependsOn names the step itself`);
      if (!ids.has(d)) throw invalid(`${sw}.dependsOn names unknown step "${d}"`);
    }
    const templates: Template[] = [];
    const condition = s.condition === undefined ? undefined : parseTemplate(s.condition, `${sw}.condition`);
    if (condition !== undefined) templates.push(condition);
    const onError = onErrorOf(s.onError, sw, failureMode);
    const timeoutMs = durationOf(s.timeout, `${sw}.timeout`) ?? COMPOSITE_LIMITS.defaultStepTimeoutMs;
    let call: ToolCallSpec | undefined;
    let message: Template | undefined;
    let collection: Template | undefined;
    if (type === 'tool') {
      const tool = checkToolRef(s.tool, sw);
      const args =
        s.arguments === undefined ? undefined : compileArgs(s.arguments, `${sw}.arguments`, plainRoots);
      templates.push(...argTemplates(args));
      call = { tool, arguments: args, onError, timeoutMs };
      toolRefs.push({ step: s.id, tool });
    } else if (type === 'elicitation') {
      if (s.message === undefined || s.message === '')
        throw invalid(`${sw}.message is required when type is elicitation`);
      message = parseTemplate(s.message, `${sw}.message`);
      templates.push(message);
      checkSchemaObject(s.schema, `${sw}.schema`);
    } else {
      if (s.collection === undefined || s.collection === '')
        throw invalid(`${sw}.collection is required for a forEach step (a template giving a JSON array)`);
      collection = parseTemplate(s.collection, `${sw}.collection`);
      templates.push(collection);
      const inner = s.step;
      if (inner === undefined)
        throw invalid(`${sw}.step is required for a forEach step (the tool call per item)`);
      const iw = `${sw}.step`;
      const innerType = inner.type ?? 'tool';
      if (innerType !== 'tool') throw invalid(`${iw}.type must be "tool" (got "${innerType}")`);
      for (const key of [
        'dependsOn',
        'condition',
        'defaultResults',
        'message',
        'schema',
        'onDecline',
        'onCancel',
      ] as const)
        if (inner[key] !== undefined)
          throw invalid(`${iw}.${key} has no effect on a forEach's inner step; remove it`);
      const itemVar = s.itemVar ?? 'item';
      if (itemVar === 'index')
        throw invalid(`${sw}.itemVar cannot be "index" (reserved for the iteration number)`);
      const tool = checkToolRef(inner.tool, iw);
      const roots = new Set<string>(TEMPLATE_ROOTS);
      const args =
        inner.arguments === undefined ? undefined : compileArgs(inner.arguments, `${iw}.arguments`, roots);
      for (const t of argTemplates(args)) {
        templates.push(t);
      }
      call = {
        tool,
        arguments: args,
        onError: onErrorOf(inner.onError, iw, 'abort'),
        timeoutMs: durationOf(inner.timeout, `${iw}.timeout`) ?? timeoutMs,
      };
      toolRefs.push({ step: s.id, tool });
    }
    stepTemplates.set(s.id, templates);
    steps.push({
      id: s.id,
      where: sw,
      type,
      dependsOn: [...new Set(s.dependsOn ?? [])],
      condition,
      defaultResults: s.defaultResults,
      timeoutMs,
      onError,
      call,
      message,
      schema: s.schema,
      onDecline: s.onDecline?.action,
      onCancel: s.onCancel?.action,
      collection,
      itemVar: s.itemVar ?? 'item',
      maxParallel:
        s.maxParallel !== undefined && s.maxParallel > 0
          ? s.maxParallel
          : COMPOSITE_LIMITS.defaultMaxParallel,
      maxIterations:
        s.maxIterations !== undefined && s.maxIterations > 0
          ? s.maxIterations
          : COMPOSITE_LIMITS.defaultMaxIterations,
    });
  }
  const upstream = checkGraph(steps, w);
  // A template reads only steps that finished before it runs: its step's transitive dependsOn.
  for (const s of steps) {
    const before = upstream.get(s.id)!;
    for (const t of stepTemplates.get(s.id) ?? []) {
      for (const ref of t.refs.steps) {
        if (!ids.has(ref)) throw invalid(`${t.where} reads .steps.${ref}, and there is no step "${ref}"`);
        if (!before.has(ref))
          throw invalid(
            `${t.where} reads .steps.${ref}, which is not upstream of step "${s.id}": add "${ref}" to its dependsOn (directly or through another step)`,
          );
      }
    }
  }
  const outputTemplates: Template[] = [];
  const output = compileOutput(raw.output, `${w}.output`, outputTemplates);
  for (const t of outputTemplates)
    for (const ref of t.refs.steps)
      if (!ids.has(ref)) throw invalid(`${t.where} reads .steps.${ref}, and there is no step "${ref}"`);
  // A step that may be skipped (a condition, or onError continue) needs defaults for what others read of it.
  const skippable = new Map(
    steps
      .filter((s) => s.condition !== undefined || s.onError.action === 'continue')
      .map((s) => [s.id, new Set(Object.keys(s.defaultResults ?? {}))]),
  );
  const reading: Array<[string, Template]> = [
    ...steps.flatMap((s) => (stepTemplates.get(s.id) ?? []).map((t) => [s.id, t] as [string, Template])),
    ...outputTemplates.map((t) => ['output', t] as [string, Template]),
  ];
  for (const [reader, t] of reading) {
    for (const [id, field] of t.refs.outputFields) {
      const defaults = skippable.get(id);
      if (defaults !== undefined && !defaults.has(field))
        throw invalid(
          `${w}.steps[${ids.get(id)}] (${id}).defaultResults.${field} is required: the step may be skipped and ${reader === 'output' ? 'the output' : `step "${reader}"`} reads its output.${field}`,
        );
    }
  }
  return {
    name: raw.name,
    where: w,
    description: raw.description,
    inputSchema: raw.parameters ?? { type: 'object', properties: {} },
    timeoutMs: durationOf(raw.timeout, `${w}.timeout`) ?? COMPOSITE_LIMITS.defaultWorkflowTimeoutMs,
    steps,
    output,
    annotations: raw.annotations,
    toolRefs,
  };
}

/** Refuses cycles (naming them); returns each step's transitive dependencies. */
function checkGraph(steps: readonly CompiledStep[], where: string): Map<string, Set<string>> {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const state = new Map<string, 'visiting' | 'done'>();
  const up = new Map<string, Set<string>>();
  const visit = (id: string, path: string[]): Set<string> => {
    const st = state.get(id);
    if (st === 'done') return up.get(id)!;
    if (st === 'visiting') {
      const cycle = [...path.slice(path.indexOf(id)), id];
      throw invalid(`${where}.steps: dependsOn forms a cycle: ${cycle.join(' → ')} (step "${id}")`);
    }
    state.set(id, 'visiting');
    const all = new Set<string>();
    for (const d of byId.get(id)!.dependsOn) {
      all.add(d);
      for (const x of visit(d, [...path, id])) all.add(x);
    }
    state.set(id, 'done');
    up.set(id, all);
    return all;
  };
  for (const s of steps) visit(s.id, []);
  return up;
}

/** All of `compositeTools[]`; names must be unique. */
export function compileComposites(
  list: readonly CompositeToolConfig[] | undefined,
  what: string,
): CompiledComposite[] {
  const out: CompiledComposite[] = [];
  const names = new Map<string, number>();
  for (const [i, raw] of (list ?? []).entries()) {
    if (names.has(raw.name))
      throw invalid(
        `${what}.compositeTools[${i}].name "${raw.name}" is used by compositeTools[${names.get(raw.name)}] too`,
      );
    names.set(raw.name, i);
    out.push(compileComposite(raw, `${what}.compositeTools[${i}]`));
  }
  return out;
}
