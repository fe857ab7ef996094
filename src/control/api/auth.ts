/**
 * Authentication of the management API on TCP (without it, any local user could create a
 * `cmd:///bin/sh` workload). Every request carries `Authorization: Bearer <token>` (RFC 6750
 * §2.1), or the session cookie of a browser that logged in through a one-time link
 * (`browser-sessions.ts`). Which of the two a route accepts is read from its OpenAPI
 * `security` requirement, so the document and the enforcement are one definition:
 * `security: []` is public (`GET /health`, `GET /auth/login`), a requirement without the
 * session scheme is bearer only, and a route that says nothing accepts either.
 *
 * A cookie is not enough on its own. Cookies ignore ports (RFC 6265 §8.5): the browser also
 * sends it to any other program listening on this host name, which can then replay it with
 * whatever headers it likes (`Sec-Fetch-Site: none` included). So a cookie counts only with
 * the session's CSRF token in the `X-Skep-CSRF` header (OWASP CSRF Prevention Cheat Sheet,
 * "Synchronizer Token Pattern"), which only the login gave to the page, on every method: a
 * GET can have effects here (`/api/v1beta/skills/content` fetches from the network) and reads
 * workload configurations. The one exception is the docs page, which the UI opens by a link
 * (no header rides along) and which shows only the API description. On top of that, the
 * cookie counts only on a request from the server's own pages, as Fetch Metadata tells it
 * (`Sec-Fetch-Site: same-origin`, or `none` for what the user typed or bookmarked); without
 * that header (browsers older than 2023), only when `Origin` is the server's own.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { normalizeOrigin } from '../../shared/index.js';
import type { BrowserSessions } from './browser-sessions.js';
import { sendError } from './errors.js';

export const SESSION_COOKIE = 'skep_session';
/** The request header that carries the session's CSRF token (lower case, as Node reports headers). */
export const CSRF_HEADER = 'x-skep-csrf';
/** Pages the web UI opens by a link, where no header can ride along: they need the cookie only. */
const LINKED_PAGES = new Set(['/api/doc']);
/** Names of the OpenAPI security schemes (`components.securitySchemes`). */
export const BEARER_SCHEME = 'bearer';
export const SESSION_SCHEME = 'session';

/** OpenAPI `security` of a route that needs no credentials. */
export const PUBLIC_ROUTE: Array<Record<string, string[]>> = [];
/** OpenAPI `security` of a route that takes the bearer token only (no browser session). */
export const BEARER_ONLY: Array<Record<string, string[]>> = [{ [BEARER_SCHEME]: [] }];

export interface ApiAuthOptions {
  /** The API token (`resolveApiToken`). */
  token: string;
  sessions: BrowserSessions;
  /** The scheme the server is reached with; its own origin is `<scheme>://<Host>`. */
  scheme: 'http' | 'https';
}

/** The value of one cookie in a `Cookie` header (RFC 6265 §5.4), or undefined. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * A constant-time check against the expected token: both sides are hashed first, so
 * `timingSafeEqual` compares equal lengths and the time says nothing about the token's length.
 */
export function tokenMatcher(expected: string): (candidate: string) => boolean {
  const sha256 = (value: string): Buffer => createHash('sha256').update(value).digest();
  const want = sha256(expected);
  return (candidate) => timingSafeEqual(sha256(candidate), want);
}

/** 401 with the RFC 6750 §3 challenge; `error="invalid_token"` when a token was sent and refused. */
export function sendUnauthorized(reply: FastifyReply, message: string, invalidToken = false): FastifyReply {
  reply.header(
    'WWW-Authenticate',
    invalidToken ? 'Bearer realm="skep", error="invalid_token"' : 'Bearer realm="skep"',
  );
  return sendError(reply, 401, 'unauthorized', message);
}

type Accepted = 'public' | 'bearer' | 'any';

function acceptedBy(request: FastifyRequest): Accepted {
  const schema = request.routeOptions.schema as { security?: Array<Record<string, unknown>> } | undefined;
  const security = schema?.security;
  if (security === undefined) return 'any';
  if (security.length === 0) return 'public';
  return security.some((requirement) => SESSION_SCHEME in requirement) ? 'any' : 'bearer';
}

/** True when a browser request comes from one of the server's own pages (see the module comment). */
export function fromOwnPage(request: FastifyRequest, scheme: 'http' | 'https'): boolean {
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin' || site === 'none';
  const origin = request.headers.origin;
  if (origin === undefined) return false;
  const own = normalizeOrigin(`${scheme}://${request.headers.host ?? ''}`);
  return own !== undefined && normalizeOrigin(origin) === own;
}

/**
 * The answer to `skep ui`'s challenge: HMAC-SHA256 of its nonce under the discovery file's
 * secret (base64url). Only the server that wrote the file (0600) and its user know the key.
 */
export function discoveryProof(key: Buffer, nonce: string): string {
  return createHmac('sha256', key).update(`skep-discovery-proof\u0000${nonce}`).digest('base64url');
}

const HOW_TO_AUTHENTICATE =
  "send 'Authorization: Bearer <token>' with the API token (SKEP_API_TOKEN, or the api-token file in skep serve's state directory)";

/** The `onRequest` hook that authenticates every TCP request. */
export function createApiAuth(options: ApiAuthOptions) {
  const matches = tokenMatcher(options.token);
  return async function authenticate(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const accepted = acceptedBy(request);
    if (accepted === 'public') return;
    const authorization = request.headers.authorization;
    if (authorization !== undefined) {
      // RFC 9110 §11.1: the scheme name is case-insensitive. A wrong bearer never falls back to a cookie.
      const token = /^bearer +(\S+) *$/i.exec(authorization)?.[1];
      if (token !== undefined && matches(token)) return;
      await sendUnauthorized(
        reply,
        token === undefined
          ? `the Authorization header is not a bearer token; ${HOW_TO_AUTHENTICATE}`
          : 'the bearer token is not this server’s API token',
        true,
      );
      return;
    }
    const session = accepted === 'any' ? readCookie(request.headers.cookie, SESSION_COOKIE) : undefined;
    if (session !== undefined) {
      if (!fromOwnPage(request, options.scheme)) {
        await sendUnauthorized(
          reply,
          'the session cookie is accepted only on requests from this server’s own pages; other callers send a bearer token',
        );
        return;
      }
      if (!options.sessions.touch(session)) {
        await sendUnauthorized(
          reply,
          'the browser session has expired or ended; run `skep ui` to log in again',
        );
        return;
      }
      const linked =
        (request.method === 'GET' || request.method === 'HEAD') &&
        LINKED_PAGES.has(request.routeOptions.url ?? '');
      const csrf = request.headers[CSRF_HEADER];
      if (linked || (typeof csrf === 'string' && options.sessions.csrfMatches(session, csrf))) return;
      // The header tells the web UI to show its "log in again" notice.
      reply.header('X-Skep-CSRF', 'required');
      await sendError(
        reply,
        403,
        'forbidden',
        `the session cookie counts only with the session's ${CSRF_HEADER} header, which the web UI got at login; ` +
          'reload the UI, or run `skep ui` to log in again',
      );
      return;
    }
    await sendUnauthorized(
      reply,
      `this API needs authentication: ${HOW_TO_AUTHENTICATE}${accepted === 'any' ? ', or log in with `skep ui`' : ''}`,
    );
  };
}
