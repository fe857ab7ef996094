/**
 * Browser login for the web UI (issue 16, item 1). A bearer-token holder asks for a login
 * link; the browser that opens it gets an `HttpOnly; SameSite=Strict` session cookie and is
 * sent to `/`. The mechanism and its rules are in `../browser-sessions.ts` and `../auth.ts`.
 */
import { Type } from 'typebox';
import type { SkepApp } from '../app.js';
import { BEARER_ONLY, PUBLIC_ROUTE, readCookie, SESSION_COOKIE, sendUnauthorized } from '../auth.js';
import type { BrowserSessions } from '../browser-sessions.js';
import { sendError } from '../errors.js';
import { NoContent, withErrors } from '../schemas.js';

export interface AuthRouteOptions {
  sessions: BrowserSessions;
  /** `https` adds `Secure` to the cookie. */
  scheme: 'http' | 'https';
  /** On the unix socket there is no browser URL to hand out. */
  transport: 'tcp' | 'unix';
}

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
        summary: 'Spend a login ticket: sets the session cookie and redirects to /',
        security: PUBLIC_ROUTE,
        querystring: Type.Object({ ticket: Type.Optional(Type.String({ maxLength: 256 })) }),
        response: withErrors({ 303: NoContent }, 401),
      },
    },
    async (request, reply) => {
      // The ticket is in the URL: keep it out of caches and out of the next page's Referer.
      reply.header('Cache-Control', 'no-store').header('Referrer-Policy', 'no-referrer');
      const ticket = request.query.ticket;
      const session = ticket === undefined ? undefined : options.sessions.login(ticket);
      if (session === undefined)
        return sendUnauthorized(
          reply,
          'this login link is invalid, used or expired (links work once, within 60 s); run `skep ui` for a new one',
        );
      return reply
        .header('Set-Cookie', `${SESSION_COOKIE}=${session}; ${cookieAttributes}`)
        .redirect('/', 303);
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
