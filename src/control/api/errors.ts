/**
 * The one place where errors become HTTP responses for the management API. Every error
 * body is `{ code, message }` (codes: `ERROR_CODES` in src/shared/errors.ts), plus the
 * error's `details` when it has some. Unexpected
 * errors are logged with their stack and answered with an opaque 500.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ERROR_CODES, type ErrorCode, isSkepError } from '../../shared/index.js';

export interface ErrorBody {
  code: string;
  message: string;
}

/** The generic codes: an error that carries only an HTTP status (Fastify's) is sent with its status's. */
const GENERIC_CODES: readonly ErrorCode[] = [
  'bad_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'method_not_allowed',
  'conflict',
  'payload_too_large',
  'unsupported_media_type',
  'rate_limited',
  'not_implemented',
  'bad_gateway',
  'unavailable',
  'gateway_timeout',
];
const GENERIC_BY_STATUS = new Map<number, ErrorCode>(
  GENERIC_CODES.map((code) => [ERROR_CODES[code].status, code]),
);

/**
 * `details` (a `SkepError`'s machine-readable extras, e.g. the auth status of
 * `registry_auth_required`) are added next to `code` and `message`, which they cannot replace.
 */
export function sendError(
  reply: FastifyReply,
  status: number,
  code: string,
  message: string,
  details?: Record<string, unknown>,
): FastifyReply {
  const body: ErrorBody =
    details === undefined ? { code, message } : Object.assign({}, details, { code, message });
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}

/** Sends the error body of `code` with the HTTP status the table gives it. */
function sendCode(
  reply: FastifyReply,
  code: ErrorCode,
  message: string,
  details?: Record<string, unknown>,
): FastifyReply {
  return sendError(reply, ERROR_CODES[code].status, code, message, details);
}

function describeValidation(err: FastifyError): string {
  const first = err.validation?.[0];
  if (first === undefined) return err.message;
  const where = err.validationContext ?? 'request';
  const path = first.instancePath.replace(/^\//, '').replaceAll('/', '.');
  if (first.keyword === 'required') {
    const missing = (first.params as { missingProperty?: string }).missingProperty ?? '';
    return `${where}.${path === '' ? '' : `${path}.`}${missing}: is required`;
  }
  if (first.keyword === 'additionalProperties') {
    const extra = (first.params as { additionalProperty?: string }).additionalProperty ?? '';
    return `${where}.${path === '' ? '' : `${path}.`}${extra}: is not a known field`;
  }
  if (first.keyword === 'enum') {
    // Say what to send instead: the allowed values (JSON Schema `enum`).
    const allowed = (first.params as { allowedValues?: unknown[] }).allowedValues ?? [];
    return `${where}${path === '' ? '' : `.${path}`}: must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}`;
  }
  return `${where}${path === '' ? '' : `.${path}`}: ${first.message ?? 'is invalid'}`;
}

export function handleError(
  err: FastifyError | Error,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  if (isSkepError(err)) return sendCode(reply, err.code, err.message, err.details);
  const fe = err as FastifyError;
  if (fe.validation !== undefined) {
    return sendCode(reply, 'bad_request', describeValidation(fe));
  }
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return sendCode(reply, 'bad_request', `the request body is not valid JSON: ${fe.message}`);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return sendCode(reply, 'bad_request', 'the request body is empty; send a JSON object');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return sendCode(reply, 'payload_too_large', 'the request body is larger than 1 MiB');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return sendCode(reply, 'unsupported_media_type', 'send the request body as application/json');
    default:
      break;
  }
  if (err instanceof SyntaxError) {
    return sendCode(reply, 'bad_request', `the request body is not valid JSON: ${err.message}`);
  }
  const status = typeof fe.statusCode === 'number' ? fe.statusCode : 500;
  if (status >= 400 && status < 500) {
    return sendError(reply, status, GENERIC_BY_STATUS.get(status) ?? 'bad_request', fe.message);
  }
  request.log.error({ err }, 'unexpected error');
  return sendCode(reply, 'internal_error', 'internal error; see the server log');
}
