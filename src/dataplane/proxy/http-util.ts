/**
 * Small HTTP helpers for the proxy's data plane (node:http, no framework on the hot path):
 * the Content-Type test, JSON and JSON-RPC error replies.
 */
import {
  type IncomingMessage,
  type OutgoingHttpHeader,
  type OutgoingHttpHeaders,
  ServerResponse,
} from 'node:http';
import { errorMessage, PROTOCOL_ERRORS, type ProtocolRefusal } from '../../protocol/index.js';

/**
 * True when a `Content-Type` value names the media type `type` (given in lower case), with or
 * without parameters (`application/json; charset=utf-8`). RFC 9110 §8.3.1: type and subtype
 * are case-insensitive, and whitespace may precede the `;`. A plain string test: it runs for
 * every MCP POST, so no parser.
 */
export function hasMediaType(value: string | undefined, type: string): boolean {
  if (value === undefined) return false;
  if (value === type) return true;
  const semi = value.indexOf(';');
  const essence = (semi === -1 ? value : value.slice(0, semi)).trim();
  return essence.length === type.length && essence.toLowerCase() === type;
}

/**
 * Set on every response the proxy sends (its own and relayed ones): a browser must never
 * sniff a body into HTML or script on the proxy's origin (Fetch, "X-Content-Type-Options").
 */
export const NOSNIFF = 'nosniff';

const NOSNIFF_HEADER = 'x-content-type-options';

/**
 * The proxy's response class (`createServer({ ServerResponse })`): whoever writes a response
 * (the proxy, its outlets, the transparent relay, a mounted authorization server), its head
 * carries `X-Content-Type-Options: nosniff`. The header goes into the header object given to
 * `writeHead` when there is one, else it is set on the response: a header set with `setHeader`
 * before `writeHead(status, object)` sends Node down its slower path, which merges the two
 * and validates every header twice (about 1 µs of CPU per response, measured).
 */
export class ProxyResponse<
  Request extends IncomingMessage = IncomingMessage,
> extends ServerResponse<Request> {
  /**
   * The `Content-Length` given to `writeHead` in its header object. Node writes such an object
   * into the head only (`getHeader` does not see it); `declaredLength` reads it here.
   */
  get contentLength(): OutgoingHttpHeaders[string] {
    return this.#contentLength;
  }

  #contentLength: OutgoingHttpHeaders[string];

  override writeHead(
    statusCode: number,
    statusMessage?: string,
    headers?: OutgoingHttpHeaders | OutgoingHttpHeader[],
  ): this;
  override writeHead(statusCode: number, headers?: OutgoingHttpHeaders | OutgoingHttpHeader[]): this;
  override writeHead(
    statusCode: number,
    second?: string | OutgoingHttpHeaders | OutgoingHttpHeader[],
    third?: OutgoingHttpHeaders | OutgoingHttpHeader[],
  ): this {
    if (typeof second === 'string') return super.writeHead(statusCode, second, this.#head(third));
    return super.writeHead(statusCode, this.#head(second));
  }

  /** The headers to write: with nosniff; their `Content-Length` noted. */
  #head(
    headers: OutgoingHttpHeaders | OutgoingHttpHeader[] | undefined,
  ): OutgoingHttpHeaders | OutgoingHttpHeader[] | undefined {
    if (headers !== undefined && !Array.isArray(headers)) {
      this.#contentLength = headers['content-length'];
      // A copy: callers may pass shared constants.
      return NOSNIFF_HEADER in headers ? headers : { [NOSNIFF_HEADER]: NOSNIFF, ...headers };
    }
    if (!this.hasHeader(NOSNIFF_HEADER)) this.setHeader(NOSNIFF_HEADER, NOSNIFF);
    return headers;
  }
}

/**
 * The response's `Content-Length`, when its head declared one (streams do not), given to
 * `writeHead` or set before it.
 */
export function declaredLength(res: ServerResponse): number | undefined {
  const value =
    (res instanceof ProxyResponse ? res.contentLength : undefined) ?? res.getHeader('content-length');
  const n = typeof value === 'string' ? Number(value) : value;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/**
 * Sends one of the refusals of the protocol error table (its HTTP status and JSON-RPC error,
 * id null); `message` words the ones whose message is not fixed.
 */
export function sendRefusal(
  res: ServerResponse,
  refusal: ProtocolRefusal,
  message = refusal.message ?? '',
  headers?: Record<string, string>,
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, refusal.status, errorMessage(null, refusal.code, message), headers);
}

/** Sends `value` as JSON (a string is taken as JSON text already). */
export function sendJson(
  res: ServerResponse,
  status: number,
  value: unknown,
  headers?: Record<string, string>,
): void {
  const body = typeof value === 'string' ? value : JSON.stringify(value);
  res.writeHead(
    status,
    Object.assign({}, headers, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
    }),
  );
  res.end(body);
}

export function badRequest(res: ServerResponse, message: string): void {
  sendRefusal(res, PROTOCOL_ERRORS.invalid_request, message);
}
