/**
 * The vMCP `optimizer` config block (ToolHive's MCP Optimizer): defaults, the numbers the reference
 * sends as strings, ranges, the embedding service fields, and errors that name the field.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Compile } from 'typebox/compile';
import { OptimizerConfigSchema } from '../../../src/schemas/index.js';
import { isSkepError } from '../../../src/shared/index.js';
import {
  OPTIMIZER_DEFAULTS,
  resolveOptimizerSettings,
  type OptimizerConfig,
} from '../../../src/dataplane/vmcp/optimizer/index.js';

function refused(config: OptimizerConfig, pattern: RegExp): void {
  assert.throws(
    () => resolveOptimizerSettings(config, {}),
    (err: unknown) => isSkepError(err) && err.code === 'invalid_config' && pattern.test(err.message),
    JSON.stringify(config),
  );
}

describe('optimizer config', () => {
  it('an empty block is BM25 only with the reference defaults (8, 0.5, 1.0)', () => {
    assert.deepEqual(resolveOptimizerSettings({}, {}), {
      maxToolsToReturn: 8,
      hybridSearchSemanticRatio: 0.5,
      semanticDistanceThreshold: 1,
      embedding: undefined,
    });
    assert.equal(OPTIMIZER_DEFAULTS.embeddingServiceTimeoutMs, 30_000);
  });

  it('accepts the two ratios as strings (as the CRD sends them) or numbers', () => {
    const s = resolveOptimizerSettings(
      { hybridSearchSemanticRatio: '0.25', semanticDistanceThreshold: 1.5 },
      {},
    );
    assert.equal(s.hybridSearchSemanticRatio, 0.25);
    assert.equal(s.semanticDistanceThreshold, 1.5);
  });

  it('refuses out-of-range values, naming the field', () => {
    refused({ maxToolsToReturn: 0 }, /^optimizer\.maxToolsToReturn must be an integer from 1 to 50/);
    refused({ maxToolsToReturn: 51 }, /optimizer\.maxToolsToReturn/);
    refused({ maxToolsToReturn: 2.5 }, /optimizer\.maxToolsToReturn/);
    refused(
      { hybridSearchSemanticRatio: '1.5' },
      /^optimizer\.hybridSearchSemanticRatio must be between 0 and 1/,
    );
    refused({ hybridSearchSemanticRatio: 'half' }, /^optimizer\.hybridSearchSemanticRatio must be a number/);
    refused(
      { semanticDistanceThreshold: -0.1 },
      /^optimizer\.semanticDistanceThreshold must be between 0 and 2/,
    );
  });

  it('resolves a TEI service (default provider) and an OpenAI-compatible one', () => {
    const tei = resolveOptimizerSettings({ embeddingService: 'http://127.0.0.1:8080/' }, {});
    assert.deepEqual(tei.embedding, {
      provider: 'tei',
      url: 'http://127.0.0.1:8080',
      model: undefined,
      apiKey: undefined,
      headers: {},
      timeoutMs: 30_000,
    });
    const openai = resolveOptimizerSettings(
      {
        embeddingService: 'https://api.example.com/v1',
        embeddingProvider: 'openai',
        embeddingModel: 'text-embedding-3-small',
        embeddingHeaders: { 'X-Team': 'blue' },
        embeddingServiceTimeout: '1500ms',
      },
      { OPENAI_API_KEY: 'sk-test' },
    );
    assert.deepEqual(openai.embedding, {
      provider: 'openai',
      url: 'https://api.example.com/v1',
      model: 'text-embedding-3-small',
      apiKey: 'sk-test',
      headers: { 'X-Team': 'blue' },
      timeoutMs: 1500,
    });
    // TEI never gets the OpenAI key.
    assert.equal(
      resolveOptimizerSettings({ embeddingService: 'http://h' }, { OPENAI_API_KEY: 'k' }).embedding?.apiKey,
      undefined,
    );
  });

  it('refuses bad embedding settings, naming the field', () => {
    refused(
      { embeddingService: 'not a url' },
      /^optimizer\.embeddingService must be an absolute http\(s\) URL/,
    );
    refused({ embeddingService: 'ftp://h/' }, /^optimizer\.embeddingService must be an http\(s\) URL/);
    refused({ embeddingService: 'https://u:p@h/' }, /optimizer\.embeddingService must not carry credentials/);
    refused(
      { embeddingService: 'https://h', embeddingProvider: 'openai' },
      /optimizer\.embeddingModel is required/,
    );
    refused({ embeddingModel: 'm' }, /optimizer\.embeddingModel needs optimizer\.embeddingService/);
    refused(
      { embeddingService: 'https://h', embeddingHeaders: { A: 'b' } },
      /embeddingHeaders applies only to .*openai/,
    );
    const openai = {
      embeddingService: 'https://h',
      embeddingProvider: 'openai',
      embeddingModel: 'm',
    } as const;
    refused(
      { ...openai, embeddingHeaders: { Authorization: 'Bearer x' } },
      /optimizer\.embeddingHeaders must not set Authorization/,
    );
    refused({ ...openai, embeddingHeaders: { 'content-type': 'x' } }, /must not set content-type/);
    refused(
      { ...openai, embeddingHeaders: { 'bad header': 'x' } },
      /"bad header" is not a valid header name/,
    );
    refused(
      { ...openai, embeddingHeaders: { X: 'a\r\nB: c' } },
      /optimizer\.embeddingHeaders\.X must not contain CR, LF/,
    );
    const many = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`X-H${i}`, 'v']));
    refused({ ...openai, embeddingHeaders: many }, /at most 32 headers \(got 33\)/);
    refused(
      { embeddingService: 'https://h', embeddingServiceTimeout: 'soon' },
      /optimizer\.embeddingServiceTimeout must be a duration/,
    );
  });

  it('the TypeBox schema takes the reference field names and refuses unknown ones', () => {
    const check = Compile(OptimizerConfigSchema);
    assert.equal(
      check.Check({
        embeddingService: 'http://tei:8080',
        embeddingServiceTimeout: '30s',
        embeddingProvider: 'tei',
        maxToolsToReturn: 8,
        hybridSearchSemanticRatio: '0.5',
        semanticDistanceThreshold: '1.0',
      }),
      true,
    );
    assert.equal(check.Check({ maxToolsToReturn: 0 }), false);
    assert.equal(check.Check({ embeddingProvider: 'ollama' }), false);
    assert.equal(check.Check({ max_tools: 3 }), false);
  });
});
