/**
 * JSON-RPC 2.0 messages as MCP uses them (MCP 2025-11-25 "Base Protocol": messages are
 * JSON-RPC requests, responses and notifications; request ids are strings or integers). The
 * one message type of the proxy, the virtual MCP server, the runner's own client, the audit
 * log and the web UI, with the error codes of JSON-RPC 2.0 §5.1 and the few MCP adds.
 *
 * The constructors build each message with its members in one fixed order, so that the
 * objects share a shape; they run on the proxy's per-request path.
 */

export type JsonRpcId = string | number;

/** The `error` member of a response (JSON-RPC 2.0 §5.1). */
export interface JsonRpcError {
  code: number;
  message: string;
  data?: unknown;
}

/** Any JSON-RPC message, loosely typed: the proxy routes messages it does not fully understand. */
export interface JsonRpcMessage {
  jsonrpc: '2.0';
  id?: JsonRpcId | null;
  method?: string;
  params?: Record<string, unknown>;
  result?: unknown;
  error?: JsonRpcError;
}

/** A response that carries an error (JSON-RPC 2.0 §5); `id` is absent or null when unknown. */
export interface JsonRpcErrorResponse {
  jsonrpc: '2.0';
  id?: JsonRpcId | null;
  error: JsonRpcError;
}

// JSON-RPC 2.0 §5.1, the pre-defined errors.
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;
/** Implementation-defined server errors (-32000..-32099). */
export const UPSTREAM_UNAVAILABLE = -32000;
export const REQUEST_TIMEOUT = -32001;
export const SESSION_NOT_FOUND = -32001;
/** MCP 2025-11-25 "Server Features / Resources / Error Handling": an unknown resource URI. */
export const RESOURCE_NOT_FOUND = -32002;
/** A request its sender cancelled (the code the Language Server Protocol gives RequestCancelled). */
export const REQUEST_CANCELLED = -32800;

/**
 * An error response. An `undefined` id leaves the member out (the reference's middlewares
 * omit it, never null, when the request had none); pass `null` for JSON-RPC 2.0 §5's "id
 * could not be determined".
 */
export function jsonRpcError(
  id: JsonRpcId | null | undefined,
  code: number,
  message: string,
  data?: unknown,
): JsonRpcErrorResponse {
  const error: JsonRpcError = data === undefined ? { code, message } : { code, message, data };
  return id === undefined ? { jsonrpc: '2.0', error } : { jsonrpc: '2.0', id, error };
}

/** The text of an error response; a missing id is sent as null (JSON-RPC 2.0 §5). */
export function errorMessage(
  id: JsonRpcId | null | undefined,
  code: number,
  message: string,
  data?: unknown,
): string {
  return JSON.stringify(jsonRpcError(id ?? null, code, message, data));
}

export function resultMessage(id: JsonRpcId, result: unknown): string {
  return JSON.stringify({ jsonrpc: '2.0', id, result });
}

/** A request: it names a method and carries an id its response must echo. */
export type JsonRpcRequest = JsonRpcMessage & { method: string; id: JsonRpcId };
/** A notification: a method and no id (JSON-RPC 2.0 §4.1); nobody answers it. */
export type JsonRpcNotification = JsonRpcMessage & { method: string; id?: null };

export function isRequest(m: JsonRpcMessage): m is JsonRpcRequest {
  return typeof m.method === 'string' && m.id !== undefined && m.id !== null;
}

export function isNotification(m: JsonRpcMessage): m is JsonRpcNotification {
  return typeof m.method === 'string' && (m.id === undefined || m.id === null);
}

/**
 * A JSON object whose members may be read and set by name (`params`, `_meta`, a result).
 * Arrays pass too: looking a name up in one finds nothing, as it did before the check.
 */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

export function isValidId(id: unknown): id is JsonRpcId {
  return typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id));
}

/** Structural check of one incoming message; returns a reason when it is not JSON-RPC. */
export function invalidReason(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return 'message must be a JSON object';
  const m = value as Record<string, unknown>;
  if (m['jsonrpc'] !== '2.0') return 'jsonrpc must be "2.0"';
  if (m['method'] !== undefined) {
    if (typeof m['method'] !== 'string') return 'method must be a string';
    if (m['id'] !== undefined && !isValidId(m['id'])) return 'id must be a string or an integer';
    const params = m['params'];
    if (params !== undefined && (params === null || typeof params !== 'object'))
      return 'params must be an object';
    return undefined;
  }
  if (!isValidId(m['id'])) return 'a response needs a string or integer id';
  if (m['result'] === undefined && m['error'] === undefined) return 'a response needs result or error';
  return undefined;
}

/**
 * The messages of a POST body (one message or a batch), each checked by `invalidReason`; a
 * string is the reason the first bad one is not JSON-RPC.
 */
export function messagesOf(body: unknown): JsonRpcMessage[] | string {
  const items: unknown[] = Array.isArray(body) ? body : [body];
  for (const m of items) {
    const why = invalidReason(m);
    if (why !== undefined) return why;
  }
  // Every item passed invalidReason, the structural check of JsonRpcMessage.
  return items as JsonRpcMessage[];
}

/**
 * Depth of the deepest array/object nesting in a JSON text, skipping strings. JSON.parse has
 * no depth limit of its own; checking first keeps a hostile body from building huge trees.
 */
export function jsonDepthExceeds(text: string, maxDepth: number): boolean {
  // A text shorter than 2*maxDepth cannot nest deeper than maxDepth.
  if (text.length <= maxDepth * 2) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > maxDepth) return true;
    } else if (c === 125 /* } */ || c === 93 /* ] */) depth--;
  }
  return false;
}
