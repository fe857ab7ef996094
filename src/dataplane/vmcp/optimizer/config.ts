/**
 * The vMCP config's `optimizer` block (ToolHive's MCP Optimizer, camelCase as in the reference's
 * YAML and `VirtualMCPServer.spec.config`) and its resolution into the settings the optimizer runs
 * with. The block's presence turns the optimizer on; without `embeddingService` the search is BM25
 * only and fully offline. The two numbers that the reference sends as strings (Kubernetes has no
 * portable float) are accepted as strings or numbers.
 */
import type { OptimizerConfig } from '../../../schemas/index.js';
import { goDurationNs, SkepError } from '../../../shared/index.js';

export type { OptimizerConfig };

/** The embedding service as the optimizer calls it. */
export interface EmbeddingSettings {
  provider: 'tei' | 'openai';
  /** Base URL without a trailing slash: TEI gets `POST <url>/embed`, openai `POST <url>/embeddings`. */
  url: string;
  /** Required for openai. */
  model: string | undefined;
  /** From env `OPENAI_API_KEY` (openai only); sent as a bearer token, never logged. */
  apiKey: string | undefined;
  headers: Readonly<Record<string, string>>;
  timeoutMs: number;
}

export interface OptimizerSettings {
  maxToolsToReturn: number;
  /** Share of `maxToolsToReturn` given to semantic hits (0–1). */
  hybridSearchSemanticRatio: number;
  /** Cosine distance (0 = same direction, 2 = opposite) above which semantic hits are dropped. */
  semanticDistanceThreshold: number;
  embedding: EmbeddingSettings | undefined;
}

/** ToolHive's defaults. */
export const OPTIMIZER_DEFAULTS = Object.freeze({
  maxToolsToReturn: 8,
  hybridSearchSemanticRatio: 0.5,
  semanticDistanceThreshold: 1,
  embeddingServiceTimeoutMs: 30_000,
});

const MAX_EMBEDDING_HEADERS = 32;
const FORBIDDEN_HEADERS = new Set(['authorization', 'content-type']);

function bad(message: string): SkepError {
  return new SkepError('invalid_config', message);
}

function numberIn(
  value: number | string | undefined,
  field: string,
  min: number,
  max: number,
  dflt: number,
): number {
  if (value === undefined || value === '') return dflt;
  const n = typeof value === 'number' ? value : Number(value.trim());
  if (!Number.isFinite(n) || (typeof value === 'string' && value.trim() === '')) {
    throw bad(`optimizer.${field} must be a number between ${min} and ${max} (got "${String(value)}")`);
  }
  if (n < min || n > max) throw bad(`optimizer.${field} must be between ${min} and ${max} (got ${n})`);
  return n;
}

/**
 * Checks the block and fills defaults. Throws `SkepError('invalid_config')` naming the field
 * (`optimizer.<field>`) for anything out of range. `env` supplies `OPENAI_API_KEY`.
 */
export function resolveOptimizerSettings(
  config: OptimizerConfig,
  env: Readonly<Record<string, string | undefined>> = process.env,
): OptimizerSettings {
  const max = config.maxToolsToReturn ?? OPTIMIZER_DEFAULTS.maxToolsToReturn;
  if (!Number.isInteger(max) || max < 1 || max > 50) {
    throw bad(`optimizer.maxToolsToReturn must be an integer from 1 to 50 (got ${String(max)})`);
  }
  const settings: OptimizerSettings = {
    maxToolsToReturn: max,
    hybridSearchSemanticRatio: numberIn(
      config.hybridSearchSemanticRatio,
      'hybridSearchSemanticRatio',
      0,
      1,
      OPTIMIZER_DEFAULTS.hybridSearchSemanticRatio,
    ),
    semanticDistanceThreshold: numberIn(
      config.semanticDistanceThreshold,
      'semanticDistanceThreshold',
      0,
      2,
      OPTIMIZER_DEFAULTS.semanticDistanceThreshold,
    ),
    embedding: undefined,
  };
  const service = config.embeddingService?.trim() ?? '';
  if (service === '') {
    for (const field of ['embeddingProvider', 'embeddingModel', 'embeddingHeaders'] as const) {
      if (config[field] !== undefined) {
        throw bad(`optimizer.${field} needs optimizer.embeddingService (the embedding service's base URL)`);
      }
    }
    return settings;
  }
  let url: URL;
  try {
    url = new URL(service);
  } catch {
    throw bad(`optimizer.embeddingService must be an absolute http(s) URL (got "${service}")`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw bad(`optimizer.embeddingService must be an http(s) URL (got "${url.protocol}")`);
  }
  if (url.username !== '' || url.password !== '') {
    throw bad('optimizer.embeddingService must not carry credentials; for openai set env OPENAI_API_KEY');
  }
  const provider = config.embeddingProvider ?? 'tei';
  const model = config.embeddingModel?.trim();
  if (provider === 'openai' && (model === undefined || model === '')) {
    throw bad('optimizer.embeddingModel is required when optimizer.embeddingProvider is "openai"');
  }
  const headers: Record<string, string> = {};
  if (config.embeddingHeaders !== undefined) {
    if (provider !== 'openai')
      throw bad('optimizer.embeddingHeaders applies only to embeddingProvider "openai"');
    const names = Object.keys(config.embeddingHeaders);
    if (names.length > MAX_EMBEDDING_HEADERS) {
      throw bad(
        `optimizer.embeddingHeaders may hold at most ${MAX_EMBEDDING_HEADERS} headers (got ${names.length})`,
      );
    }
    for (const name of names) {
      if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
        throw bad(`optimizer.embeddingHeaders: "${name}" is not a valid header name`);
      }
      if (FORBIDDEN_HEADERS.has(name.toLowerCase())) {
        throw bad(
          `optimizer.embeddingHeaders must not set ${name} (Authorization comes from env OPENAI_API_KEY; Content-Type is fixed)`,
        );
      }
      const value = config.embeddingHeaders[name]!;
      if (/[\r\n\0]/.test(value))
        throw bad(`optimizer.embeddingHeaders.${name} must not contain CR, LF or NUL`);
      headers[name] = value;
    }
  }
  let timeoutMs: number = OPTIMIZER_DEFAULTS.embeddingServiceTimeoutMs;
  if (config.embeddingServiceTimeout !== undefined) {
    const nanos = goDurationNs(config.embeddingServiceTimeout.trim());
    if (nanos === undefined || nanos < 0) {
      throw bad(
        `optimizer.embeddingServiceTimeout must be a duration such as "30s" or "500ms" (got "${config.embeddingServiceTimeout}")`,
      );
    }
    // 0 means the default, as in the reference.
    if (nanos > 0) timeoutMs = Math.max(1, Math.round(nanos / 1e6));
  }
  const key = provider === 'openai' ? env['OPENAI_API_KEY'] : undefined;
  settings.embedding = {
    provider,
    url: service.replace(/\/+$/, ''),
    model: model === '' ? undefined : model,
    apiKey: key === undefined || key === '' ? undefined : key,
    headers,
    timeoutMs,
  };
  return settings;
}
