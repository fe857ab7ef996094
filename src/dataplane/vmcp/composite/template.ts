/**
 * The subset of Go's `text/template` language that the reference's composite tools use for
 * step arguments, conditions, elicitation messages, forEach collections and output values
 * (ToolHive expands them with Go's `text/template` and the functions `json`, `quote`,
 * `fromJson` besides Go's builtins). Parsed once, at config load: a syntax error, an unknown
 * function or an unknown root (`.params`, `.steps`, `.forEach`, `.workflow`, `.timestamp` are
 * known) is an `invalid_config` naming the template and the line:column — never a call-time
 * failure. Rendering only meets data problems (a field of a string, `fromJson` of bad JSON).
 *
 * Supported: text and `{{ }}` actions with `{{-`/`-}}` trimming and `{{/* comments *\/}}`;
 * field chains (`.params.x`, `.steps.id.output.y`, `$.params.x`, `(expr).field`); string
 * (interpreted and raw), number, `true`/`false`/`nil` literals; parentheses; pipes `a | f`;
 * `if` / `else if` / `else` / `end`; the functions `eq ne lt le gt ge and or not len index
 * printf print json quote fromJson`. Not supported (refused at load with the position):
 * `range`, `with`, `define`, `template`, `block`, variables other than `$`.
 *
 * Printing follows Go: a missing map key prints `<no value>`, a JSON null `<nil>`. Deliberate
 * differences: objects and arrays print as JSON (Go prints `map[k:v]`), and the comparison
 * functions compare any two numbers (Go refuses `gt <float64> 100` as incompatible types).
 */
import { SkepError } from '../../../shared/index.js';

type Value = unknown;

/** What templates see (the reference's template context). */
export interface TemplateData {
  readonly params: Record<string, unknown>;
  readonly steps: Record<string, unknown>;
  readonly workflow: Record<string, unknown>;
  /** Skep extension: the composite call's start time, RFC 3339 (the reference prints `<no value>`). */
  readonly timestamp: string;
  readonly forEach?: Record<string, unknown>;
}

export const TEMPLATE_ROOTS = ['params', 'steps', 'workflow', 'timestamp', 'forEach'] as const;

type Expr =
  | { k: 'field'; base: Expr | undefined; path: string[]; pos: number }
  | { k: 'lit'; v: Value }
  | { k: 'call'; fn: string; args: Expr[]; pos: number }
  | { k: 'pipe'; cmds: Expr[]; pos: number };

type Node =
  | { k: 'text'; text: string }
  | { k: 'out'; e: Expr }
  | { k: 'if'; branches: Array<{ cond: Expr; body: Node[] }>; otherwise: Node[] };

const FUNCTIONS = new Set([
  'eq',
  'ne',
  'lt',
  'le',
  'gt',
  'ge',
  'and',
  'or',
  'not',
  'len',
  'index',
  'printf',
  'print',
  'json',
  'quote',
  'fromJson',
]);
const UNSUPPORTED_KEYWORDS = new Set(['range', 'with', 'define', 'template', 'block', 'break', 'continue']);

/** The step ids a template reads (`.steps.<id>`, `index .steps "<id>"`) and the roots it uses. */
export interface TemplateRefs {
  readonly steps: ReadonlySet<string>;
  readonly roots: ReadonlySet<string>;
  /** `.steps.<id>.output.<field>` reads, as `[id, field]`. */
  readonly outputFields: ReadonlyArray<readonly [string, string]>;
}

export class Template {
  constructor(
    readonly source: string,
    readonly where: string,
    readonly refs: TemplateRefs,
    readonly isStatic: boolean,
    private readonly nodes: Node[],
  ) {}

  render(data: TemplateData): string {
    if (this.isStatic) return this.source;
    const out: string[] = [];
    renderNodes(this.nodes, data, out, this.where);
    return out.join('');
  }
}

class ParseError extends Error {
  constructor(
    readonly pos: number,
    message: string,
  ) {
    super(message);
  }
}

function lineCol(source: string, pos: number): string {
  let line = 1;
  let col = 1;
  for (let i = 0; i < pos && i < source.length; i++) {
    if (source[i] === '\n') {
      line++;
      col = 1;
    } else col++;
  }
  return `${line}:${col}`;
}

/**
 * Parses a template. `where` names it in errors (e.g. `compositeTools[0].steps[1].arguments.url`);
 * `roots` are the roots it may read (`.forEach` only inside a forEach's inner step).
 */
export function parseTemplate(
  source: string,
  where: string,
  roots: ReadonlySet<string> = new Set(TEMPLATE_ROOTS.filter((r) => r !== 'forEach')),
): Template {
  const steps = new Set<string>();
  const usedRoots = new Set<string>();
  const outputFields: Array<readonly [string, string]> = [];
  const refs = { steps, roots: usedRoots, outputFields };
  if (!source.includes('{{')) return new Template(source, where, refs, true, []);
  try {
    const p = new Parser(source, steps, usedRoots, roots, outputFields);
    const nodes = p.parseAll();
    return new Template(source, where, refs, false, nodes);
  } catch (err) {
    if (err instanceof ParseError)
      throw new SkepError(
        'invalid_config',
        `${where}: template error at ${lineCol(source, err.pos)}: ${err.message} (in "${clip(source)}")`,
      );
    throw err;
  }
}

function clip(s: string): string {
  const one = s.replace(/\s+/g, ' ');
  return one.length > 120 ? `${one.slice(0, 117)}...` : one;
}

type Tok =
  | { t: 'field'; path: string[]; pos: number }
  | { t: 'dollar'; path: string[]; pos: number }
  | { t: 'ident'; v: string; pos: number }
  | { t: 'str'; v: string; pos: number }
  | { t: 'num'; v: number; pos: number }
  | { t: 'lparen'; pos: number }
  | { t: 'rparen'; pos: number; path: string[] }
  | { t: 'pipe'; pos: number }
  | { t: 'assign'; pos: number };

class Parser {
  readonly #src: string;
  readonly #steps: Set<string>;
  readonly #used: Set<string>;
  readonly #allowed: ReadonlySet<string>;
  readonly #outputFields: Array<readonly [string, string]>;

  constructor(
    src: string,
    steps: Set<string>,
    used: Set<string>,
    allowed: ReadonlySet<string>,
    outputFields: Array<readonly [string, string]>,
  ) {
    this.#outputFields = outputFields;
    this.#src = src;
    this.#steps = steps;
    this.#used = used;
    this.#allowed = allowed;
  }

  /** Splits text and actions, then builds the if/else tree. */
  parseAll(): Node[] {
    const items: Array<{ text: string } | { action: Tok[]; pos: number; word: string }> = [];
    const src = this.#src;
    let i = 0;
    let trimNext = false;
    while (i < src.length) {
      const open = src.indexOf('{{', i);
      let text = open === -1 ? src.slice(i) : src.slice(i, open);
      if (trimNext) text = text.replace(/^\s+/, '');
      trimNext = false;
      if (open === -1) {
        if (text !== '') items.push({ text });
        break;
      }
      let start = open + 2;
      if (src.startsWith('- ', start) || src.startsWith('-\t', start) || src.startsWith('-\n', start)) {
        text = text.replace(/\s+$/, '');
        start += 2;
      }
      if (text !== '') items.push({ text });
      const close = this.#findClose(start);
      let end = close;
      if (close - 2 >= start && /\s-$/.test(src.slice(close - 2, close))) {
        end = close - 2;
        trimNext = true;
      }
      const inner = src.slice(start, end);
      i = close + 2;
      if (/^\s*\/\*[\s\S]*\*\/\s*$/.test(inner)) continue;
      const toks = this.#lex(inner, start);
      if (toks.length === 0) throw new ParseError(open, 'missing value for command');
      const first = toks[0]!;
      const word = first.t === 'ident' ? first.v : '';
      items.push({ action: toks, pos: open, word });
    }
    let k = 0;
    const block = (inIf: boolean): { nodes: Node[]; stop: string; pos: number; rest: Tok[] } => {
      const nodes: Node[] = [];
      while (k < items.length) {
        const it = items[k++]!;
        if ('text' in it) {
          nodes.push({ k: 'text', text: it.text });
          continue;
        }
        if (UNSUPPORTED_KEYWORDS.has(it.word))
          throw new ParseError(it.pos, `"${it.word}" is not supported in composite tool templates`);
        if (it.word === 'end' || it.word === 'else') {
          if (!inIf) throw new ParseError(it.pos, `unexpected {{${it.word}}}`);
          return { nodes, stop: it.word, pos: it.pos, rest: it.action.slice(1) };
        }
        if (it.word === 'if') {
          const branches: Array<{ cond: Expr; body: Node[] }> = [];
          let cond = this.#pipeline(it.action.slice(1), it.pos);
          let otherwise: Node[] = [];
          for (;;) {
            const b = block(true);
            branches.push({ cond, body: b.nodes });
            if (b.stop === 'end') {
              if (b.rest.length > 0) throw new ParseError(b.pos, 'unexpected words after "end"');
              break;
            }
            // else
            if (b.rest.length > 0) {
              const r0 = b.rest[0]!;
              if (r0.t !== 'ident' || r0.v !== 'if')
                throw new ParseError(b.pos, 'only "else" or "else if" may follow');
              cond = this.#pipeline(b.rest.slice(1), b.pos);
              continue;
            }
            const last = block(true);
            if (last.stop !== 'end') throw new ParseError(last.pos, 'expected {{end}} after {{else}}');
            otherwise = last.nodes;
            break;
          }
          nodes.push({ k: 'if', branches, otherwise });
          continue;
        }
        nodes.push({ k: 'out', e: this.#pipeline(it.action, it.pos) });
      }
      if (inIf) throw new ParseError(this.#src.length, 'unexpected end of template: missing {{end}}');
      return { nodes, stop: '', pos: this.#src.length, rest: [] };
    };
    return block(false).nodes;
  }

  #findClose(from: number): number {
    const src = this.#src;
    let i = from;
    while (i < src.length) {
      const c = src[i]!;
      if (c === '"' || c === '`') {
        const q = c;
        i++;
        while (i < src.length && src[i] !== q) {
          if (q === '"' && src[i] === '\\') i++;
          i++;
        }
        if (i >= src.length) throw new ParseError(from, 'unterminated quoted string');
        i++;
        continue;
      }
      if (src.startsWith('}}', i)) return i;
      i++;
    }
    throw new ParseError(from - 2, 'unclosed action: missing "}}"');
  }

  #lex(text: string, base: number): Tok[] {
    const toks: Tok[] = [];
    let i = 0;
    const path = (): string[] => {
      const out: string[] = [];
      while (text[i] === '.' && /[A-Za-z_]/.test(text[i + 1] ?? '')) {
        i++;
        const m = /^[A-Za-z_][A-Za-z0-9_-]*/.exec(text.slice(i))!;
        out.push(m[0]);
        i += m[0].length;
      }
      return out;
    };
    while (i < text.length) {
      const c = text[i]!;
      const pos = base + i;
      if (/\s/.test(c)) {
        i++;
        continue;
      }
      if (c === '.') {
        if (!/[A-Za-z_]/.test(text[i + 1] ?? '')) {
          i++;
          toks.push({ t: 'field', path: [], pos });
          continue;
        }
        toks.push({ t: 'field', path: path(), pos });
        continue;
      }
      if (c === '$') {
        i++;
        if (/[A-Za-z0-9_]/.test(text[i] ?? ''))
          throw new ParseError(pos, 'template variables are not supported (only $ for the root)');
        toks.push({ t: 'dollar', path: path(), pos });
        continue;
      }
      if (c === '(') {
        toks.push({ t: 'lparen', pos });
        i++;
        continue;
      }
      if (c === ')') {
        i++;
        toks.push({ t: 'rparen', pos, path: path() });
        continue;
      }
      if (c === '|') {
        toks.push({ t: 'pipe', pos });
        i++;
        continue;
      }
      if (c === ':' && text[i + 1] === '=') throw new ParseError(pos, 'template variables are not supported');
      if (c === '=') throw new ParseError(pos, 'template variables are not supported');
      if (c === '"') {
        let j = i + 1;
        while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
        const lit = text.slice(i, j + 1);
        try {
          toks.push({ t: 'str', v: JSON.parse(lit) as string, pos });
        } catch {
          throw new ParseError(pos, `bad string literal ${lit}`);
        }
        i = j + 1;
        continue;
      }
      if (c === '`') {
        const j = text.indexOf('`', i + 1);
        toks.push({ t: 'str', v: text.slice(i + 1, j), pos });
        i = j + 1;
        continue;
      }
      const num = /^[-+]?(0x[0-9a-fA-F]+|[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?|\.[0-9]+)/.exec(text.slice(i));
      if (num !== null && (/[0-9.]/.test(c) || /[0-9.]/.test(text[i + 1] ?? ''))) {
        toks.push({ t: 'num', v: Number(num[0]), pos });
        i += num[0].length;
        continue;
      }
      const id = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i));
      if (id !== null) {
        toks.push({ t: 'ident', v: id[0], pos });
        i += id[0].length;
        continue;
      }
      throw new ParseError(pos, `unexpected "${c}" in action`);
    }
    return toks;
  }

  /** pipeline := command ('|' command)* */
  #pipeline(toks: Tok[], pos: number): Expr {
    if (toks.length === 0) throw new ParseError(pos, 'missing value for command');
    const cmds: Tok[][] = [[]];
    let depth = 0;
    for (const t of toks) {
      if (t.t === 'lparen') depth++;
      if (t.t === 'rparen') depth--;
      if (t.t === 'pipe' && depth === 0) cmds.push([]);
      else cmds[cmds.length - 1]!.push(t);
    }
    const exprs = cmds.map((c, i) => {
      if (c.length === 0) throw new ParseError(pos, 'missing command in pipeline');
      const e = this.#command(c, pos);
      if (i > 0 && e.k !== 'call')
        throw new ParseError(c[0]!.pos, 'a pipeline stage after "|" must be a function');
      return e;
    });
    return exprs.length === 1 ? exprs[0]! : { k: 'pipe', cmds: exprs, pos };
  }

  /** command := operand+ ; a first identifier is a function. */
  #command(toks: Tok[], pos: number): Expr {
    const operands: Expr[] = [];
    let fn: { name: string; pos: number } | undefined;
    let i = 0;
    while (i < toks.length) {
      const t = toks[i]!;
      if (t.t === 'lparen') {
        let depth = 1;
        let j = i + 1;
        while (j < toks.length && depth > 0) {
          const u = toks[j]!;
          if (u.t === 'lparen') depth++;
          if (u.t === 'rparen') depth--;
          j++;
        }
        if (depth !== 0) throw new ParseError(t.pos, 'unclosed "("');
        const close = toks[j - 1] as Extract<Tok, { t: 'rparen' }>;
        const inner = this.#pipeline(toks.slice(i + 1, j - 1), t.pos);
        operands.push(
          close.path.length > 0
            ? this.#field({ k: 'field', base: inner, path: close.path, pos: close.pos })
            : inner,
        );
        i = j;
        continue;
      }
      if (t.t === 'rparen') throw new ParseError(t.pos, 'unexpected ")"');
      if (t.t === 'ident') {
        if (t.v === 'true' || t.v === 'false') operands.push({ k: 'lit', v: t.v === 'true' });
        else if (t.v === 'nil') operands.push({ k: 'lit', v: null });
        else if (i === 0 && FUNCTIONS.has(t.v)) fn = { name: t.v, pos: t.pos };
        else if (UNSUPPORTED_KEYWORDS.has(t.v) || t.v === 'if' || t.v === 'else' || t.v === 'end')
          throw new ParseError(t.pos, `unexpected "${t.v}"`);
        else
          throw new ParseError(
            t.pos,
            `function "${t.v}" not defined (available: ${[...FUNCTIONS].join(', ')})`,
          );
        i++;
        continue;
      }
      if (t.t === 'str' || t.t === 'num') operands.push({ k: 'lit', v: t.v });
      else if (t.t === 'field')
        operands.push(this.#field({ k: 'field', base: undefined, path: t.path, pos: t.pos }));
      else if (t.t === 'dollar')
        operands.push(this.#field({ k: 'field', base: undefined, path: t.path, pos: t.pos }));
      else throw new ParseError(t.pos, 'unexpected token');
      i++;
    }
    if (fn === undefined) {
      if (operands.length !== 1)
        throw new ParseError(toks[1]?.pos ?? pos, "can't give an argument to a non-function");
      return operands[0]!;
    }
    const call: Expr = { k: 'call', fn: fn.name, args: operands, pos: fn.pos };
    this.#checkIndexOfSteps(call);
    return call;
  }

  /** Records what a root field chain reads, and refuses roots templates do not have. */
  #field(e: Extract<Expr, { k: 'field' }>): Expr {
    if (e.base !== undefined) return e;
    if (e.path.length === 0) {
      throw new ParseError(
        e.pos,
        'a bare "." or "$" is not allowed: name a root such as .params or .steps.<id>',
      );
    }
    const root = e.path[0]!;
    if (!this.#allowed.has(root))
      throw new ParseError(
        e.pos,
        root === 'forEach'
          ? '.forEach is only defined inside a forEach step'
          : `unknown root ".${root}" (available: ${[...this.#allowed].map((r) => `.${r}`).join(', ')})`,
      );
    this.#used.add(root);
    if (root === 'steps') {
      if (e.path.length < 2) (e as { stepsWhole?: boolean }).stepsWhole = true;
      else {
        this.#steps.add(e.path[1]!);
        if (e.path[2] === 'output' && e.path[3] !== undefined)
          this.#outputFields.push([e.path[1]!, e.path[3]]);
      }
    }
    return e;
  }

  /** `index .steps "id" ...` names its step; any other whole `.steps` is refused. */
  #checkIndexOfSteps(call: Extract<Expr, { k: 'call' }>): void {
    for (const [i, a] of call.args.entries()) {
      if (a.k !== 'field' || (a as { stepsWhole?: boolean }).stepsWhole !== true) continue;
      const next = call.args[i + 1];
      if (call.fn === 'index' && i === 0 && next?.k === 'lit' && typeof next.v === 'string') {
        this.#steps.add(next.v);
        continue;
      }
      throw new ParseError(a.pos, 'name the step: use .steps.<id> or index .steps "<id>"');
    }
  }
}

// ---------------------------------------------------------------- rendering

class RenderError extends Error {}

function renderNodes(nodes: Node[], data: TemplateData, out: string[], where: string): void {
  for (const n of nodes) {
    if (n.k === 'text') out.push(n.text);
    else if (n.k === 'out') out.push(printValue(evaluate(n.e, data, where)));
    else {
      const hit = n.branches.find((b) => truthy(evaluate(b.cond, data, where)));
      renderNodes(hit === undefined ? n.otherwise : hit.body, data, out, where);
    }
  }
}

/** Go's `fmt.Sprint` of a value, with JSON for objects and arrays. */
export function printValue(v: Value): string {
  if (v === undefined) return '<no value>';
  if (v === null) return '<nil>';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/** Go's template truth: false, 0, nil, and empty strings, arrays and maps are false. */
export function truthy(v: Value): boolean {
  if (v === undefined || v === null || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

function fieldOf(v: Value, key: string): Value {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'object' && !Array.isArray(v)) return (v as Record<string, unknown>)[key];
  throw new RenderError(`can't evaluate field ${key} in type ${Array.isArray(v) ? 'array' : typeof v}`);
}

function evaluate(e: Expr, data: TemplateData, where: string): Value {
  switch (e.k) {
    case 'lit':
      return e.v;
    case 'field': {
      let v: Value = e.base === undefined ? data : evaluate(e.base, data, where);
      for (const key of e.path) v = fieldOf(v, key);
      return v;
    }
    case 'call':
      return call(
        e.fn,
        e.args.map((a) => evaluate(a, data, where)),
      );
    case 'pipe': {
      let v = evaluate(e.cmds[0]!, data, where);
      for (const c of e.cmds.slice(1)) {
        const cc = c as Extract<Expr, { k: 'call' }>;
        v = call(cc.fn, [...cc.args.map((a) => evaluate(a, data, where)), v]);
      }
      return v;
    }
  }
}

function num(v: Value): number | undefined {
  return typeof v === 'number' ? v : undefined;
}

function compare(fn: string, a: Value, b: Value): boolean {
  const x = num(a);
  const y = num(b);
  if (x !== undefined && y !== undefined) {
    if (fn === 'lt') return x < y;
    if (fn === 'le') return x <= y;
    if (fn === 'gt') return x > y;
    return x >= y;
  }
  if (typeof a === 'string' && typeof b === 'string') {
    if (fn === 'lt') return a < b;
    if (fn === 'le') return a <= b;
    if (fn === 'gt') return a > b;
    return a >= b;
  }
  throw new RenderError(`${fn}: incompatible types for comparison (${typeName(a)} and ${typeName(b)})`);
}

function typeName(v: Value): string {
  if (v === undefined) return 'missing value';
  if (v === null) return 'nil';
  return Array.isArray(v) ? 'array' : typeof v;
}

function equal(a: Value, b: Value): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return (a ?? null) === (b ?? null);
  if (typeof a === 'object' || typeof b === 'object')
    throw new RenderError(`eq: cannot compare ${typeName(a)} and ${typeName(b)}`);
  return false;
}

function sprintf(format: string, args: Value[]): string {
  let n = 0;
  return format.replace(/%([-+ #0]*\d*(?:\.\d+)?)([sdvqfgtx%])/g, (_m, _flags: string, verb: string) => {
    if (verb === '%') return '%';
    const a = args[n++];
    if (a === undefined && n > args.length) return `%!${verb}(MISSING)`;
    switch (verb) {
      case 'd':
        return typeof a === 'number' ? String(Math.trunc(a)) : `%!d(${printValue(a)})`;
      case 'q':
        return JSON.stringify(printValue(a));
      case 'f':
        return typeof a === 'number' ? a.toFixed(6) : `%!f(${printValue(a)})`;
      case 'x':
        return typeof a === 'number'
          ? Math.trunc(a).toString(16)
          : Buffer.from(printValue(a)).toString('hex');
      default:
        return printValue(a);
    }
  });
}

function call(fn: string, args: Value[]): Value {
  const need = (n: number) => {
    if (args.length < n) throw new RenderError(`${fn}: wants at least ${n} argument${n === 1 ? '' : 's'}`);
  };
  switch (fn) {
    case 'eq':
      need(2);
      return args.slice(1).some((b) => equal(args[0], b));
    case 'ne':
      need(2);
      return !equal(args[0], args[1]);
    case 'lt':
    case 'le':
    case 'gt':
    case 'ge':
      need(2);
      return compare(fn, args[0], args[1]);
    case 'and': {
      need(1);
      for (const a of args) if (!truthy(a)) return a;
      return args[args.length - 1];
    }
    case 'or': {
      need(1);
      for (const a of args) if (truthy(a)) return a;
      return args[args.length - 1];
    }
    case 'not':
      need(1);
      return !truthy(args[0]);
    case 'len': {
      need(1);
      const a = args[0];
      if (typeof a === 'string' || Array.isArray(a)) return a.length;
      if (typeof a === 'object' && a !== null) return Object.keys(a).length;
      throw new RenderError(`len of ${typeName(a)}`);
    }
    case 'index': {
      need(1);
      let v = args[0];
      for (const k of args.slice(1)) {
        if (Array.isArray(v)) {
          if (typeof k !== 'number' || !Number.isInteger(k) || k < 0 || k >= v.length)
            throw new RenderError(`index out of range: ${printValue(k)}`);
          v = v[k];
        } else if (v === undefined || v === null) {
          v = undefined;
        } else if (typeof v === 'object') {
          v = (v as Record<string, unknown>)[printValue(k)];
        } else throw new RenderError(`can't index item of type ${typeName(v)}`);
      }
      return v;
    }
    case 'printf':
      need(1);
      return sprintf(printValue(args[0]), args.slice(1));
    case 'print':
      return args.map(printValue).join('');
    case 'json':
      need(1);
      return JSON.stringify(args[0] === undefined ? null : args[0]);
    case 'quote':
      need(1);
      return JSON.stringify(printValue(args[0]));
    case 'fromJson': {
      need(1);
      try {
        return JSON.parse(printValue(args[0])) as Value;
      } catch (err) {
        throw new RenderError(`fromJson: ${(err as Error).message}`);
      }
    }
    default:
      throw new RenderError(`function ${fn} not defined`);
  }
}

/** A rendering failure (data, never syntax): the message says what and where. */
export function renderErrorMessage(err: unknown, where: string): string {
  return err instanceof RenderError ? `${where}: ${err.message}` : `${where}: ${(err as Error).message}`;
}
