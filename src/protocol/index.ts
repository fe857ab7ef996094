/**
 * The protocol toolkit: JSON-RPC 2.0 / MCP messages and their error codes, the error table of
 * the MCP endpoints (HTTP status and JSON-RPC error per refusal), and the one reader of
 * server-sent event streams.
 *
 * The web UI's browser bundle imports this index (src/control/ui/mcp.ts), and the runner loads it on
 * every start: what it exports must load in a browser (no `node:` module) and stay small.
 */
export {
  BATCH_REFUSED,
  PROTOCOL_ERRORS,
  type ProtocolErrorKind,
  type ProtocolRefusal,
  refusalBody,
} from './errors.js';
export {
  errorMessage,
  INTERNAL_ERROR,
  INVALID_PARAMS,
  INVALID_REQUEST,
  invalidReason,
  isJsonObject,
  isNotification,
  isRequest,
  isValidId,
  jsonDepthExceeds,
  type JsonRpcError,
  type JsonRpcErrorResponse,
  type JsonRpcId,
  type JsonRpcMessage,
  type JsonRpcNotification,
  type JsonRpcRequest,
  jsonRpcError,
  messagesOf,
  METHOD_NOT_FOUND,
  PARSE_ERROR,
  REQUEST_CANCELLED,
  REQUEST_TIMEOUT,
  RESOURCE_NOT_FOUND,
  resultMessage,
  SESSION_NOT_FOUND,
  UPSTREAM_UNAVAILABLE,
} from './json-rpc.js';
export { jsonEvents, readSse, SseDecoder, type SseCallbacks, type SseEvent, type SseOptions } from './sse.js';
