/**
 * The protocol error table of the MCP endpoints: for each way the proxy or a stage of its
 * middleware pipeline refuses a request before (or instead of) the server's answer, the HTTP
 * status and the JSON-RPC error (code, and the message when it is fixed). The management API
 * and the CLI map `SkepError` codes with their own table (`ERROR_CODES` in src/shared/errors.ts);
 * this one is for MCP clients, which read the JSON-RPC body.
 *
 * Codes are JSON-RPC 2.0 §5.1's where one fits. The authorization and rate-limit refusals
 * carry the HTTP status as their JSON-RPC code, as the reference's middlewares do.
 */
import {
  INTERNAL_ERROR,
  INVALID_REQUEST,
  type JsonRpcErrorResponse,
  type JsonRpcId,
  jsonRpcError,
  PARSE_ERROR,
  SESSION_NOT_FOUND,
  UPSTREAM_UNAVAILABLE,
} from './json-rpc.js';

/** The error a batch gets when a middleware must judge each message (reference wording). */
export const BATCH_REFUSED =
  'JSON-RPC batch requests are not supported (batching was removed in MCP revision 2025-06-18)';

export interface ProtocolRefusal {
  readonly status: number;
  readonly code: number;
  /** The message when it is always the same; else the site words it. */
  readonly message?: string;
}

export const PROTOCOL_ERRORS = {
  /** The body is not JSON, or nests deeper than the proxy parses. */
  parse_error: { status: 400, code: PARSE_ERROR, message: 'Parse error: request body is not valid JSON' },
  /** Not a JSON-RPC message, or not one this endpoint takes (wrong path, method or header). */
  invalid_request: { status: 400, code: INVALID_REQUEST },
  /** A batch where the middleware pipeline judges one message at a time. */
  batch_refused: { status: 400, code: INVALID_REQUEST, message: BATCH_REFUSED },
  /** No caller token, or another's (the proxy is its owner's only). */
  not_the_owner: { status: 401, code: INVALID_REQUEST },
  /** Host or Origin is not one the proxy answers to (DNS-rebinding guard). */
  forbidden_host: { status: 403, code: INVALID_REQUEST },
  /** The authorization policy denies the request (the reference's body). */
  unauthorized: { status: 403, code: 403, message: 'Unauthorized' },
  /** No MCP endpoint at this path. */
  no_endpoint: { status: 404, code: INVALID_REQUEST },
  /** MCP 2025-11-25 "Session Management": the session id is unknown or ended. */
  session_not_found: { status: 404, code: SESSION_NOT_FOUND, message: 'Session not found' },
  /** A GET without `Accept: text/event-stream`. */
  not_acceptable: { status: 406, code: INVALID_REQUEST },
  /** The session already has its one standing stream. */
  stream_conflict: { status: 409, code: INVALID_REQUEST },
  /** The body is larger than the proxy reads. */
  payload_too_large: { status: 413, code: INVALID_REQUEST },
  /** A POST that is not `application/json`. */
  unsupported_media_type: { status: 415, code: INVALID_REQUEST },
  /** A rate limit refused the call; `data.retryAfterSeconds` says when to try again. */
  rate_limited: { status: 429, code: 429, message: 'Rate limit exceeded' },
  /** The proxy failed; the details are in its log only. */
  internal_error: { status: 500, code: INTERNAL_ERROR, message: 'internal proxy error' },
  /** The MCP server could not be reached. */
  upstream_unreachable: { status: 502, code: UPSTREAM_UNAVAILABLE },
  /** The MCP server is not running (yet), or there are too many sessions. */
  upstream_unavailable: { status: 503, code: UPSTREAM_UNAVAILABLE },
  /** More sessions than the proxy keeps. */
  too_many_sessions: {
    status: 503,
    code: UPSTREAM_UNAVAILABLE,
    message: 'Too many sessions; try again later',
  },
} as const satisfies Record<string, ProtocolRefusal>;

export type ProtocolErrorKind = keyof typeof PROTOCOL_ERRORS;

/** The JSON-RPC body of a refusal whose message is fixed; `id` is left out when undefined. */
export function refusalBody(
  kind: {
    [K in ProtocolErrorKind]: (typeof PROTOCOL_ERRORS)[K] extends { message: string } ? K : never;
  }[ProtocolErrorKind],
  id: JsonRpcId | null | undefined,
  data?: unknown,
): JsonRpcErrorResponse {
  const refusal = PROTOCOL_ERRORS[kind];
  return jsonRpcError(id, refusal.code, refusal.message, data);
}
