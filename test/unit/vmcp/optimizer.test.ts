/**
 * The vMCP optimizer module (ToolHive's MCP Optimizer): tokenizer, BM25 arithmetic,
 * find_tool / call_tool argument checks, the result limit, token_metrics, scopes and
 * re-indexing. Ranking quality on a realistic tool set is in optimizer-ranking.test.ts,
 * embeddings in optimizer-embeddings.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CallToolResultSchema, ListToolsResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { Bm25Index, BM25_B, BM25_K1 } from '../../../src/dataplane/vmcp/optimizer/bm25.js';
import { stem, tokenize } from '../../../src/dataplane/vmcp/optimizer/tokenize.js';
import {
  CALL_TOOL_NAME,
  createOptimizer,
  FIND_TOOL_NAME,
  type FindToolOutput,
  type McpTool,
  type OptimizerCallResult,
  resolveOptimizerSettings,
} from '../../../src/dataplane/vmcp/optimizer/index.js';
import { syntheticTools } from '../../fixtures/mcp/synthetic-tools.mjs';

function output(result: OptimizerCallResult): FindToolOutput {
  assert.equal(result.isError, undefined, result.content[0]?.text);
  const parsed = JSON.parse(result.content[0]!.text) as FindToolOutput;
  assert.deepEqual(
    result.structuredContent,
    parsed,
    'structuredContent and the text block carry the same answer',
  );
  return parsed;
}

function names(result: OptimizerCallResult): string[] {
  return output(result).tools.map((t) => t.name);
}

function errorText(result: OptimizerCallResult): string {
  assert.equal(result.isError, true, 'expected a tool error');
  return result.content[0]!.text;
}

const tokens = (tool: McpTool): number => Math.floor(Buffer.byteLength(JSON.stringify(tool)) / 4);

const mail: McpTool = {
  name: 'send_email',
  description: 'Send an email message to recipients',
  inputSchema: {
    type: 'object',
    properties: { to: { type: 'string' }, subject: { type: 'string' } },
    required: ['to'],
  },
};
const files: McpTool = {
  name: 'listFiles',
  description: 'List the files in a directory',
  inputSchema: { type: 'object', properties: { path: { type: 'string', description: 'Directory path' } } },
};
const geo: McpTool = {
  name: 'lookup',
  description: 'Looks things up',
  inputSchema: { type: 'object', properties: { postalCode: { type: 'string' } }, required: ['postalCode'] },
};

describe('optimizer tokenizer', () => {
  it('splits camelCase, PascalCase, snake_case and kebab-case and lower-cases', () => {
    assert.deepEqual(tokenize('getHTTPResponse'), ['get', 'http', 'respons']);
    assert.deepEqual(tokenize('send_email-now'), ['send', 'email', 'now']);
    assert.deepEqual(tokenize('ListFiles2Go'), ['list', 'fil', '2', 'go']);
  });

  it('drops stop words and stems inflections so query and tool words meet', () => {
    assert.deepEqual(tokenize('Send an email to the team'), ['send', 'email', 'team']);
    for (const [a, b] of [
      ['emails', 'email'],
      ['sending', 'send'],
      ['created', 'create'],
      ['creates', 'creating'],
      ['queries', 'query'],
      ['searches', 'search'],
      ['stopped', 'stop'],
    ] as const) {
      assert.equal(stem(a), stem(b), `${a} ~ ${b}`);
    }
    assert.equal(stem('string'), 'string', 'no vowel would be left: "ing" stays');
    assert.equal(stem('status'), 'status');
  });

  it('keeps non-Latin words', () => {
    assert.deepEqual(tokenize('Envoyer un courriel été'), ['envoyer', 'un', 'courriel', 'été']);
  });
});

describe('optimizer BM25 index', () => {
  it('scores one term exactly as Okapi BM25 (k1 1.2, b 0.75, Lucene idf)', () => {
    const docs = [
      { terms: new Map([['mail', 2]]), length: 4 },
      { terms: new Map([['file', 1]]), length: 2 },
      { terms: new Map([['mail', 1]]), length: 6 },
    ];
    const index = new Bm25Index(docs);
    const hits = index.search(new Map([['mail', 1]]), 10);
    const avgdl = 4;
    const idf = Math.log(1 + (3 - 2 + 0.5) / (2 + 0.5));
    const part = (tf: number, dl: number): number =>
      (tf * (BM25_K1 + 1)) / (tf + BM25_K1 * (1 - BM25_B + (BM25_B * dl) / avgdl));
    assert.deepEqual(
      hits.map((h) => h.doc),
      [0, 2],
    );
    assert.ok(Math.abs(hits[0]!.score - idf * part(2, 4)) < 1e-12);
    assert.ok(Math.abs(hits[1]!.score - idf * part(1, 6)) < 1e-12);
    // The query weight multiplies the score; a second search starts from clean scores.
    const twice = index.search(new Map([['mail', 2]]), 10);
    assert.ok(Math.abs(twice[0]!.score - 2 * hits[0]!.score) < 1e-12);
  });

  it('breaks ties by document order, honours the limit and the accept filter', () => {
    const same = { terms: new Map([['x', 1]]), length: 1 };
    const index = new Bm25Index([same, same, same, same]);
    assert.deepEqual(
      index.search(new Map([['x', 1]]), 3).map((h) => h.doc),
      [0, 1, 2],
    );
    assert.deepEqual(
      index.search(new Map([['x', 1]]), 2, (d) => d % 2 === 1).map((h) => h.doc),
      [1, 3],
    );
    assert.deepEqual(index.search(new Map([['missing', 1]]), 3), []);
  });
});

describe('optimizer tools()', () => {
  it('offers exactly find_tool and call_tool with the reference argument shapes', () => {
    const defs = createOptimizer().tools();
    assert.deepEqual(
      defs.map((d) => d.name),
      [FIND_TOOL_NAME, CALL_TOOL_NAME],
    );
    const [find, call] = defs;
    assert.deepEqual(Object.keys(find!.inputSchema!.properties!), ['tool_description', 'tool_keywords']);
    assert.deepEqual(find!.inputSchema!.required, ['tool_description']);
    assert.deepEqual(Object.keys(call!.inputSchema!.properties!), ['tool_name', 'parameters']);
    assert.match(find!.description!, /up to 8 matching tools/);
    assert.match(call!.description!, /find_tool/);
  });

  it('says the configured result limit', () => {
    const o = createOptimizer({ settings: resolveOptimizerSettings({ maxToolsToReturn: 3 }) });
    assert.match(o.tools()[0]!.description!, /up to 3 matching tools/);
  });
});

describe('optimizer results are valid MCP', () => {
  it('tools() is a valid tools/list result and find/resolveCall answers are valid CallToolResults (SDK schemas)', async () => {
    const o = createOptimizer();
    await o.index([mail, files]);
    assert.ok(ListToolsResultSchema.safeParse({ tools: o.tools() }).success);
    const answers = [await o.find({ tool_description: 'send email' }), await o.find({})];
    const refused = o.resolveCall({ tool_name: 'nope' });
    assert.equal(refused.ok, false);
    if (!refused.ok) answers.push(refused.result);
    for (const a of answers) {
      const parsed = CallToolResultSchema.safeParse(a);
      assert.ok(parsed.success, JSON.stringify(parsed.error?.issues));
    }
  });
});

describe('optimizer find()', () => {
  it('ranks by name, description and input-schema property names', async () => {
    const o = createOptimizer();
    await o.index([files, mail, geo]);
    assert.deepEqual(names(await o.find({ tool_description: 'send an email' })), ['send_email']);
    assert.equal(names(await o.find({ tool_description: 'list files of a folder' }))[0], 'listFiles');
    // "postal code" only appears as the camelCase property name postalCode.
    assert.deepEqual(names(await o.find({ tool_description: 'by postal code' })), ['lookup']);
    // ...and a property's description counts too ("Directory path").
    assert.deepEqual(names(await o.find({ tool_description: 'path' })), ['listFiles']);
  });

  it('returns full definitions and nothing for a query that matches no tool', async () => {
    const o = createOptimizer();
    await o.index([files, mail]);
    assert.deepEqual(output(await o.find({ tool_description: 'send email' })).tools, [mail]);
    const none = output(await o.find({ tool_description: 'quantum chromodynamics' }));
    assert.deepEqual(none.tools, []);
    assert.equal(none.token_metrics.returned_tokens, 0);
    assert.equal(none.token_metrics.savings_percent, 100);
  });

  it('keywords are searched with the description and weigh more', async () => {
    const o = createOptimizer();
    const a: McpTool = { name: 'r1', description: 'create a report about sales' };
    const b: McpTool = { name: 'r2', description: 'create a chart or graph' };
    await o.index([a, b]);
    assert.deepEqual(names(await o.find({ tool_description: 'create a sales report' })), ['r1', 'r2']);
    const boosted = { tool_description: 'create a sales report', tool_keywords: ['chart', 'graph'] };
    assert.deepEqual(names(await o.find(boosted)), ['r2', 'r1']);
    // The same words in the description instead of the keywords do not outweigh "sales report".
    assert.deepEqual(names(await o.find({ tool_description: 'create a sales report chart' })), ['r1', 'r2']);
    // Keywords alone (empty description) are enough.
    assert.deepEqual(names(await o.find({ tool_description: '', tool_keywords: ['chart'] })), ['r2']);
  });

  it('query words also search their synonyms, at half weight', async () => {
    const o = createOptimizer();
    const erase: McpTool = { name: 'wipe_disk', description: 'Erase a disk' };
    const del: McpTool = { name: 'drop_file', description: 'Delete a file' };
    const inbox: McpTool = { name: 'inbox', description: 'Read your mail' };
    await o.index([erase, del, inbox]);
    assert.deepEqual(names(await o.find({ tool_description: 'remove a file' })), ['drop_file', 'wipe_disk']);
    // The exact word outranks its synonym.
    assert.deepEqual(names(await o.find({ tool_description: 'erase' })), ['wipe_disk', 'drop_file']);
    assert.deepEqual(names(await o.find({ tool_description: 'check my email' })), ['inbox']);
  });

  it('returns at most maxToolsToReturn tools (default 8, range 1–50)', async () => {
    const tools = syntheticTools(400);
    const broad = { tool_description: 'list get create update delete search items' };
    const dflt = createOptimizer();
    await dflt.index(tools);
    assert.equal(names(await dflt.find(broad)).length, 8);
    for (const max of [1, 3, 50]) {
      const o = createOptimizer({ settings: resolveOptimizerSettings({ maxToolsToReturn: max }) });
      await o.index(tools);
      assert.equal(names(await o.find(broad)).length, max, `maxToolsToReturn ${max}`);
    }
  });

  it('token_metrics: JSON bytes ÷ 4 per tool, over all tools vs the returned ones', async () => {
    const unicode: McpTool = { name: 'häuser_suchen', description: 'Häuser und Wohnungen suchen 🏠' };
    const tools = [mail, files, geo, unicode];
    const o = createOptimizer();
    await o.index(tools);
    const baseline = tools.reduce((sum, t) => sum + tokens(t), 0);
    assert.ok(tokens(unicode) > Math.floor(JSON.stringify(unicode).length / 4), 'bytes, not UTF-16 units');
    const m = output(await o.find({ tool_description: 'send email' })).token_metrics;
    assert.deepEqual(m, {
      baseline_tokens: baseline,
      returned_tokens: tokens(mail),
      savings_percent: ((baseline - tokens(mail)) / baseline) * 100,
    });
    const empty = createOptimizer();
    await empty.index([]);
    assert.deepEqual(output(await empty.find({ tool_description: 'anything' })).token_metrics, {
      baseline_tokens: 0,
      returned_tokens: 0,
      savings_percent: 0,
    });
  });

  it('a scope hides tools from results and from the baseline', async () => {
    const o = createOptimizer();
    await o.index([mail, files, geo]);
    const scope = { allows: (n: string): boolean => n !== 'send_email' };
    const r = output(await o.find({ tool_description: 'send an email or list files' }, scope));
    assert.deepEqual(
      r.tools.map((t) => t.name),
      ['listFiles'],
    );
    assert.equal(r.token_metrics.baseline_tokens, tokens(files) + tokens(geo));
    // Same scope object again (cached baseline), then after a re-index (cache must not be stale).
    assert.equal(
      output(await o.find({ tool_description: 'files' }, scope)).token_metrics.baseline_tokens,
      tokens(files) + tokens(geo),
    );
    await o.index([files]);
    assert.equal(
      output(await o.find({ tool_description: 'files' }, scope)).token_metrics.baseline_tokens,
      tokens(files),
    );
  });

  it('refuses bad arguments with a tool error naming the field', async () => {
    const o = createOptimizer();
    await o.index([mail]);
    const cases: [unknown, RegExp][] = [
      [undefined, /find_tool arguments must be an object/],
      [[], /got an array/],
      [{}, /tool_description is required/],
      [{ tool_description: 42 }, /tool_description must be a string \(got a number\)/],
      [{ tool_description: '   ' }, /tool_description must not be empty/],
      [{ tool_description: 'x'.repeat(5000) }, /tool_description is too long/],
      [
        { tool_description: 'mail', tool_keywords: 'mail' },
        /tool_keywords must be an array of strings \(got a string\)/,
      ],
      [{ tool_description: 'mail', tool_keywords: ['ok', 7] }, /tool_keywords\[1\] must be a string/],
      [
        { tool_description: 'mail', tool_keywords: Array.from({ length: 40 }, () => 'k') },
        /tool_keywords has 40 entries/,
      ],
    ];
    for (const [args, pattern] of cases)
      assert.match(errorText(await o.find(args)), pattern, JSON.stringify(args));
    // null keywords are the same as none.
    assert.deepEqual(names(await o.find({ tool_description: 'email', tool_keywords: null })), ['send_email']);
  });
});

describe('optimizer resolveCall()', () => {
  const o = createOptimizer();
  void o.index([mail, files, geo]);

  it('names the inner call', () => {
    assert.deepEqual(o.resolveCall({ tool_name: 'send_email', parameters: { to: 'a@b.c' } }), {
      ok: true,
      name: 'send_email',
      arguments: { to: 'a@b.c' },
    });
    // Missing or null parameters mean none.
    assert.deepEqual(o.resolveCall({ tool_name: 'listFiles' }), {
      ok: true,
      name: 'listFiles',
      arguments: {},
    });
    assert.deepEqual(o.resolveCall({ tool_name: 'listFiles', parameters: null }), {
      ok: true,
      name: 'listFiles',
      arguments: {},
    });
  });

  it('hoists a tool_name nested in parameters', () => {
    assert.deepEqual(o.resolveCall({ parameters: { tool_name: 'lookup', postalCode: '75001' } }), {
      ok: true,
      name: 'lookup',
      arguments: { postalCode: '75001' },
    });
  });

  it('gives tool errors naming the field', () => {
    const cases: [unknown, RegExp][] = [
      ['send_email', /call_tool arguments must be an object/],
      [{ parameters: {} }, /tool_name is required/],
      [{ tool_name: 5, parameters: {} }, /tool_name must be a non-empty string \(got a number\)/],
      [{ tool_name: '', parameters: {} }, /tool_name must be a non-empty string/],
      [{ tool_name: 'listFiles', parameters: [] }, /parameters must be an object .*got an array/],
      [{ tool_name: 'listFiles', parameters: '{"path":"/"}' }, /parameters must be an object .*got a string/],
      [{ tool_name: 'nope', parameters: {} }, /^tool not found: nope\b/],
      [{ tool_name: 'send_email', parameters: {} }, /parameters\.to is required by tool send_email/],
      [{ tool_name: 'send_email', parameters: { toString: 1 } }, /parameters\.to is required/],
    ];
    for (const [args, pattern] of cases) {
      const r = o.resolveCall(args);
      assert.equal(r.ok, false, JSON.stringify(args));
      if (!r.ok) assert.match(errorText(r.result), pattern, JSON.stringify(args));
    }
  });

  it('a tool outside the scope is not found (its existence is not revealed)', () => {
    const r = o.resolveCall({ tool_name: 'send_email', parameters: { to: 'x' } }, { allows: () => false });
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(errorText(r.result), /^tool not found: send_email/);
  });
});

describe('optimizer index()', () => {
  it('re-indexing replaces the searchable and callable set', async () => {
    const o = createOptimizer();
    await o.index([mail, files]);
    assert.deepEqual(names(await o.find({ tool_description: 'email' })), ['send_email']);

    const mail2: McpTool = { name: 'send_email', description: 'Deliver a letter by post' };
    await o.index([mail2, files, geo]);
    assert.deepEqual(
      names(await o.find({ tool_description: 'message recipients' })),
      [],
      'old description is gone',
    );
    assert.deepEqual(output(await o.find({ tool_description: 'letter' })).tools, [mail2]);
    assert.equal(o.resolveCall({ tool_name: 'lookup', parameters: { postalCode: '1' } }).ok, true);

    await o.index([files]);
    assert.deepEqual(names(await o.find({ tool_description: 'letter postal' })), []);
    assert.equal(o.resolveCall({ tool_name: 'lookup', parameters: { postalCode: '1' } }).ok, false);
    assert.equal(
      output(await o.find({ tool_description: 'files' })).token_metrics.baseline_tokens,
      tokens(files),
    );
  });

  it('an unchanged list gives the same answers; idf follows the new corpus', async () => {
    const o = createOptimizer();
    const tools = syntheticTools(120);
    await o.index(tools);
    const before = output(await o.find({ tool_description: 'refund a payment' }));
    await o.index(structuredClone(tools));
    assert.deepEqual(output(await o.find({ tool_description: 'refund a payment' })), before);
  });

  it('refuses tool lists the endpoint should never produce', async () => {
    const o = createOptimizer();
    assert.throws(() => void o.index([mail, mail]), /send_email appears twice/);
    assert.throws(() => void o.index([{ name: '' }]), /non-empty name/);
  });
});
