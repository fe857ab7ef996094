/**
 * Running one composite tool call (the reference's workflow engine): the steps form a DAG and
 * run as soon as their `dependsOn` are done, independent ones in parallel (at most
 * `COMPOSITE_LIMITS.maxParallelSteps` at once); a step's `condition` false skips it (its
 * output is its `defaultResults`); `onError` aborts, continues (output `defaultResults`) or
 * retries with exponential backoff from `retryDelay`; a step's and the tool's `timeout`
 * bound them; elicitation steps ask the client (`onDecline` / `onCancel`); forEach steps call
 * their inner tool per item, at most `maxParallel` at once. The output is built from
 * `output`'s templates, else it is the last step's result.
 *
 * Differences from the reference, on purpose: `skip_remaining` really skips the steps that
 * have not started (the reference records the answer and runs them anyway); an authorization
 * denial of an inner call is never retried; without `output`, the last step's own result
 * (its content as the backend sent it) is returned instead of a JSON rendering of it; the
 * "last step" is the last one in declaration order that completed.
 *
 * Telemetry: the run is a `workflow <name>` span under the request's span (the runtime's
 * `span`); elicitation and forEach steps are `workflow.step <id>` spans under it, with their
 * outcome. A tool step's span is its inner call's own (the pipeline traces it like a direct
 * call), made under the run's span; a forEach's inner calls are made under the step's span.
 */
import { NO_SPAN, type WorkSpan } from '../../middleware/telemetry/index.js';
import {
  COMPOSITE_LIMITS,
  type ArgTree,
  type CompiledComposite,
  type CompiledStep,
  type ElicitationAction,
  type OutputProperty,
  type ToolCallSpec,
} from './definition.js';
import { printValue, renderErrorMessage, type Template, type TemplateData } from './template.js';

export type Obj = Record<string, unknown>;

/** A tool result as MCP carries it. */
export interface ToolResult {
  content?: unknown[];
  structuredContent?: Obj;
  isError?: boolean;
  [key: string]: unknown;
}

/** Why an inner call failed before reaching a result: `denied` is never retried. */
export class InnerCallError extends Error {
  constructor(
    readonly kind: 'denied' | 'unavailable' | 'timeout' | 'not_found' | 'cancelled' | 'failed',
    message: string,
  ) {
    super(message);
  }
}

export interface InnerCall {
  readonly stepId: string;
  /** The tool reference as the step wrote it. */
  readonly tool: string;
  readonly arguments: Obj;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
  /** forEach iteration number. */
  readonly iteration?: number;
  /** W3C `traceparent` of the span the call is made in (the run's, or its forEach step's). */
  readonly traceparent?: string;
}

export interface ElicitAnswer {
  action: 'accept' | 'decline' | 'cancel';
  content?: Obj;
}

/** What the engine needs from the session running it. */
export interface CompositeRuntime {
  /** Calls a backend tool with the same admission (authorization, audit) as a direct call. */
  callTool(call: InnerCall): Promise<ToolResult>;
  /** The tool's input schema, to coerce expanded string arguments to their declared types. */
  inputSchemaOf(tool: string): Obj | undefined;
  /** Asks the client; rejects with `ElicitationUnsupported` when it cannot be asked. */
  elicit(stepId: string, message: string, schema: Obj, signal: AbortSignal): Promise<ElicitAnswer>;
  /** Step progress, when the client asked for progress. */
  progress?(done: number, total: number, message: string): void;
  /** Told when a step ends (for logs). */
  stepEnded?(stepId: string, status: StepStatus, ms: number): void;
  /** The span of the request the run serves (telemetry): the run's span is its child. */
  readonly span?: WorkSpan;
}

export class ElicitationUnsupported extends Error {}

export type StepStatus = 'completed' | 'failed' | 'skipped';

interface StepState {
  status: StepStatus;
  output: Obj | undefined;
  content: Obj;
  result: ToolResult | undefined;
  error: string | undefined;
}

class StepFailure extends Error {
  constructor(
    readonly stepId: string,
    message: string,
  ) {
    super(message);
  }
}

/** The reference's view of a content array: `text`, `text_1`, ..., `image_0`, `resource`. */
export function contentToMap(content: unknown): Obj {
  const out: Obj = {};
  if (!Array.isArray(content)) return out;
  let text = 0;
  let image = 0;
  let resource = 0;
  for (const c of content as Obj[]) {
    if (c['type'] === 'text') {
      out[text === 0 ? 'text' : `text_${text}`] = c['text'];
      text++;
    } else if (c['type'] === 'image') {
      out[`image_${image++}`] = c['data'];
    } else if (c['type'] === 'resource') {
      const r = (c['resource'] ?? {}) as Obj;
      out[resource === 0 ? 'resource' : `resource_${resource}`] = r['text'] ?? r['blob'];
      resource++;
    }
  }
  return out;
}

function errorText(result: ToolResult): string {
  for (const c of (result.content ?? []) as Obj[])
    if (c['type'] === 'text' && typeof c['text'] === 'string' && c['text'] !== '') return c['text'];
  const s = result.structuredContent;
  for (const k of ['error', 'message', 'text']) {
    const v = s?.[k];
    if (typeof v === 'string' && v !== '') return v;
  }
  return 'tool execution error';
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new InnerCallError('cancelled', 'cancelled'));
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new InnerCallError('cancelled', 'cancelled'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Expanded string values take the type the tool's input schema declares (the reference coerces too). */
function coerce(args: Obj, schema: Obj | undefined): Obj {
  const props = schema?.['properties'];
  if (typeof props !== 'object' || props === null) return args;
  const out: Obj = {};
  for (const [k, v] of Object.entries(args)) {
    const type = ((props as Obj)[k] as Obj | undefined)?.['type'];
    out[k] = typeof v === 'string' ? coerceString(v, type) : v;
  }
  return out;
}

function coerceString(v: string, type: unknown): unknown {
  switch (type) {
    case 'number':
    case 'integer': {
      const n = Number(v);
      return v.trim() !== '' && Number.isFinite(n) && (type === 'number' || Number.isInteger(n)) ? n : v;
    }
    case 'boolean':
      return v === 'true' ? true : v === 'false' ? false : v;
    case 'object':
    case 'array':
      try {
        const parsed = JSON.parse(v) as unknown;
        return type === 'array'
          ? Array.isArray(parsed)
            ? parsed
            : v
          : typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
            ? parsed
            : v;
      } catch {
        return v;
      }
    default:
      return v;
  }
}

function expand(tree: ArgTree | undefined, data: TemplateData): unknown {
  if (tree === undefined) return {};
  switch (tree.k) {
    case 'lit':
      return tree.v;
    case 'tpl':
      try {
        return tree.t.render(data);
      } catch (err) {
        throw new Error(renderErrorMessage(err, tree.t.where), { cause: err });
      }
    case 'arr':
      return tree.items.map((i) => expand(i, data));
    case 'obj':
      return Object.fromEntries(tree.entries.map(([k, v]) => [k, expand(v, data)]));
  }
}

function render(t: Template, data: TemplateData): string {
  try {
    return t.render(data);
  } catch (err) {
    throw new Error(renderErrorMessage(err, t.where), { cause: err });
  }
}

/** Runs `def` with `params`; resolves with the MCP tool result (failures are tool errors). */
export async function runComposite(
  def: CompiledComposite,
  params: Obj,
  runtime: CompositeRuntime,
  signal: AbortSignal,
): Promise<ToolResult> {
  return new Run(def, params, runtime, signal).run();
}

class Run {
  readonly #def: CompiledComposite;
  readonly #params: Obj;
  readonly #rt: CompositeRuntime;
  readonly #abort = new AbortController();
  readonly #states = new Map<string, StepState>();
  readonly #started = Date.now();
  readonly #id = `wf-${Math.random().toString(36).slice(2, 10)}`;
  #skipRest = false;
  #done = 0;
  /** The run's span, once `run` opened it. */
  #span: WorkSpan = NO_SPAN;

  constructor(def: CompiledComposite, params: Obj, rt: CompositeRuntime, outer: AbortSignal) {
    this.#def = def;
    this.#params = withDefaults(def.inputSchema, params);
    this.#rt = rt;
    if (outer.aborted) this.#abort.abort();
    else
      outer.addEventListener(
        'abort',
        () => this.#abort.abort(new InnerCallError('cancelled', 'the call was cancelled')),
        { once: true },
      );
  }

  #data(forEach?: Obj): TemplateData {
    const steps: Obj = {};
    for (const [id, s] of this.#states)
      steps[id] = Object.assign(
        { status: s.status, output: s.output, content: s.content },
        s.error === undefined ? {} : { error: s.error },
      );
    const data: TemplateData = {
      params: this.#params,
      steps,
      workflow: {
        id: this.#id,
        start_time: new Date(this.#started).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        duration_ms: Date.now() - this.#started,
        step_count: this.#def.steps.length,
        status: 'running',
      },
      timestamp: new Date(this.#started).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    };
    return forEach === undefined ? data : Object.assign(data, { forEach });
  }

  /** Runs the steps and builds the output inside the run's span, which ends with the outcome. */
  run(): Promise<ToolResult> {
    const attributes = {
      'workflow.name': this.#def.name,
      'workflow.id': this.#id,
      'workflow.step_count': this.#def.steps.length,
    };
    return (this.#rt.span ?? NO_SPAN).run(`workflow ${this.#def.name}`, attributes, async (span) => {
      this.#span = span;
      const result = await this.#execute();
      span.set('workflow.status', result.isError === true ? 'failed' : 'completed');
      if (result.isError === true) span.fail(errorText(result));
      return result;
    });
  }

  async #execute(): Promise<ToolResult> {
    const timer = setTimeout(
      () =>
        this.#abort.abort(
          new InnerCallError('timeout', `the composite tool's timeout (${this.#def.timeoutMs} ms) passed`),
        ),
      this.#def.timeoutMs,
    );
    try {
      await this.#dag();
    } catch (err) {
      const reason = this.#abort.signal.reason as unknown;
      if (reason instanceof InnerCallError && reason.kind === 'timeout')
        return failure(`Workflow execution timeout exceeded: ${reason.message}`);
      if (reason instanceof InnerCallError && reason.kind === 'cancelled') throw reason;
      return failure(`Workflow execution failed: ${(err as Error).message}`);
    } finally {
      clearTimeout(timer);
      this.#abort.abort();
    }
    try {
      return this.#output();
    } catch (err) {
      return failure(`Workflow execution failed: output: ${(err as Error).message}`);
    }
  }

  /** Starts every ready step, at most `maxParallelSteps` at once, until all are done or one aborts. */
  async #dag(): Promise<void> {
    const steps = this.#def.steps;
    const pending = new Set(steps.map((s) => s.id));
    const running = new Map<string, Promise<void>>();
    let failure: Error | undefined;
    while (pending.size > 0 || running.size > 0) {
      if (failure === undefined && !this.#abort.signal.aborted) {
        for (const s of steps) {
          if (running.size >= COMPOSITE_LIMITS.maxParallelSteps) break;
          if (!pending.has(s.id)) continue;
          if (this.#skipRest) {
            pending.delete(s.id);
            this.#record(s, {
              status: 'skipped',
              output: s.defaultResults,
              content: {},
              result: undefined,
              error: undefined,
            });
            continue;
          }
          if (!s.dependsOn.every((d) => this.#states.has(d))) continue;
          pending.delete(s.id);
          const p = this.#step(s).then(
            () => {
              running.delete(s.id);
            },
            (err: unknown) => {
              running.delete(s.id);
              failure ??= err as Error;
              this.#abort.abort(new StepFailure(s.id, (err as Error).message));
            },
          );
          running.set(s.id, p);
        }
      }
      if (running.size === 0) {
        if (failure !== undefined) throw failure;
        if (this.#abort.signal.aborted) throw new Error('stopped');
        if (pending.size > 0 && !this.#skipRest)
          throw new Error('no step can start (unreachable: the graph was checked at load)');
        if (pending.size === 0) break;
        continue;
      }
      await Promise.race(running.values());
    }
    if (failure !== undefined) throw failure;
  }

  #record(s: CompiledStep, state: StepState, startedAt = performance.now()): void {
    this.#states.set(s.id, state);
    this.#done++;
    this.#rt.stepEnded?.(s.id, state.status, performance.now() - startedAt);
    this.#rt.progress?.(this.#done, this.#def.steps.length, `step ${s.id} ${state.status}`);
  }

  /**
   * A step; an elicitation or forEach step in a span of its own, with its status (a failure the
   * run continues after is still the step's Error).
   */
  #step(s: CompiledStep): Promise<void> {
    if (s.type === 'tool') return this.#stepBody(s, this.#span);
    const attributes = { 'workflow.step.id': s.id, 'workflow.step.type': s.type };
    return this.#span.run(`workflow.step ${s.id}`, attributes, async (span) => {
      try {
        await this.#stepBody(s, span);
      } catch (err) {
        span.set('workflow.step.status', 'failed');
        throw err;
      }
      const state = this.#states.get(s.id);
      span.set('workflow.step.status', state?.status ?? 'failed');
      if (state?.status === 'failed') span.fail(state.error ?? 'failed');
    });
  }

  async #stepBody(s: CompiledStep, span: WorkSpan): Promise<void> {
    const t0 = performance.now();
    const signal = this.#abort.signal;
    if (s.condition !== undefined) {
      const text = render(s.condition, this.#data()).trim();
      const yes = ['true', 'True', 'TRUE'].includes(text);
      const no = ['false', 'False', 'FALSE'].includes(text);
      if (!yes && !no)
        throw new StepFailure(s.id, `step ${s.id}: condition must give true or false, got "${text}"`);
      if (no) {
        this.#record(
          s,
          { status: 'skipped', output: s.defaultResults, content: {}, result: undefined, error: undefined },
          t0,
        );
        return;
      }
    }
    try {
      if (s.type === 'tool') {
        const result = await this.#callWithRetry(s.id, s.call!, this.#data(), signal, s.timeoutMs, span);
        const output = result.structuredContent ?? contentToMap(result.content);
        this.#record(
          s,
          { status: 'completed', output, content: contentToMap(result.content), result, error: undefined },
          t0,
        );
      } else if (s.type === 'elicitation') {
        await this.#elicitation(s, signal, t0, span);
      } else {
        await this.#forEach(s, signal, t0, span);
      }
    } catch (err) {
      if (signal.aborted) throw err;
      const message = (err as Error).message;
      if (s.onError.action === 'continue' && !(err instanceof InnerCallError && err.kind === 'denied')) {
        this.#record(
          s,
          { status: 'failed', output: s.defaultResults, content: {}, result: undefined, error: message },
          t0,
        );
        return;
      }
      this.#states.set(s.id, {
        status: 'failed',
        output: undefined,
        content: {},
        result: undefined,
        error: message,
      });
      this.#rt.stepEnded?.(s.id, 'failed', performance.now() - t0);
      throw new StepFailure(s.id, message.startsWith('step ') ? message : `step ${s.id}: ${message}`);
    }
  }

  async #callOnce(
    stepId: string,
    call: ToolCallSpec,
    data: TemplateData,
    signal: AbortSignal,
    timeoutMs: number,
    span: WorkSpan,
    iteration?: number,
  ): Promise<ToolResult> {
    const expanded = expand(call.arguments, data);
    const args = coerce((expanded ?? {}) as Obj, this.#rt.inputSchemaOf(call.tool));
    const result = await this.#rt.callTool(
      Object.assign(
        { stepId, tool: call.tool, arguments: args, timeoutMs, signal },
        iteration === undefined ? {} : { iteration },
        span.traceparent === undefined ? {} : { traceparent: span.traceparent },
      ),
    );
    if (result.isError === true)
      throw new InnerCallError('failed', `tool ${call.tool} failed: ${errorText(result)}`);
    return result;
  }

  async #callWithRetry(
    stepId: string,
    call: ToolCallSpec,
    data: TemplateData,
    signal: AbortSignal,
    timeoutMs: number,
    span: WorkSpan,
    iteration?: number,
  ): Promise<ToolResult> {
    const tries = call.onError.retryCount + 1;
    let delay = call.onError.retryDelayMs;
    const cap = call.onError.retryDelayMs * COMPOSITE_LIMITS.maxRetryDelayFactor;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#callOnce(stepId, call, data, signal, timeoutMs, span, iteration);
      } catch (err) {
        if (
          signal.aborted ||
          attempt >= tries ||
          (err instanceof InnerCallError && (err.kind === 'denied' || err.kind === 'not_found'))
        ) {
          if (attempt > 1 && !signal.aborted) (err as Error).message += ` (after ${attempt} attempts)`;
          throw err;
        }
        await sleep(delay, signal);
        delay = Math.min(delay * 2, cap);
      }
    }
  }

  async #elicitation(s: CompiledStep, signal: AbortSignal, t0: number, span: WorkSpan): Promise<void> {
    const message = render(s.message!, this.#data());
    const stepAbort = new AbortController();
    const onAbort = () => stepAbort.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(
      () => stepAbort.abort(new InnerCallError('timeout', 'elicitation timed out')),
      s.timeoutMs,
    );
    let answer: ElicitAnswer;
    try {
      answer = await this.#rt.elicit(
        s.id,
        message,
        s.schema ?? { type: 'object', properties: {} },
        stepAbort.signal,
      );
    } catch (err) {
      if (signal.aborted) throw err;
      if (err instanceof ElicitationUnsupported)
        throw new StepFailure(s.id, `step ${s.id} of composite tool ${this.#def.name}: ${err.message}`);
      if (stepAbort.signal.aborted)
        answer = { action: 'cancel' }; // a timeout counts as a cancel (the reference's rule)
      else throw err;
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    }
    span.set('workflow.step.action', answer.action);
    if (answer.action === 'accept') {
      this.#record(
        s,
        {
          status: 'completed',
          output: { action: 'accept', content: answer.content ?? {} },
          content: {},
          result: undefined,
          error: undefined,
        },
        t0,
      );
      return;
    }
    const handler: ElicitationAction | undefined = answer.action === 'decline' ? s.onDecline : s.onCancel;
    const verb = answer.action === 'decline' ? 'declined' : 'cancelled';
    if (handler === undefined || handler === 'abort')
      throw new StepFailure(s.id, `step ${s.id}: the user ${verb} the elicitation`);
    if (handler === 'skip_remaining') this.#skipRest = true;
    this.#record(
      s,
      {
        status: 'completed',
        output: Object.assign(
          { action: answer.action },
          handler === 'skip_remaining' ? { skipped: true } : {},
        ),
        content: {},
        result: undefined,
        error: undefined,
      },
      t0,
    );
  }

  async #forEach(s: CompiledStep, signal: AbortSignal, t0: number, span: WorkSpan): Promise<void> {
    const text = render(s.collection!, this.#data());
    let items: unknown;
    try {
      items = JSON.parse(text);
    } catch {
      items = undefined;
    }
    if (!Array.isArray(items))
      throw new StepFailure(
        s.id,
        `step ${s.id}: collection must give a JSON array, got "${text.length > 100 ? `${text.slice(0, 100)}...` : text}"`,
      );
    span.set('workflow.step.iterations', items.length);
    if (items.length > s.maxIterations)
      throw new StepFailure(
        s.id,
        `step ${s.id}: collection has ${items.length} items, more than maxIterations ${s.maxIterations}`,
      );
    const keepGoing = s.onError.action === 'continue';
    const results: Obj[] = new Array<Obj>(items.length);
    const iterAbort = new AbortController();
    const onAbort = () => iterAbort.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    let next = 0;
    let firstError: Error | undefined;
    const worker = async () => {
      while (next < items.length && !iterAbort.signal.aborted) {
        const i = next++;
        const item: unknown = items[i];
        try {
          const result = await this.#callWithRetry(
            s.id,
            s.call!,
            this.#data({ [s.itemVar]: item, index: i }),
            iterAbort.signal,
            s.call!.timeoutMs,
            span,
            i,
          );
          results[i] = {
            index: i,
            item,
            status: 'completed',
            output: result.structuredContent ?? contentToMap(result.content),
          };
        } catch (err) {
          results[i] = { index: i, item, status: 'failed', output: null, error: (err as Error).message };
          if (!keepGoing || (err instanceof InnerCallError && err.kind === 'denied')) {
            firstError ??= new StepFailure(s.id, `step ${s.id} iteration ${i}: ${(err as Error).message}`);
            iterAbort.abort();
          }
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(s.maxParallel, items.length) }, worker));
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
    if (firstError !== undefined) throw firstError;
    const iterations = results.map(
      (r, i) => r ?? { index: i, item: items[i], status: 'cancelled', output: null },
    );
    const completed = iterations.filter((r) => r['status'] === 'completed').length;
    span.set('workflow.step.completed', completed);
    span.set('workflow.step.failed', items.length - completed);
    this.#record(
      s,
      {
        status: 'completed',
        output: { iterations, count: items.length, completed, failed: items.length - completed },
        content: {},
        result: undefined,
        error: undefined,
      },
      t0,
    );
  }

  #output(): ToolResult {
    const out = this.#def.output;
    if (out === undefined) {
      for (let i = this.#def.steps.length - 1; i >= 0; i--) {
        const st = this.#states.get(this.#def.steps[i]!.id);
        if (st === undefined || st.status !== 'completed') continue;
        if (st.result !== undefined) {
          const r: ToolResult = { content: st.result.content ?? [] };
          if (st.result.structuredContent !== undefined) r.structuredContent = st.result.structuredContent;
          return r;
        }
        const value = st.output ?? {};
        return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value };
      }
      return { content: [{ type: 'text', text: '{}' }], structuredContent: {} };
    }
    const data = this.#data();
    const value = buildProps(out.properties, data, '');
    for (const r of out.required)
      if (value[r] === undefined || value[r] === null)
        throw new Error(`required output field "${r}" is missing`);
    return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value };
  }
}

function failure(text: string): ToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

function buildProps(props: ReadonlyMap<string, OutputProperty>, data: TemplateData, prefix: string): Obj {
  const out: Obj = {};
  for (const [name, p] of props) out[name] = buildProp(p, data, `${prefix}${name}`);
  return out;
}

function buildProp(p: OutputProperty, data: TemplateData, name: string): unknown {
  if (p.properties !== undefined) return buildProps(p.properties, data, `${name}.`);
  let text: string;
  try {
    text = p.value!.render(data);
  } catch (err) {
    if (p.hasDefault) return p.default;
    throw new Error(`property ${name}: ${renderErrorMessage(err, p.value!.where)}`, { cause: err });
  }
  if (text === '<no value>' && p.hasDefault) return p.default;
  const typed = coerceOutput(text, p.type);
  if (typed === undefined) {
    if (p.hasDefault) return p.default;
    throw new Error(
      `property ${name}: "${text.length > 80 ? `${text.slice(0, 80)}...` : text}" is not a ${p.type}`,
    );
  }
  return typed;
}

function coerceOutput(text: string, type: OutputProperty['type']): unknown {
  switch (type) {
    case 'string':
      return text;
    case 'integer': {
      const n = Number(text);
      return text.trim() !== '' && Number.isInteger(n) ? n : undefined;
    }
    case 'number': {
      const n = Number(text);
      return text.trim() !== '' && Number.isFinite(n) ? n : undefined;
    }
    case 'boolean':
      return ['true', 'TRUE', 'True', '1', 't', 'T'].includes(text)
        ? true
        : ['false', 'FALSE', 'False', '0', 'f', 'F'].includes(text)
          ? false
          : undefined;
    case 'object':
    case 'array': {
      try {
        const v = JSON.parse(text) as unknown;
        if (type === 'array') return Array.isArray(v) ? v : undefined;
        return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : undefined;
      } catch {
        return undefined;
      }
    }
  }
}

/** Fills the input schema's top-level `default`s for parameters the caller left out (as the reference does). */
function withDefaults(schema: Obj, params: Obj): Obj {
  const props = schema['properties'];
  if (typeof props !== 'object' || props === null) return params;
  const out: Obj = Object.assign({}, params);
  for (const [k, p] of Object.entries(props as Obj)) {
    if (out[k] === undefined && typeof p === 'object' && p !== null && 'default' in p)
      out[k] = (p as Obj)['default'];
  }
  return out;
}

export { printValue };
