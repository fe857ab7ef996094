/**
 * Client of the embedding service (as ToolHive's optimizer uses one): Hugging Face Text Embeddings
 * Inference (`POST <url>/embed` with `{inputs, truncate: true}` → `number[][]`) or an
 * OpenAI-compatible API (`POST <url>/embeddings` with `{model, input, encoding_format: "float"}` →
 * `{data: [{index, embedding}]}`; `<url>` is the API base, e.g. `https://api.openai.com/v1`).
 * Vectors come back normalised to length 1, so cosine similarity is a dot product. Every request
 * has a timeout; errors say what went wrong without echoing the response body or any header value.
 */
import type { EmbeddingSettings } from './config.js';

/** OpenAI caps one request at 2,048 inputs; smaller chunks keep each request short. */
const BATCH = 256;

export interface EmbeddingClient {
  embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]>;
}

export function createEmbeddingClient(settings: EmbeddingSettings): EmbeddingClient {
  const openai = settings.provider === 'openai';
  const headers: Record<string, string> = Object.assign({}, settings.headers, {
    'content-type': 'application/json',
  });
  if (openai && settings.apiKey !== undefined) headers['authorization'] = `Bearer ${settings.apiKey}`;
  const service: EmbeddingService = {
    settings,
    openai,
    endpoint: `${settings.url}${openai ? '/embeddings' : '/embed'}`,
    headers,
  };
  return {
    async embed(texts, signal) {
      const out: Float32Array[] = [];
      for (let i = 0; i < texts.length; i += BATCH) {
        out.push(...(await embedChunk(service, texts.slice(i, i + BATCH), signal)));
      }
      const dims = out[0]?.length;
      if (out.some((v) => v.length !== dims))
        throw new Error('embedding service returned vectors of mixed sizes');
      return out;
    },
  };
}

/** Where and how one client sends its requests. */
interface EmbeddingService {
  settings: EmbeddingSettings;
  /** The OpenAI-compatible API rather than Text Embeddings Inference. */
  openai: boolean;
  endpoint: string;
  headers: Record<string, string>;
}

/** One request: the normalised vectors of `texts`, in order. */
async function embedChunk(
  service: EmbeddingService,
  texts: readonly string[],
  signal: AbortSignal | undefined,
): Promise<Float32Array[]> {
  const { settings, openai } = service;
  const body = openai
    ? { model: settings.model, input: texts, encoding_format: 'float' }
    : { inputs: texts, truncate: true };
  const response = await post(service, body, signal);
  if (response.status !== 200) {
    await response.body?.cancel();
    throw new Error(`embedding service answered HTTP ${response.status}`);
  }
  let json: unknown;
  try {
    json = await response.json();
  } catch {
    throw new Error('embedding service answered with something that is not JSON');
  }
  const rows = openai ? openAiRows(json, texts.length) : json;
  if (!Array.isArray(rows) || rows.length !== texts.length) {
    throw new Error(
      `embedding service returned ${describeCount(rows)} embeddings for ${texts.length} inputs`,
    );
  }
  return rows.map((row: unknown) => normalise(row));
}

/** POSTs `body` within the configured timeout; a timeout or a network error says which it was. */
async function post(
  service: EmbeddingService,
  body: object,
  signal: AbortSignal | undefined,
): Promise<Response> {
  const { timeoutMs } = service.settings;
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    return await fetch(service.endpoint, {
      method: 'POST',
      headers: service.headers,
      body: JSON.stringify(body),
      signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
    });
  } catch (err) {
    if (timeout.aborted) {
      throw new Error(`embedding service did not answer within ${timeoutMs} ms`, { cause: err });
    }
    throw new Error(`embedding service unreachable: ${(err as Error).message}`, { cause: err });
  }
}

function describeCount(rows: unknown): string {
  return Array.isArray(rows) ? String(rows.length) : 'no list of';
}

/** `{data: [{index, embedding}]}` → embeddings in input order (the API may reorder them). */
function openAiRows(json: unknown, count: number): unknown[] | undefined {
  const data = (json as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) return undefined;
  const rows: unknown[] = new Array<unknown>(count);
  for (const item of data as { index?: unknown; embedding?: unknown }[]) {
    const index = item?.index;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= count) {
      throw new Error(
        `embedding service returned an embedding with index ${String(index)} for ${count} inputs`,
      );
    }
    rows[index] = item.embedding;
  }
  return data.length === count ? rows : data;
}

function normalise(row: unknown): Float32Array {
  if (!Array.isArray(row) || row.length === 0)
    throw new Error('embedding service returned an empty or malformed vector');
  const v = new Float32Array(row.length);
  let sum = 0;
  for (let i = 0; i < row.length; i++) {
    const x = row[i] as unknown;
    if (typeof x !== 'number' || !Number.isFinite(x))
      throw new Error('embedding service returned a non-numeric vector');
    v[i] = x;
    sum += x * x;
  }
  if (sum === 0) throw new Error('embedding service returned a zero vector');
  const inv = 1 / Math.sqrt(sum);
  for (let i = 0; i < v.length; i++) v[i]! *= inv;
  return v;
}
