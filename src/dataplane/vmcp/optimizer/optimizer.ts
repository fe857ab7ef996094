/**
 * The vMCP optimizer (ToolHive's MCP Optimizer; docs/virtual-mcp.md): `find_tool` searches the
 * aggregated tools with BM25 over their names, titles, descriptions and input-schema properties
 * (names and descriptions), optionally mixed with embedding similarity, and `call_tool` names the
 * inner tool to call. Differences from the reference: the keywords and the description are searched
 * together (keywords weigh double) instead of keywords replacing the description; query words also
 * search a few synonyms at half weight ("remove" finds "delete"); a hybrid answer is topped up from
 * the other arm when one arm has fewer hits than its share; `call_tool` checks the inner tool's
 * required parameters before the call goes out; an embedding service that fails is skipped for a
 * while (BM25 answers; one log line per outage).
 */
import type { Logger } from '../../../shared/index.js';
import { silentLogger } from '../../../shared/index.js';
import { Bm25Index, type WeightedTerms } from './bm25.js';
import {
  CALL_TOOL_NAME,
  FIND_TOOL_NAME,
  isPlainObject,
  parseCallToolArguments,
  typeName,
} from './call-arguments.js';
import { OPTIMIZER_DEFAULTS, type OptimizerSettings } from './config.js';
import { createEmbeddingClient, type EmbeddingClient } from './embeddings.js';
import { tokenize } from './tokenize.js';
import type {
  FindToolOutput,
  McpTool,
  Optimizer,
  OptimizerCallResult,
  ResolvedCall,
  TokenMetrics,
  ToolScope,
} from './types.js';

export { CALL_TOOL_NAME, FIND_TOOL_NAME };

export interface OptimizerOptions {
  /** From `resolveOptimizerSettings`; default: BM25 only, 8 results. */
  settings?: OptimizerSettings;
  logger?: Logger;
  /** Clock for the embedding service's back-off (tests). */
  now?: () => number;
}

/** Field weights: a word in a tool's name says more about it than one in a parameter's description. */
const WEIGHT = { name: 3, title: 2, description: 1, property: 1.5, propertyDescription: 0.5 } as const;
/** Keywords are what the agent says matters most. */
const KEYWORD_WEIGHT = 2;
/** After a failure the embedding service is left alone this long (BM25 answers meanwhile). */
const EMBEDDING_RETRY_MS = 30_000;
const MAX_DESCRIPTION_CHARS = 4_096;
const MAX_KEYWORDS = 32;
const MAX_KEYWORD_CHARS = 256;
/** How deep nested object/array schemas are searched for property names. */
const MAX_SCHEMA_DEPTH = 4;

/** One indexed tool, reusable across `index()` calls while its definition does not change. */
interface Entry {
  tool: McpTool;
  json: string;
  tokens: number;
  terms: WeightedTerms;
  embeddingText: string;
}

interface State {
  entries: Entry[];
  byName: Map<string, number>;
  bm25: Bm25Index;
  baseline: number;
  vectors: (Float32Array | undefined)[];
}

function textResult(text: string, isError: boolean): OptimizerCallResult {
  return isError
    ? { content: [{ type: 'text', text }], isError: true }
    : { content: [{ type: 'text', text }] };
}

/** Adds the words of `text`, each weighted `weight`, to `terms`; returns the weight added. */
function addText(terms: Map<string, number>, text: unknown, weight: number): number {
  if (typeof text !== 'string' || text === '') return 0;
  const words = tokenize(text);
  for (const w of words) terms.set(w, (terms.get(w) ?? 0) + weight);
  return words.length * weight;
}

/** Property names and descriptions of an input schema, into nested objects and array items. */
function addSchema(terms: Map<string, number>, schema: unknown, depth: number, names: string[]): number {
  if (!isPlainObject(schema) || depth > MAX_SCHEMA_DEPTH) return 0;
  let length = 0;
  const properties = schema['properties'];
  if (isPlainObject(properties)) {
    for (const [name, sub] of Object.entries(properties)) {
      if (depth === 0) names.push(name);
      length += addText(terms, name, WEIGHT.property);
      if (isPlainObject(sub)) {
        length += addText(terms, sub['description'], WEIGHT.propertyDescription);
        length += addText(terms, sub['title'], WEIGHT.propertyDescription);
        length += addSchema(terms, sub, depth + 1, names);
      }
    }
  }
  const items = schema['items'];
  if (isPlainObject(items)) length += addSchema(terms, items, depth + 1, names);
  return length;
}

function analyse(tool: McpTool, json: string): Entry {
  const terms = new Map<string, number>();
  const names: string[] = [];
  let length = addText(terms, tool.name, WEIGHT.name);
  length += addText(terms, tool.title, WEIGHT.title);
  length += addText(terms, tool.description, WEIGHT.description);
  length += addSchema(terms, tool.inputSchema, 0, names);
  const parts = [tool.name];
  if (typeof tool.title === 'string' && tool.title !== '') parts.push(tool.title);
  if (typeof tool.description === 'string' && tool.description !== '') parts.push(tool.description);
  if (names.length > 0) parts.push(`Parameters: ${names.join(', ')}`);
  return {
    tool,
    json,
    // ToolHive's token estimate: JSON bytes ÷ 4, rounded down, per tool.
    tokens: Math.floor(Buffer.byteLength(json) / 4),
    terms: { terms, length },
    embeddingText: parts.join('. '),
  };
}

function metrics(baseline: number, returned: number): TokenMetrics {
  return {
    baseline_tokens: baseline,
    returned_tokens: returned,
    savings_percent: baseline === 0 ? 0 : ((baseline - returned) / baseline) * 100,
  };
}

function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}

/**
 * Words agents use for what tool descriptions say otherwise ("remove" for "delete", "mail"
 * for "email"). A query word also searches its group's other words at SYNONYM_WEIGHT of its
 * own weight, so an exact word still ranks first.
 */
const SYNONYM_GROUPS = [
  ['email', 'mail'],
  ['delete', 'remove', 'erase'],
  ['update', 'modify', 'edit', 'change'],
  ['create', 'new', 'make'],
  ['get', 'fetch', 'retrieve'],
  ['search', 'find', 'lookup', 'query'],
  ['send', 'post', 'deliver'],
  ['directory', 'folder', 'dir'],
  ['repository', 'repo'],
  ['database', 'db'],
  ['kubernetes', 'k8s'],
  ['issue', 'ticket'],
  ['meeting', 'appointment', 'event'],
  ['sms', 'text'],
  ['document', 'doc'],
];
const SYNONYM_WEIGHT = 0.5;
const SYNONYMS: ReadonlyMap<string, readonly string[]> = (() => {
  const map = new Map<string, string[]>();
  for (const group of SYNONYM_GROUPS) {
    const terms = group.map((w) => tokenize(w)[0]!);
    for (const t of terms) map.set(t, [...(map.get(t) ?? []), ...terms.filter((o) => o !== t)]);
  }
  return map;
})();

/** The query as term → weight: the description's words once, keywords' words double, synonyms half. */
function queryTerms(description: string, keywords: readonly string[]): Map<string, number> {
  const query = new Map<string, number>();
  addText(query, description, 1);
  for (const k of keywords) addText(query, k, KEYWORD_WEIGHT);
  const expanded = new Map(query);
  for (const [term, weight] of query) {
    for (const other of SYNONYMS.get(term) ?? []) {
      if (query.has(other)) continue;
      expanded.set(other, (expanded.get(other) ?? 0) + weight * SYNONYM_WEIGHT);
    }
  }
  return expanded;
}

type FindArgs = { description: string; keywords: string[] } | { error: string };

function parseFindArgs(args: unknown): FindArgs {
  if (!isPlainObject(args)) {
    return {
      error: `${FIND_TOOL_NAME} arguments must be an object with tool_description (got ${typeName(args)})`,
    };
  }
  const description = args['tool_description'];
  if (typeof description !== 'string') {
    return {
      error:
        description === undefined
          ? 'tool_description is required: describe the task in plain words, e.g. "send an email"'
          : `tool_description must be a string (got ${typeName(description)})`,
    };
  }
  if (description.length > MAX_DESCRIPTION_CHARS) {
    return {
      error: `tool_description is too long (${description.length} characters; at most ${MAX_DESCRIPTION_CHARS})`,
    };
  }
  const rawKeywords = args['tool_keywords'];
  const keywords: string[] = [];
  if (rawKeywords !== undefined && rawKeywords !== null) {
    if (!Array.isArray(rawKeywords)) {
      return { error: `tool_keywords must be an array of strings (got ${typeName(rawKeywords)})` };
    }
    if (rawKeywords.length > MAX_KEYWORDS) {
      return { error: `tool_keywords has ${rawKeywords.length} entries; at most ${MAX_KEYWORDS}` };
    }
    for (let i = 0; i < rawKeywords.length; i++) {
      const k: unknown = rawKeywords[i];
      if (typeof k !== 'string')
        return { error: `tool_keywords[${i}] must be a string (got ${typeName(k)})` };
      if (k.length > MAX_KEYWORD_CHARS) {
        return {
          error: `tool_keywords[${i}] is too long (${k.length} characters; at most ${MAX_KEYWORD_CHARS})`,
        };
      }
      keywords.push(k);
    }
  }
  if (description.trim() === '' && keywords.every((k) => k.trim() === '')) {
    return {
      error: 'tool_description must not be empty: describe the task in plain words, e.g. "send an email"',
    };
  }
  return { description, keywords };
}

const FIND_TOOL_SCHEMA = {
  type: 'object',
  properties: {
    tool_description: {
      type: 'string',
      description: 'The task you want a tool for, in plain words, e.g. "send an email to a colleague".',
    },
    tool_keywords: {
      type: 'array',
      items: { type: 'string' },
      description:
        'Optional words that must weigh more in the search: product or object names, e.g. ["gmail", "email"].',
    },
  },
  required: ['tool_description'],
  additionalProperties: false,
};

const CALL_TOOL_SCHEMA = {
  type: 'object',
  properties: {
    tool_name: { type: 'string', description: `Exact name of the tool, as ${FIND_TOOL_NAME} returned it.` },
    parameters: {
      type: 'object',
      description:
        "The tool's arguments, shaped by the inputSchema find_tool returned for it ({} when it takes none).",
      additionalProperties: true,
    },
  },
  required: ['tool_name', 'parameters'],
  additionalProperties: false,
};

export function createOptimizer(options: OptimizerOptions = {}): Optimizer {
  return new ToolOptimizer(options);
}

/** The `find_tool` and `call_tool` definitions `tools/list` shows. */
function toolDefinitions(maxResults: number): readonly McpTool[] {
  return Object.freeze([
    {
      name: FIND_TOOL_NAME,
      title: 'Find a tool',
      description:
        `Search the tools this server offers. Describe the task; the answer lists up to ${maxResults} matching tools, ` +
        'best first, with their full definitions (name, description, inputSchema). Then run one with call_tool. ' +
        'Search again with other words or tool_keywords when nothing fits.',
      inputSchema: FIND_TOOL_SCHEMA,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    {
      name: CALL_TOOL_NAME,
      title: 'Call a tool',
      description:
        `Run a tool found with ${FIND_TOOL_NAME}: pass its exact name as tool_name and its arguments as parameters. ` +
        "The answer is that tool's own result.",
      inputSchema: CALL_TOOL_SCHEMA,
    },
  ]);
}

function emptyState(): State {
  return { entries: [], byName: new Map(), bm25: new Bm25Index([]), baseline: 0, vectors: [] };
}

/**
 * The analysed tool list, without embeddings yet: tools whose JSON did not change keep their
 * entry from `previous`.
 */
function indexTools(tools: readonly McpTool[], previous: State): State {
  const reusable = new Map<string, Entry>();
  for (const e of previous.entries) reusable.set(e.json, e);
  const entries: Entry[] = [];
  const byName = new Map<string, number>();
  let baseline = 0;
  for (const tool of tools) {
    if (typeof tool?.name !== 'string' || tool.name === '') {
      throw new TypeError('optimizer.index: every tool needs a non-empty name');
    }
    if (byName.has(tool.name)) throw new TypeError(`optimizer.index: tool name ${tool.name} appears twice`);
    const json = JSON.stringify(tool);
    const entry = reusable.get(json) ?? analyse(tool, json);
    byName.set(tool.name, entries.length);
    entries.push(entry);
    baseline += entry.tokens;
  }
  const vectors = entries.map(() => undefined);
  return { entries, byName, bm25: new Bm25Index(entries.map((e) => e.terms)), baseline, vectors };
}

/** Semantic hits (tool numbers, nearest first) within the distance threshold, at most `maxResults`. */
function semanticSearch(
  target: State,
  query: Float32Array,
  scope: ToolScope | undefined,
  threshold: number,
  maxResults: number,
): number[] {
  const hits: { doc: number; distance: number }[] = [];
  for (let i = 0; i < target.vectors.length; i++) {
    const v = target.vectors[i];
    if (v === undefined || v.length !== query.length) continue;
    const distance = 1 - dot(query, v);
    if (distance > threshold) continue;
    hits.push({ doc: i, distance });
  }
  hits.sort((a, b) => a.distance - b.distance || a.doc - b.doc);
  // The scope is asked only about the nearest hits, not about every tool.
  const docs: number[] = [];
  for (const h of hits) {
    if (docs.length === maxResults) break;
    if (scope === undefined || scope.allows(target.entries[h.doc]!.tool.name)) docs.push(h.doc);
  }
  return docs;
}

/**
 * A hybrid answer: the semantic arm's share (`ratio` of `maxResults`) first, then the lexical
 * hits, then more semantic ones when the lexical arm had fewer than its share.
 */
function mergeHits(lexical: number[], semantic: number[], maxResults: number, ratio: number): number[] {
  const merged = new Set<number>(semantic.slice(0, Math.round(maxResults * ratio)));
  for (const d of lexical) if (merged.size < maxResults) merged.add(d);
  for (const d of semantic) if (merged.size < maxResults) merged.add(d);
  return [...merged];
}

/** The `find_tool` result for the tools `docs` of `target`. */
function findResult(target: State, docs: readonly number[], baseline: number): OptimizerCallResult {
  let returned = 0;
  const found: McpTool[] = [];
  const jsons: string[] = [];
  for (const d of docs) {
    const e = target.entries[d]!;
    returned += e.tokens;
    found.push(e.tool);
    jsons.push(e.json);
  }
  const tokenMetrics = metrics(baseline, returned);
  const output: FindToolOutput = { tools: found, token_metrics: tokenMetrics };
  // Same text as JSON.stringify(output), reusing each tool's JSON from index time.
  const text = `{"tools":[${jsons.join(',')}],"token_metrics":${JSON.stringify(tokenMetrics)}}`;
  return {
    content: [{ type: 'text', text }],
    structuredContent: output as unknown as Record<string, unknown>,
  };
}

function callError(text: string): ResolvedCall {
  return { ok: false, result: textResult(text, true) };
}

/** Checks a `call_tool` call against the indexed tools (and the scope) and names the inner call. */
function resolveCall(args: unknown, scope: ToolScope | undefined, state: State): ResolvedCall {
  const call = parseCallToolArguments(args);
  if (!call.ok) return callError(call.error);
  const { name, parameters } = call;
  const at = state.byName.get(name);
  if (at === undefined || (scope !== undefined && !scope.allows(name))) {
    return callError(`tool not found: ${name}. Use ${FIND_TOOL_NAME} to look up tool names.`);
  }
  const required = state.entries[at]!.tool.inputSchema?.required;
  if (Array.isArray(required)) {
    const missing = required.filter((r) => typeof r === 'string' && !Object.hasOwn(parameters, r));
    if (missing.length > 0) {
      return callError(
        `parameters.${missing[0]} is required by tool ${name}${missing.length > 1 ? ` (missing: ${missing.join(', ')})` : ''}`,
      );
    }
  }
  return { ok: true, name, arguments: parameters };
}

/**
 * The embedding arm: the service's vectors of the tools (each embedding text embedded once)
 * and of queries; after a failure the service is left alone for `EMBEDDING_RETRY_MS`, with
 * one log line per outage.
 */
class EmbeddingSearch {
  readonly #client: EmbeddingClient;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #closer = new AbortController();
  /** Embedding vectors by embedding text, so an unchanged tool is never embedded twice. */
  #cache = new Map<string, Float32Array>();
  #failedAt: number | undefined;
  #failureLogged = false;
  #background: Promise<void> | undefined;

  constructor(client: EmbeddingClient, logger: Logger, now: () => number) {
    this.#client = client;
    this.#logger = logger;
    this.#now = now;
  }

  /** The known vector of each entry; forgets the vectors of tools that are gone. */
  vectorsFor(entries: readonly Entry[]): (Float32Array | undefined)[] {
    const vectors = entries.map((e) => this.#cache.get(e.embeddingText));
    const kept = new Map<string, Float32Array>();
    for (let i = 0; i < entries.length; i++)
      if (vectors[i] !== undefined) kept.set(entries[i]!.embeddingText, vectors[i]!);
    this.#cache = kept;
    return vectors;
  }

  /** Embeds the tools of the current state that have no vector yet; never rejects. */
  async embedMissing(current: () => State): Promise<void> {
    const target = current();
    const missing = [
      ...new Set(
        target.entries.filter((e, i) => target.vectors[i] === undefined).map((e) => e.embeddingText),
      ),
    ];
    if (missing.length === 0 || !this.#usable()) return;
    try {
      const vectors = await this.#client.embed(missing, this.#closer.signal);
      this.#worked();
      this.#logger.debug({ texts: missing.length }, 'optimizer: embedded tool descriptions');
      for (let i = 0; i < missing.length; i++) this.#cache.set(missing[i]!, vectors[i]!);
      // The list may have been replaced meanwhile: fill whatever state is current now.
      const now = current();
      for (let i = 0; i < now.entries.length; i++) {
        now.vectors[i] ??= this.#cache.get(now.entries[i]!.embeddingText);
      }
    } catch (err) {
      this.#failed(err);
    }
  }

  /** The query's vector, or `undefined` when the semantic arm cannot answer (BM25 alone then). */
  async queryVector(text: string, current: () => State): Promise<Float32Array | undefined> {
    if (!this.#usable()) return undefined;
    const state = current();
    // One background run at a time fills in the tools not embedded yet.
    if (this.#background === undefined && state.vectors.some((v) => v === undefined))
      this.#background = this.embedMissing(current).finally(() => (this.#background = undefined));
    if (!state.vectors.some((v) => v !== undefined)) return undefined;
    try {
      const [vector] = await this.#client.embed([text], this.#closer.signal);
      this.#worked();
      return vector;
    } catch (err) {
      this.#failed(err);
      return undefined;
    }
  }

  close(): void {
    this.#closer.abort();
  }

  #usable(): boolean {
    if (this.#closer.signal.aborted) return false;
    return this.#failedAt === undefined || this.#now() - this.#failedAt >= EMBEDDING_RETRY_MS;
  }

  #failed(err: unknown): void {
    this.#failedAt = this.#now();
    if (this.#failureLogged || this.#closer.signal.aborted) return;
    this.#failureLogged = true;
    this.#logger.warn(
      { err: (err as Error).message },
      `optimizer: the embedding service failed; ${FIND_TOOL_NAME} answers with BM25 alone and retries the service in ${EMBEDDING_RETRY_MS / 1000} s`,
    );
  }

  #worked(): void {
    if (this.#failedAt !== undefined && this.#failureLogged)
      this.#logger.info('optimizer: the embedding service answers again');
    this.#failedAt = undefined;
    this.#failureLogged = false;
  }
}

/** `createOptimizer`'s optimizer: BM25 over the indexed tools, mixed with the embedding arm when configured. */
class ToolOptimizer implements Optimizer {
  readonly #maxResults: number;
  readonly #ratio: number;
  readonly #threshold: number;
  readonly #definitions: readonly McpTool[];
  readonly #embeddings: EmbeddingSearch | undefined;
  readonly #scopeBaselines = new WeakMap<ToolScope, { state: State; baseline: number }>();
  readonly #current = (): State => this.#state;
  #state: State = emptyState();

  constructor(options: OptimizerOptions) {
    const settings = options.settings;
    this.#maxResults = settings?.maxToolsToReturn ?? OPTIMIZER_DEFAULTS.maxToolsToReturn;
    this.#ratio = settings?.hybridSearchSemanticRatio ?? OPTIMIZER_DEFAULTS.hybridSearchSemanticRatio;
    this.#threshold = settings?.semanticDistanceThreshold ?? OPTIMIZER_DEFAULTS.semanticDistanceThreshold;
    // With a semantic ratio of 0 the embeddings would never be used: do not call the service.
    this.#embeddings =
      settings?.embedding === undefined || this.#ratio === 0
        ? undefined
        : new EmbeddingSearch(
            createEmbeddingClient(settings.embedding),
            options.logger ?? silentLogger,
            options.now ?? Date.now,
          );
    this.#definitions = toolDefinitions(this.#maxResults);
  }

  index(tools: readonly McpTool[]): Promise<void> {
    const state = indexTools(tools, this.#state);
    if (this.#embeddings === undefined) {
      this.#state = state;
      return Promise.resolve();
    }
    state.vectors = this.#embeddings.vectorsFor(state.entries);
    this.#state = state;
    return this.#embeddings.embedMissing(this.#current);
  }

  tools(): readonly McpTool[] {
    return this.#definitions;
  }

  async find(args: unknown, scope?: ToolScope): Promise<OptimizerCallResult> {
    const parsed = parseFindArgs(args);
    if ('error' in parsed) return textResult(parsed.error, true);
    const target = this.#state;
    const accept =
      scope === undefined
        ? undefined
        : (doc: number): boolean => scope.allows(target.entries[doc]!.tool.name);
    const query = queryTerms(parsed.description, parsed.keywords);
    let docs = target.bm25.search(query, this.#maxResults, accept).map((h) => h.doc);
    if (this.#embeddings !== undefined) {
      const text =
        parsed.keywords.length === 0
          ? parsed.description
          : `${parsed.description} ${parsed.keywords.join(' ')}`;
      const vector = await this.#embeddings.queryVector(text, this.#current);
      if (vector !== undefined) {
        const semantic = semanticSearch(target, vector, scope, this.#threshold, this.#maxResults);
        docs = mergeHits(docs, semantic, this.#maxResults, this.#ratio);
      }
    }
    return findResult(target, docs, this.#baselineFor(scope));
  }

  resolveCall(args: unknown, scope?: ToolScope): ResolvedCall {
    return resolveCall(args, scope, this.#state);
  }

  close(): void {
    this.#embeddings?.close();
  }

  #baselineFor(scope: ToolScope | undefined): number {
    const state = this.#state;
    if (scope === undefined) return state.baseline;
    const cached = this.#scopeBaselines.get(scope);
    if (cached !== undefined && cached.state === state) return cached.baseline;
    let baseline = 0;
    for (const e of state.entries) if (scope.allows(e.tool.name)) baseline += e.tokens;
    this.#scopeBaselines.set(scope, { state, baseline });
    return baseline;
  }
}
