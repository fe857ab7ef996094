/**
 * Browser login for the web UI (docs/web-ui.md). A bearer-token holder asks for a login
 * link; the browser that opens it gets an `HttpOnly; SameSite=Strict` session cookie and a
 * page that forwards it to `/` with the session's CSRF token in the URL fragment, which the
 * UI keeps and sends in `X-Skep-CSRF`. The mechanism and its rules are in
 * `../browser-sessions.ts` and `../auth.ts`. `GET /auth/challenge` lets `skep ui` check that
 * the server its discovery file names is the one that wrote it, before it sends the token.
 */
import { Type } from 'typebox';
import type { SkepApp } from '../app.js';
import {
  BEARER_ONLY,
  discoveryProof,
  PUBLIC_ROUTE,
  readCookie,
  SESSION_COOKIE,
  sendUnauthorized,
} from '../auth.js';
import type { BrowserSessions } from '../browser-sessions.js';
import { sendError } from '../errors.js';
import { NoContent } from '../../../schemas/index.js';
import { withErrors } from '../schemas.js';
import { infoPage } from '../ui.js';

export interface AuthRouteOptions {
  sessions: BrowserSessions;
  /** `https` adds `Secure` to the cookie. */
  scheme: 'http' | 'https';
  /** On the unix socket there is no browser URL to hand out. */
  transport: 'tcp' | 'unix';
  /** The discovery file's secret (`skep serve` on TCP); without it the challenge route is 404. */
  discoveryProofKey?: Buffer;
}

/** The login landing page may run nothing and load nothing; it only forwards. */
const LANDING_CSP = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * The page a spent ticket answers with: a meta refresh (and a link) to `/#skep-csrf=<token>`.
 * Not a 303: a login opened from a file (the redirect page of `skep ui`) or another site is a
 * cross-site navigation, and the browser would not send the SameSite=Strict cookie on a redirect
 * in that chain; the refresh is a new navigation from this origin. The token goes in the
 * fragment, which no request carries (RFC 3986 §3.5), so it stays out of logs and Referer.
 */
function landingPage(csrf: string): string {
  const target = `/#skep-csrf=${csrf}`;
  return [
    '<!doctype html><html lang="en"><head><meta charset="utf-8">',
    `<meta http-equiv="refresh" content="0;url=${target}">`,
    '<title>Logging in · Skep</title></head>',
    `<body><p>Logged in. <a href="${target}">Continue to Skep</a>.</p></body></html>`,
  ].join('');
}

const SPENT_LINK_MESSAGE =
  'this login link is invalid, used or expired (links work once, within 60 s); run `skep ui` for a new one';

/** What a browser that opened a spent, expired or mistyped login link reads (no script, no style). */
const SPENT_LINK_HTML = infoPage('This login link no longer works', [
  'A login link works once, within 60 seconds of being made. This one has already been used, has expired, or is not a link this server made.',
  'For a new link, run <code>skep ui</code> on the machine where <code>skep serve</code> runs: it opens this browser logged in, or prints a link to open (from a clone of the repository: <code>node dist/skep.mjs ui</code>).',
  'A browser that is already logged in keeps its session: <a href="/">open Skep</a>.',
]);

/** A browser navigation asks for a page; an API client asking for JSON (or anything else) gets the error object. */
const wantsHtml = (accept: string | undefined): boolean => (accept ?? '').includes('text/html');

export async function authRoutes(app: SkepApp, options: AuthRouteOptions): Promise<void> {
  const cookieAttributes = `HttpOnly; SameSite=Strict; Path=/${options.scheme === 'https' ? '; Secure' : ''}`;

  app.post(
    '/api/v1beta/auth/login-link',
    {
      schema: {
        tags: ['auth'],
        summary: 'A one-time browser login URL',
        description:
          'Bearer token only. The URL is valid for one use within 60 s; opening it sets the `skep_session` ' +
          'cookie (HttpOnly, SameSite=Strict) and redirects to `/`.',
        security: BEARER_ONLY,
        response: withErrors({ 200: Type.Object({ url: Type.String() }) }, 400, 401),
      },
    },
    async (request, reply) => {
      if (options.transport === 'unix')
        return sendError(
          reply,
          400,
          'bad_request',
          'this server listens on a unix socket, which a browser cannot open; start skep serve on TCP for the web UI',
        );
      // The Host header passed the origin guard, so it names this server as the caller reached it.
      const url = `${options.scheme}://${request.headers.host ?? ''}/auth/login?ticket=${options.sessions.mintTicket()}`;
      return reply.header('Cache-Control', 'no-store').send({ url });
    },
  );

  app.get(
    '/auth/login',
    {
      schema: {
        tags: ['auth'],
        summary: 'Spend a login ticket: sets the session cookie and forwards to / with the CSRF token',
        description:
          'A page (text/html) that sets the `skep_session` cookie and forwards the browser to ' +
          '`/#skep-csrf=<token>`: the web UI sends that token in `X-Skep-CSRF` with every API call. ' +
          'A used, expired or unknown ticket is a 401: a page that says how to get a new link when the request ' +
          'accepts `text/html` (a browser), else the JSON error.',
        security: PUBLIC_ROUTE,
        querystring: Type.Object({ ticket: Type.Optional(Type.String({ maxLength: 256 })) }),
        response: withErrors({ 200: Type.String({ description: 'HTML page' }) }, 401),
      },
    },
    async (request, reply) => {
      // The ticket is in the URL: keep it out of caches and out of the next page's Referer.
      reply.header('Cache-Control', 'no-store').header('Referrer-Policy', 'no-referrer');
      const ticket = request.query.ticket;
      const session = ticket === undefined ? undefined : options.sessions.login(ticket);
      if (session === undefined) {
        if (!wantsHtml(request.headers.accept)) return sendUnauthorized(reply, SPENT_LINK_MESSAGE);
        return reply
          .code(401)
          .header('WWW-Authenticate', 'Bearer realm="skep"')
          .header('Content-Security-Policy', LANDING_CSP)
          .header('X-Frame-Options', 'DENY')
          .type('text/html; charset=utf-8')
          .serializer((payload: unknown) => payload as string)
          .send(SPENT_LINK_HTML);
      }
      return reply
        .header('Set-Cookie', `${SESSION_COOKIE}=${session}; ${cookieAttributes}`)
        .header('Content-Security-Policy', LANDING_CSP)
        .header('X-Frame-Options', 'DENY')
        .type('text/html; charset=utf-8')
        .serializer((payload: unknown) => payload as string)
        .send(landingPage(options.sessions.csrfToken(session)));
    },
  );

  app.get(
    '/auth/challenge',
    {
      schema: {
        tags: ['auth'],
        summary: 'Prove to `skep ui` that this is the server its discovery file names',
        description:
          'No credentials. `proof` is HMAC-SHA256, keyed with the `proof_key` of the discovery file this ' +
          'server wrote (0600), of `skep-discovery-proof`, a NUL and the nonce; base64url. `skep ui` checks it ' +
          'before it sends the API token, so a program on a stale discovery URL gets no token.',
        security: PUBLIC_ROUTE,
        querystring: Type.Object({ nonce: Type.String({ pattern: '^[A-Za-z0-9_-]{22,128}$' }) }),
        response: withErrors({ 200: Type.Object({ proof: Type.String() }) }, 400, 404),
      },
    },
    async (request, reply) => {
      const key = options.discoveryProofKey;
      if (key === undefined)
        return sendError(reply, 404, 'not_found', 'this server was not started with a discovery file');
      return reply
        .header('Cache-Control', 'no-store')
        .send({ proof: discoveryProof(key, request.query.nonce) });
    },
  );

  app.post(
    '/auth/logout',
    {
      schema: {
        tags: ['auth'],
        summary: 'End the browser session',
        response: withErrors({ 204: NoContent }, 401),
      },
    },
    async (request, reply) => {
      const session = readCookie(request.headers.cookie, SESSION_COOKIE);
      if (session !== undefined) options.sessions.end(session);
      return reply
        .header('Set-Cookie', `${SESSION_COOKIE}=; Max-Age=0; ${cookieAttributes}`)
        .code(204)
        .send(null);
    },
  );
}
