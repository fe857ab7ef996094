/**
 * A small MCP client for the playground. Messages go to the workload through
 * `POST /api/v1beta/workloads/:name/mcp` on this origin (src/control/api/ui.ts), which passes the
 * Streamable HTTP exchange through; the answer is JSON or an SSE stream read to its end.
 * Every exchange is kept as raw JSON-RPC for the page to show.
 */
import { jsonEvents, type JsonRpcMessage, SseDecoder } from '../../protocol/index.js';
import { ApiError, csrfHeaders, request } from './api.js';

export interface Exchange {
  request: unknown;
  response: unknown;
}

export interface Tool {
  name: string;
  title?: string;
  description?: string;
  inputSchema?: JsonSchema;
}
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  description?: string;
  enum?: unknown[];
  default?: unknown;
  items?: JsonSchema;
  title?: string;
}

const PROTOCOL_VERSION = '2025-06-18';

/** The messages of an SSE body (one per event's data) that parse as JSON. */
export function parseSse(text: string): unknown[] {
  const out: unknown[] = [];
  const events = new SseDecoder({ onEvent: jsonEvents((m: unknown) => out.push(m)) });
  events.push(text);
  events.end();
  return out;
}

export class McpSession {
  #id = 0;
  #session: string | undefined;
  #protocol = PROTOCOL_VERSION;
  readonly exchanges: Exchange[] = [];
  serverInfo: { name?: string; version?: string } = {};
  capabilities: Record<string, unknown> = {};

  constructor(readonly workload: string) {}

  async #post(message: Record<string, unknown>): Promise<JsonRpcMessage | undefined> {
    const headers: Record<string, string> = {
      ...csrfHeaders(),
      'content-type': 'application/json',
      'mcp-protocol-version': this.#protocol,
    };
    if (this.#session !== undefined) headers['mcp-session-id'] = this.#session;
    let res: Response;
    try {
      res = await fetch(`/api/v1beta/workloads/${encodeURIComponent(this.workload)}/mcp`, {
        method: 'POST',
        headers,
        body: JSON.stringify(message),
      });
    } catch (err) {
      throw new ApiError(0, 'unreachable', `cannot reach skep serve (${(err as Error).message})`);
    }
    const session = res.headers.get('mcp-session-id');
    if (session !== null) this.#session = session;
    const text = await res.text();
    const type = res.headers.get('content-type') ?? '';
    let response: unknown;
    if (type.includes('text/event-stream')) {
      const messages = parseSse(text);
      response = messages.find((m) => (m as { id?: unknown }).id === message['id']) ?? messages.at(-1);
    } else if (text !== '') {
      try {
        response = JSON.parse(text);
      } catch {
        response = text;
      }
    }
    this.exchanges.push({ request: message, response: response ?? `(HTTP ${res.status}, no body)` });
    if (!res.ok) {
      const body = (response ?? {}) as { code?: unknown; message?: unknown; error?: { message?: unknown } };
      const messageText =
        typeof body.message === 'string'
          ? body.message
          : typeof body.error?.message === 'string'
            ? body.error.message
            : `the workload answered HTTP ${res.status}`;
      throw new ApiError(
        res.status,
        typeof body.code === 'string' ? body.code : `http_${res.status}`,
        messageText,
      );
    }
    return response as JsonRpcMessage | undefined;
  }

  /** A request; the JSON-RPC error of the answer becomes an ApiError. */
  async call(method: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const response = await this.#post({ jsonrpc: '2.0', id: ++this.#id, method, params });
    if (response?.error !== undefined)
      throw new ApiError(200, `jsonrpc_${response.error.code}`, response.error.message);
    if (response?.result === undefined) throw new ApiError(200, 'no_result', `no answer to ${method}`);
    return response.result as Record<string, unknown>;
  }

  async connect(): Promise<void> {
    const result = await this.call('initialize', {
      protocolVersion: PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: 'skep-ui-playground', version: '1' },
    });
    if (typeof result['protocolVersion'] === 'string') this.#protocol = result['protocolVersion'];
    this.serverInfo = result['serverInfo'] ?? {};
    this.capabilities = (result['capabilities'] ?? {}) as Record<string, unknown>;
    await this.#post({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }

  /** Ends the session on the server (best effort). */
  async close(): Promise<void> {
    // The pass-through carries POSTs only; the proxy ends idle sessions on its own.
    this.#session = undefined;
  }
}

export { request };
