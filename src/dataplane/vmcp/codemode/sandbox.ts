/**
 * Code mode's script sandbox: the virtual tool `execute_tool_script` runs a model's script that
 * calls several tools and returns one result (the reference runs Starlark). Here the language is
 * JavaScript, run by QuickJS compiled to WebAssembly (`quickjs-emscripten`): a maintained engine,
 * a real sandbox (the script's heap is the WASM instance's own memory; no `require`, `process`,
 * `fetch`, timers or file system exist in it), with a memory limit and an interrupt hook. No
 * maintained Starlark interpreter exists on npm; JavaScript is also what models write best.
 *
 * The script is the body of an async function: each listed tool is a function taking one
 * arguments object and returning a promise of its result (`structuredContent`, else the text
 * parsed as JSON when it is JSON, else the text); `call_tool(name, args)` calls any listed tool
 * by name; `parallel([() => ..., ...])` runs functions at most `parallelMaxConcurrency` at once
 * and resolves with their results in order; `data`'s entries are variables. `return` gives the
 * result. Limits: `stepLimit` (QuickJS checks for interruption about once per 10,000 backward
 * jumps and calls; the script stops after `stepLimit / 10,000` checks, rounded up), the
 * wall-clock bound (one minute), the heap (64 MiB), and each tool call's `toolCallTimeout`.
 * A tool call's error result becomes an exception in the script.
 */
import type { QuickJSContext, QuickJSDeferredPromise, QuickJSHandle } from 'quickjs-emscripten';
import { CODE_MODE_DEFAULTS, type CodeModeSettings } from './config.js';

type Obj = Record<string, unknown>;

export const EXECUTE_TOOL_SCRIPT = 'execute_tool_script';

/** QuickJS decrements its interrupt counter once per backward jump or call, from this value. */
const OPS_PER_INTERRUPT_CHECK = 10_000;

export interface ScriptTool {
  readonly name: string;
  readonly description: string;
}

export interface ScriptHost {
  /** Calls a listed tool; resolves with the MCP result, rejects when it cannot be called. */
  call(
    name: string,
    args: Obj,
    signal: AbortSignal,
  ): Promise<{ isError?: boolean; content?: unknown[]; structuredContent?: Obj }>;
}

/** A JavaScript identifier for a tool name (`osv.query-x` → `osv_query_x`). */
export function identifierOf(name: string): string {
  const id = name.replace(/[^A-Za-z0-9_$]/g, '_');
  return /^[0-9]/.test(id) ? `_${id}` : id;
}

/** The virtual tool as `tools/list` shows it: the language and the functions in its description. */
export function scriptToolDefinition(tools: readonly ScriptTool[], settings: CodeModeSettings): Obj {
  const lines = tools.map((t) => {
    const d = t.description.length > 80 ? `${t.description.slice(0, 77)}...` : t.description;
    return `  - ${identifierOf(t.name)}(args)${identifierOf(t.name) === t.name ? '' : ` [tool "${t.name}"]`}: ${d}`;
  });
  return {
    name: EXECUTE_TOOL_SCRIPT,
    description: [
      'Execute a JavaScript script (ES2023, run in a QuickJS sandbox with no I/O: no require, fetch, timers or files) that orchestrates several tool calls and returns one aggregated result. The script is the body of an async function: use await, and return the result.',
      '',
      'Available tools (each takes one arguments object and returns a promise of its result: the structured content, else the text parsed as JSON when it is JSON, else the text; a tool error throws):',
      ...lines,
      '',
      'call_tool("name", {args}) calls a listed tool by its name.',
      `parallel([() => tool_a({...}), () => tool_b({...})]) runs the functions concurrently (at most ${settings.parallelMaxConcurrency} at once) and resolves with their results in order.`,
      "Entries of the 'data' argument are available as variables.",
      `Limits: about ${settings.stepLimit} steps, ${CODE_MODE_DEFAULTS.scriptTimeoutMs / 1000} s, ${CODE_MODE_DEFAULTS.memoryLimitBytes / 1024 / 1024} MiB, ${settings.toolCallTimeoutMs / 1000} s per tool call.`,
    ].join('\n'),
    inputSchema: {
      type: 'object',
      properties: {
        script: {
          type: 'string',
          description:
            'The body of an async JavaScript function; call tools with await and return the result.',
          examples: [
            'const results = await parallel(data.pkgs.map((p) => () => osv_query({ package: p })));\nreturn { checked: results.length, vulnerable: results.filter((r) => r.vulns) };',
          ],
        },
        data: { type: 'object', description: 'Named values, available in the script as variables.' },
      },
      required: ['script'],
    },
    annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true },
  };
}

function valueOf(result: { content?: unknown[]; structuredContent?: Obj }): unknown {
  if (result.structuredContent !== undefined) return result.structuredContent;
  const texts = (result.content ?? [])
    .filter((c): c is { type: 'text'; text: string } => (c as Obj)['type'] === 'text')
    .map((c) => c.text);
  const text = texts.join('');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The script's prelude: `parallel` with its concurrency bound, the tool functions, the data variables. */
function prelude(tools: readonly ScriptTool[], data: Obj, maxConcurrency: number): string {
  const taken = new Set(['call_tool', 'parallel', '__call', ...tools.map((t) => identifierOf(t.name))]);
  const fns = tools
    .map(
      (t) =>
        `const ${identifierOf(t.name)} = (args) => __call(${JSON.stringify(t.name)}, args === undefined ? {} : args);`,
    )
    .join('\n');
  const vars = Object.keys(data)
    .filter((k) => /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(k) && k !== 'data' && !taken.has(k))
    .map((k) => `const ${k} = data[${JSON.stringify(k)}];`)
    .join('\n');
  return `
const call_tool = (name, args) => __call(String(name), args === undefined ? {} : args);
const parallel = async (fns) => {
  if (!Array.isArray(fns)) throw new TypeError('parallel takes an array of functions');
  const out = new Array(fns.length);
  let next = 0;
  const worker = async () => { while (next < fns.length) { const i = next++; out[i] = await fns[i](); } };
  await Promise.all(Array.from({ length: Math.min(${maxConcurrency}, fns.length) }, worker));
  return out;
};
${fns}
${vars}
`;
}

export interface ScriptOutcome {
  readonly ok: boolean;
  readonly value?: unknown;
  readonly error?: string;
}

/** Runs one script; never throws for the script's own failures (they are `ok: false`). */
export async function runScript(
  source: string,
  data: Obj,
  tools: readonly ScriptTool[],
  settings: CodeModeSettings,
  host: ScriptHost,
  signal: AbortSignal,
  /** The wall-clock bound; the reference's fixed minute unless a caller (a test) needs less. */
  scriptTimeoutMs: number = CODE_MODE_DEFAULTS.scriptTimeoutMs,
): Promise<ScriptOutcome> {
  const { getQuickJS } = await import('quickjs-emscripten');
  const QuickJS = await getQuickJS();
  const runtime = QuickJS.newRuntime();
  runtime.setMemoryLimit(CODE_MODE_DEFAULTS.memoryLimitBytes);
  runtime.setMaxStackSize(1024 * 1024);
  const maxChecks = Math.max(1, Math.ceil(settings.stepLimit / OPS_PER_INTERRUPT_CHECK));
  const deadline = Date.now() + scriptTimeoutMs;
  const pastTime = `the script ran past its time limit (${scriptTimeoutMs / 1000} s)`;
  let checks = 0;
  let stop: string | undefined;
  runtime.setInterruptHandler(() => {
    checks++;
    if (checks > maxChecks) stop ??= `the script passed its stepLimit (${settings.stepLimit} steps)`;
    else if (Date.now() > deadline) stop ??= pastTime;
    else if (signal.aborted) stop ??= 'the call was cancelled';
    return stop !== undefined;
  });
  const vm: QuickJSContext = runtime.newContext();
  const calls = new AbortController();
  const onAbort = () => calls.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  const pending = new Set<QuickJSDeferredPromise>();
  let dead = false;
  const drive = () => {
    if (dead) return;
    const r = runtime.executePendingJobs();
    if (r.error !== undefined) r.error.dispose();
  };
  const call = vm.newFunction('__call', (nameH: QuickJSHandle, argsH: QuickJSHandle) => {
    const name = vm.getString(nameH);
    const args = vm.dump(argsH) as unknown;
    const deferred = vm.newPromise();
    pending.add(deferred);
    const settle = (fn: (d: QuickJSDeferredPromise) => void) => {
      if (dead) return;
      pending.delete(deferred);
      fn(deferred);
      deferred.dispose();
      drive();
    };
    const bad = typeof args !== 'object' || args === null || Array.isArray(args);
    const running = bad
      ? Promise.reject(new Error(`${name}: the arguments must be an object`))
      : host.call(name, args as Obj, calls.signal);
    running.then(
      (result) =>
        settle((d) => {
          if (result.isError === true) {
            const text = JSON.stringify(valueOf(result));
            const e = vm.newError({ name: 'ToolError', message: `${name} failed: ${text}` });
            d.reject(e);
            e.dispose();
            return;
          }
          const json = vm.evalCode(`(${JSON.stringify(JSON.stringify(valueOf(result) ?? null))})`);
          const str = vm.unwrapResult(json);
          const parsed = vm.evalCode('JSON.parse');
          const parse = vm.unwrapResult(parsed);
          const value = vm.unwrapResult(vm.callFunction(parse, vm.undefined, str));
          d.resolve(value);
          value.dispose();
          parse.dispose();
          str.dispose();
        }),
      (err: unknown) =>
        settle((d) => {
          const e = vm.newError({ name: 'ToolError', message: (err as Error).message });
          d.reject(e);
          e.dispose();
        }),
    );
    return deferred.handle;
  });
  vm.setProp(vm.global, '__call', call);
  call.dispose();
  const dataHandle = vm.unwrapResult(vm.evalCode(`(${JSON.stringify(JSON.stringify(data))})`));
  const dataParsed = vm.unwrapResult(vm.evalCode(`JSON.parse`));
  const dataValue = vm.unwrapResult(vm.callFunction(dataParsed, vm.undefined, dataHandle));
  vm.setProp(vm.global, 'data', dataValue);
  dataValue.dispose();
  dataParsed.dispose();
  dataHandle.dispose();

  let timer: NodeJS.Timeout | undefined;
  try {
    const evaluated = vm.evalCode(
      `(async () => {\n${prelude(tools, data, settings.parallelMaxConcurrency)}\nreturn await (async () => {\n${source}\n})();\n})()`,
      'script.js',
    );
    if (evaluated.error !== undefined) {
      const e = vm.dump(evaluated.error) as Obj;
      evaluated.error.dispose();
      return { ok: false, error: stop ?? describe(e) };
    }
    const settled = vm.resolvePromise(evaluated.value);
    evaluated.value.dispose();
    drive();
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), Math.max(0, deadline - Date.now()));
    });
    const aborted = new Promise<'aborted'>((resolve) => {
      if (signal.aborted) resolve('aborted');
      signal.addEventListener('abort', () => resolve('aborted'), { once: true });
    });
    const outcome = await Promise.race([settled, timeout, aborted]);
    if (outcome === 'timeout') return { ok: false, error: pastTime };
    if (outcome === 'aborted') return { ok: false, error: 'the call was cancelled' };
    if (outcome.error !== undefined) {
      const e = vm.dump(outcome.error) as Obj;
      outcome.error.dispose();
      return { ok: false, error: stop ?? describe(e) };
    }
    const value = vm.dump(outcome.value) as unknown;
    outcome.value.dispose();
    return { ok: true, value };
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
    calls.abort();
    dead = true;
    for (const d of pending) d.dispose();
    pending.clear();
    vm.dispose();
    runtime.dispose();
  }
}

function describe(e: Obj | unknown): string {
  if (typeof e === 'object' && e !== null) {
    const o = e as Obj;
    const where =
      typeof o['stack'] === 'string' ? ` (${o['stack'].trim().split('\n')[0]?.trim() ?? ''})` : '';
    return `${String(o['name'] ?? 'Error')}: ${String(o['message'] ?? '')}${where}`;
  }
  return String(e);
}
