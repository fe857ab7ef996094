/**
 * The optimizer's optional embeddings (as ToolHive's optimizer uses them): hybrid BM25 + semantic
 * answers, the TEI and OpenAI-compatible request shapes, and the fallback to BM25 alone (logged
 * once) when the service fails, hangs or is unreachable.
 *
 * The embedding service here is a STAND-IN: undici's `MockAgent` on the global dispatcher
 * (the one `fetch` uses; real connections refused) answers the TEI (`POST /embed`) and OpenAI
 * (`POST /v1/embeddings`) wire formats with toy vectors from a small concept table, because a
 * real embedding model (TEI with bge-small, or the OpenAI API) cannot run or be reached here.
 * The optimizer side — HTTP client, hybrid merge, thresholds, back-off — is the real code.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { type Dispatcher, getGlobalDispatcher, MockAgent, setGlobalDispatcher } from 'undici';
import { createLineLogger } from '../../../src/shared/index.js';
import {
  createOptimizer,
  type FindToolOutput,
  type McpTool,
  type Optimizer,
  type OptimizerCallResult,
  type OptimizerConfig,
  type OptimizerOptions,
  resolveOptimizerSettings,
} from '../../../src/dataplane/vmcp/optimizer/index.js';
import { syntheticTools } from '../../fixtures/mcp/synthetic-tools.mjs';

/** Toy semantic space: each concept is one dimension; the last one keeps vectors non-zero. */
const CONCEPTS: string[][] = [
  ['email', 'mail', 'letter', 'correspondence', 'inbox', 'gmail', 'outlook'],
  ['meeting', 'calendar', 'appointment', 'rendezvous'],
  ['refund', 'payment', 'money', 'reimburse', 'invoice'],
  ['weather', 'forecast', 'rain', 'umbrella', 'temperature'],
];

function toyVector(text: string): number[] {
  const v = new Array<number>(CONCEPTS.length + 1).fill(0);
  v[CONCEPTS.length] = 0.05;
  for (const word of text.toLowerCase().split(/[^a-z]+/)) {
    CONCEPTS.forEach((words, i) => {
      if (words.some((w) => word.startsWith(w))) v[i]! += 1;
    });
  }
  return v;
}

interface Seen {
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/** Request headers as undici hands them to a mock reply (an object, or a flat name/value list). */
function headerRecord(headers: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2)
      out[String(headers[i]).toLowerCase()] = String(headers[i + 1]);
  } else if (headers !== null && typeof headers === 'object') {
    for (const [k, v] of Object.entries(headers)) out[k.toLowerCase()] = String(v);
  }
  return out;
}

/**
 * The service as undici mock interceptors on the global dispatcher (which `fetch` uses), with
 * every real connection refused (`disableNetConnect`). `mode` picks the answer per request:
 * vectors, HTTP 500, or none (the reply is held until the request is aborted). `unreachableUrl`
 * is an origin whose connections fail.
 */
class StandIn {
  mode: 'ok' | 'fail' | 'hang' = 'ok';
  seen: Seen[] = [];
  readonly url = 'http://embeddings.test';
  readonly unreachableUrl = 'http://unreachable.test';
  private readonly agent = new MockAgent();
  private previous: Dispatcher | undefined;

  start(): void {
    this.previous = getGlobalDispatcher();
    this.agent.disableNetConnect();
    setGlobalDispatcher(this.agent);
    const service = this.agent.get(this.url);
    const record = (opts: { path: string; headers?: unknown; body?: unknown }): Record<string, unknown> => {
      const body = JSON.parse(String(opts.body)) as Record<string, unknown>;
      this.seen.push({ path: opts.path, headers: headerRecord(opts.headers), body });
      return body;
    };
    // Held for longer than any test runs; every held request is aborted by its timeout or close().
    service
      .intercept({ path: () => this.mode === 'hang', method: 'POST' })
      .reply((opts) => {
        record(opts);
        return { statusCode: 200, data: '[]' };
      })
      .delay(60_000)
      .persist();
    service
      .intercept({ path: () => this.mode !== 'hang', method: 'POST' })
      .reply((opts) => {
        const body = record(opts);
        if (this.mode === 'fail') return { statusCode: 500, data: 'model not loaded' };
        const json = { headers: { 'content-type': 'application/json' } };
        if (opts.path === '/embed') {
          return {
            statusCode: 200,
            data: JSON.stringify((body['inputs'] as string[]).map(toyVector)),
            responseOptions: json,
          };
        }
        if (opts.path === '/v1/embeddings') {
          // Reversed on purpose: clients must place each vector by its index.
          const data = (body['input'] as string[]).map((t, index) => ({
            object: 'embedding',
            index,
            embedding: toyVector(t),
          }));
          return {
            statusCode: 200,
            data: JSON.stringify({ object: 'list', data: data.reverse(), model: body['model'] }),
            responseOptions: json,
          };
        }
        return { statusCode: 404, data: '{}', responseOptions: json };
      })
      .persist();
    this.agent
      .get(this.unreachableUrl)
      .intercept({ path: () => true, method: 'POST' })
      .replyWithError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))
      .persist();
  }

  async stop(): Promise<void> {
    if (this.previous !== undefined) setGlobalDispatcher(this.previous);
    await this.agent.close();
  }
}

function names(result: OptimizerCallResult): string[] {
  assert.equal(result.isError, undefined, result.content[0]?.text);
  return (result.structuredContent as unknown as FindToolOutput).tools.map((t) => t.name);
}

/** A logger whose lines the test can read, and wait for. */
function captureLogs(): {
  options: Pick<OptimizerOptions, 'logger'>;
  lines: string[];
  next(re: RegExp): Promise<void>;
} {
  const lines: string[] = [];
  const waiters: { re: RegExp; resolve: () => void }[] = [];
  const logger = createLineLogger({
    level: 'debug',
    write: (line) => {
      lines.push(line);
      for (const w of waiters.splice(0)) {
        if (w.re.test(line)) w.resolve();
        else waiters.push(w);
      }
    },
  });
  return {
    options: { logger },
    lines,
    next: (re) => new Promise<void>((resolve) => waiters.push({ re, resolve })),
  };
}

const TOOLS: McpTool[] = syntheticTools(507);
const appointment = { tool_description: 'arrange a rendezvous with Bob next week' };

describe('optimizer with an embedding service (undici mock stand-in)', () => {
  const standIn = new StandIn();
  const open: Optimizer[] = [];
  before(() => standIn.start());
  after(async () => {
    for (const o of open) o.close();
    await standIn.stop();
  });
  beforeEach(() => {
    standIn.mode = 'ok';
    standIn.seen = [];
  });

  function optimizer(config: OptimizerConfig, extra: OptimizerOptions = {}, env = {}): Optimizer {
    const o = createOptimizer(Object.assign({ settings: resolveOptimizerSettings(config, env) }, extra));
    open.push(o);
    return o;
  }

  it('hybrid (TEI): semantic hits come first and find what BM25 cannot', async () => {
    const bm25 = createOptimizer();
    await bm25.index(TOOLS);
    const lexical = names(await bm25.find(appointment));
    assert.ok(!lexical.some((n) => n.includes('calendar')), `BM25 alone: ${lexical.join(', ')}`);

    const o = optimizer({ embeddingService: standIn.url });
    await o.index(TOOLS);
    const embedCalls = standIn.seen.length;
    assert.ok(embedCalls >= 2, 'tool texts were embedded in batches');
    const first = standIn.seen[0]!;
    assert.equal(first.path, '/embed');
    assert.equal(first.body['truncate'], true);
    assert.ok(Array.isArray(first.body['inputs']));
    assert.equal(first.headers['content-type'], 'application/json');
    assert.equal(first.headers['authorization'], undefined);
    assert.match(
      (first.body['inputs'] as string[])[0]!,
      /^github_list_issue\. List issue items in GitHub.*Parameters: limit, cursor$/,
    );

    const hybrid = names(await o.find(appointment));
    assert.equal(hybrid.length, 8);
    // Ratio 0.5 of 8: four semantic hits first — all calendar tools — then BM25's own list.
    assert.ok(
      hybrid.slice(0, 4).every((n) => n.includes('calendar')),
      `hybrid: ${hybrid.join(', ')}`,
    );
    // Then BM25's own hits; BM25 found fewer than its four, so more semantic hits fill the 8.
    assert.ok(lexical.length < 4, `BM25 alone: ${lexical.join(', ')}`);
    assert.deepEqual(hybrid.slice(4, 4 + lexical.length), lexical);
    assert.ok(
      hybrid.slice(4 + lexical.length).every((n) => n.includes('calendar')),
      `hybrid: ${hybrid.join(', ')}`,
    );
    assert.equal(standIn.seen.length, embedCalls + 1, 'one embedding request per query');
    assert.deepEqual(standIn.seen.at(-1)!.body['inputs'], [appointment.tool_description]);
  });

  it('OpenAI-compatible: /embeddings with model, float encoding, bearer key and extra headers', async () => {
    const o = optimizer(
      {
        embeddingService: `${standIn.url}/v1`,
        embeddingProvider: 'openai',
        embeddingModel: 'text-embedding-3-small',
        embeddingHeaders: { 'X-Team': 'blue' },
        maxToolsToReturn: 4,
        hybridSearchSemanticRatio: '0.25',
      },
      {},
      { OPENAI_API_KEY: 'sk-standin' },
    );
    await o.index(TOOLS);
    const first = standIn.seen[0]!;
    assert.equal(first.path, '/v1/embeddings');
    assert.equal(first.body['model'], 'text-embedding-3-small');
    assert.equal(first.body['encoding_format'], 'float');
    assert.equal(first.headers['authorization'], 'Bearer sk-standin');
    assert.equal(first.headers['x-team'], 'blue');
    const found = names(await o.find({ tool_description: 'reimburse the money', tool_keywords: ['stripe'] }));
    assert.equal(found.length, 4);
    // One semantic slot (0.25 × 4); the reversed response was put back in order, so it is a money tool.
    assert.match(found[0]!, /refund|payment|invoice/);
    assert.ok(
      found.slice(1).every((n) => n.startsWith('stripe_')),
      found.join(', '),
    );
  });

  it('semanticDistanceThreshold drops semantic hits that are too far', async () => {
    const o = optimizer({ embeddingService: standIn.url, semanticDistanceThreshold: '0.0001' });
    const bm25 = createOptimizer();
    await Promise.all([o.index(TOOLS), bm25.index(TOOLS)]);
    // The query is not exactly any tool's direction, so nothing passes: the answer is BM25's.
    assert.deepEqual(names(await o.find(appointment)), names(await bm25.find(appointment)));
  });

  it('hybridSearchSemanticRatio 0 never calls the service', async () => {
    const o = optimizer({ embeddingService: standIn.url, hybridSearchSemanticRatio: 0 });
    const bm25 = createOptimizer();
    await Promise.all([o.index(TOOLS), bm25.index(TOOLS)]);
    assert.deepEqual(names(await o.find(appointment)), names(await bm25.find(appointment)));
    assert.equal(standIn.seen.length, 0);
  });

  it('a failing service: BM25 answers, one warning, no calls during back-off, then recovery', async () => {
    let clock = 1_000_000;
    const logs = captureLogs();
    const o = optimizer({ embeddingService: standIn.url }, Object.assign({ now: () => clock }, logs.options));
    const bm25 = createOptimizer();
    await bm25.index(TOOLS);
    standIn.mode = 'fail';
    await o.index(TOOLS); // resolves even though embedding failed
    for (let i = 0; i < 3; i++)
      assert.deepEqual(names(await o.find(appointment)), names(await bm25.find(appointment)));
    const warnings = logs.lines.filter((l) => /embedding service failed/.test(l));
    assert.equal(warnings.length, 1, logs.lines.join(''));
    assert.match(warnings[0]!, /HTTP 500/);
    assert.doesNotMatch(warnings[0]!, /model not loaded/, 'response bodies stay out of logs');
    assert.equal(standIn.seen.length, 1, 'no calls while backing off');

    // 30 s later the service works again: a query starts embedding the tools in the background.
    clock += 30_000;
    standIn.mode = 'ok';
    const embedded = logs.next(/embedded tool descriptions/);
    assert.deepEqual(names(await o.find(appointment)), names(await bm25.find(appointment)));
    await embedded;
    assert.ok(logs.lines.some((l) => /embedding service answers again/.test(l)));
    assert.ok(names(await o.find(appointment))[0]!.includes('calendar'), 'hybrid again');
  });

  it('an unreachable or hanging service falls back to BM25 within the timeout', async () => {
    const bm25 = createOptimizer();
    await bm25.index(TOOLS);
    const expected = names(await bm25.find(appointment));

    const logs = captureLogs();
    const unreachable = optimizer({ embeddingService: standIn.unreachableUrl }, logs.options);
    await unreachable.index(TOOLS);
    assert.deepEqual(names(await unreachable.find(appointment)), expected);
    assert.equal(logs.lines.filter((l) => /unreachable/.test(l)).length, 1, logs.lines.join(''));

    standIn.mode = 'hang';
    const hangLogs = captureLogs();
    const hanging = optimizer(
      { embeddingService: standIn.url, embeddingServiceTimeout: '200ms' },
      hangLogs.options,
    );
    await hanging.index(TOOLS);
    assert.ok(
      hangLogs.lines.some((l) => /did not answer within 200 ms/.test(l)),
      hangLogs.lines.join(''),
    );
    assert.deepEqual(names(await hanging.find(appointment)), expected);
  });

  it('close() stops embedding work: index resolves and find answers with BM25', async () => {
    standIn.mode = 'hang';
    const o = optimizer({ embeddingService: standIn.url });
    const indexing = o.index(TOOLS);
    o.close();
    await indexing;
    assert.ok(
      names(await o.find({ tool_description: 'refund a payment' })).includes('stripe_refund_payment'),
    );
  });
});
