/**
 * The optimizer's optional embeddings (reference §1.9): hybrid BM25 + semantic answers, the
 * TEI and OpenAI-compatible request shapes, and the fallback to BM25 alone (logged once)
 * when the service fails, hangs or is unreachable.
 *
 * The embedding service here is a STAND-IN: a loopback HTTP server that speaks the TEI
 * (`POST /embed`) and OpenAI (`POST /v1/embeddings`) wire formats but computes toy vectors
 * from a small concept table, because a real embedding model (TEI with bge-small, or the
 * OpenAI API) cannot run or be reached here. The optimizer side — HTTP client, hybrid merge,
 * thresholds, back-off — is the real code.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
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
} from '../../../src/vmcp/optimizer/index.js';
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
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

class StandIn {
  mode: 'ok' | 'fail' | 'hang' = 'ok';
  seen: Seen[] = [];
  url = '';
  private server: Server;
  private hanging: (() => void)[] = [];

  constructor() {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
        this.seen.push({ path: req.url ?? '', headers: req.headers, body });
        if (this.mode === 'hang') {
          this.hanging.push(() => res.destroy());
          return;
        }
        if (this.mode === 'fail') {
          res.writeHead(500, { 'content-type': 'text/plain' }).end('model not loaded');
          return;
        }
        res.setHeader('content-type', 'application/json');
        if (req.url === '/embed') {
          res.end(JSON.stringify((body['inputs'] as string[]).map(toyVector)));
        } else if (req.url === '/v1/embeddings') {
          // Reversed on purpose: clients must place each vector by its index.
          const data = (body['input'] as string[]).map((t, index) => ({
            object: 'embedding',
            index,
            embedding: toyVector(t),
          }));
          res.end(JSON.stringify({ object: 'list', data: data.reverse(), model: body['model'] }));
        } else {
          res.writeHead(404).end('{}');
        }
      });
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    for (const h of this.hanging) h();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
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

describe('optimizer with an embedding service (loopback stand-in)', () => {
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

    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const logs = captureLogs();
    const unreachable = optimizer({ embeddingService: `http://127.0.0.1:${deadPort}` }, logs.options);
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
