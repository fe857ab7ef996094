/**
 * The authorization server's HTTP plumbing, shared by every endpoint module: JSON replies,
 * OAuth error replies, redirects, bounded request bodies (form or JSON), single-valued
 * parameters and the small crypto helpers the endpoints compare and mint with.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BodyTooLargeError, readBody as readLimitedBody } from '../shared/index.js';
import { OAuthError, type OAuthErrorCode } from './errors.js';

/** Request bodies are capped (module comment of `server.ts`). */
const MAX_BODY_BYTES = 64 * 1024;

/** RFC 6749 §5.1: token responses, and every other OAuth response, must not be cached. */
export const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };

export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** RFC 7636 §4.2: the S256 code challenge of a verifier. */
export function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

export function randomText(bytes = 20): string {
  return randomBytes(bytes).toString('base64url');
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'x-content-type-options': 'nosniff',
    ...headers,
  });
  res.end(text);
}

export function sendOAuthError(res: ServerResponse, err: OAuthError): void {
  sendJson(res, err.status, err.toResponseObject(), { ...NO_STORE, ...err.headers });
}

export function redirect(
  res: ServerResponse,
  location: string,
  cookies: string[] = [],
  status: 302 | 303 = 302,
): void {
  res.writeHead(status, { location, ...NO_STORE, ...(cookies.length ? { 'set-cookie': cookies } : {}) });
  res.end();
}

/**
 * RFC 6749 §4.1.2.1: the error response as query parameters of the client's redirect URI,
 * with the client's `state` and this server's `iss` (RFC 9207 §2).
 */
export function errorRedirectUrl(
  redirectUri: string,
  err: OAuthError,
  state: string | undefined,
  issuer: string,
): string {
  const u = new URL(redirectUri);
  for (const [k, v] of Object.entries(err.toResponseObject())) u.searchParams.set(k, v);
  if (state !== undefined) u.searchParams.set('state', state);
  u.searchParams.set('iss', issuer);
  return u.href;
}

export function expectMethod(method: string, wanted: string): void {
  if (method !== wanted) throw new OAuthError('invalid_request', `use ${wanted}`, 405, { allow: wanted });
}

/** The body under the authorization server's 64 KiB limit; over it, an OAuth error with HTTP 413. */
async function readBody(req: IncomingMessage): Promise<string> {
  try {
    return await readLimitedBody(req, MAX_BODY_BYTES);
  } catch (err) {
    if (err instanceof BodyTooLargeError)
      throw new OAuthError('invalid_request', 'request body is larger than 64 KiB', 413);
    throw err;
  }
}

/** An `application/x-www-form-urlencoded` body; `what` names the request in the refusal. */
export async function readForm(req: IncomingMessage, what: string): Promise<URLSearchParams> {
  const type = String(req.headers['content-type'] ?? '');
  if (!type.startsWith('application/x-www-form-urlencoded')) {
    throw new OAuthError('invalid_request', `${what} must be application/x-www-form-urlencoded`);
  }
  return new URLSearchParams(await readBody(req));
}

/** A JSON object body; anything else is `code` (RFC 7591 §3.2.2: `invalid_client_metadata`). */
export async function readJsonObject(
  req: IncomingMessage,
  what: string,
  code: OAuthErrorCode,
): Promise<Record<string, unknown>> {
  if (!String(req.headers['content-type'] ?? '').startsWith('application/json')) {
    throw new OAuthError(code, `${what} must be application/json`);
  }
  let value: unknown;
  try {
    value = JSON.parse(await readBody(req));
  } catch (err) {
    if (err instanceof OAuthError) throw err;
    throw new OAuthError(code, 'the body is not valid JSON');
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new OAuthError(code, 'the body must be a JSON object');
  }
  return value as Record<string, unknown>;
}

/** RFC 6749 §3.1: parameters must not be repeated. */
export function single(params: URLSearchParams, name: string): string | undefined {
  const all = params.getAll(name);
  if (all.length > 1) throw new OAuthError('invalid_request', `the parameter ${name} is repeated`);
  return all[0] === '' ? undefined : all[0];
}
