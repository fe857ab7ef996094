/**
 * The web UI (docs/web-ui.md) on the API's own origin: its page for `/` and every deep link
 * (`/servers/<name>`, `/catalog`, …) to a browser that is logged in, a page that says how to
 * log in to one that is not, the hashed assets of `dist/ui/` (scripts/bundle-ui.mjs), and
 * `POST /api/v1beta/workloads/:name/mcp`, through which the playground talks to a workload's
 * MCP endpoint from the same origin (the workload proxies accept no other browser origin,
 * and their loopback address is not the page's).
 *
 * The page carries no credential: its API calls ride on the `HttpOnly` session cookie that
 * the one-time login link set (`routes/auth.ts`), checked by the API's own hook. Its
 * Content-Security-Policy allows scripts and styles from this origin only.
 */
import { existsSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { SkepApp } from './app.js';
import { fromOwnPage, PUBLIC_ROUTE, readCookie, SESSION_COOKIE, tokenMatcher } from './auth.js';
import type { BrowserSessions } from './browser-sessions.js';
import type { ApiContext } from '../app/index.js';
import { sendError } from './errors.js';
import { withErrors } from './schemas.js';

/** Paths the UI's router answers (the page is the same for each; the script picks the view). */
export const UI_PATHS = [
  '/',
  '/servers',
  '/servers/:name',
  '/catalog',
  '/catalog/:server',
  '/playground',
  '/playground/:name',
  '/secrets',
  '/clients',
  '/groups',
  '/skills',
  '/registry-source',
] as const;

export const UI_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const ASSET_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** Where the build put the UI: beside the bundle (dist/skep.mjs or a chunk), or dist/ under the sources. */
export function findUiDir(): string | undefined {
  for (const relative of ['./ui/', '../ui/', '../../../dist/ui/']) {
    const dir = fileURLToPath(new URL(relative, import.meta.url));
    if (existsSync(join(dir, 'index.html'))) return dir;
  }
  return undefined;
}

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * A page without script or style of its own (served under a CSP that allows neither inline):
 * for a browser that is not logged in, a spent login link, or a server without the UI build.
 * `paragraphs` are HTML.
 */
export function infoPage(title: string, paragraphs: string[]): string {
  return [
    '<!doctype html><html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="color-scheme" content="light dark">',
    `<title>${escapeHtml(title)} · Skep</title></head>`,
    '<body><main>',
    `<h1>${escapeHtml(title)}</h1>`,
    ...paragraphs.map((p) => `<p>${p}</p>`),
    '</main></body></html>',
  ].join('');
}

export const LOGIN_HINT_HTML = infoPage('Log in to Skep', [
  'This is the web UI of <code>skep serve</code>. Your browser has no session with it (or the session has ended).',
  'To log in, run <code>skep ui</code> on the machine where <code>skep serve</code> runs: it opens (or prints) a one-time login link. ' +
    '<code>skep serve</code> also prints one at start when it runs in a terminal.',
  'A link works once, within 60 seconds; a session ends after an hour without use, and when <code>skep serve</code> restarts.',
]);

const NOT_BUILT_HTML = infoPage('The web UI is not built', [
  'This <code>skep serve</code> found no <code>dist/ui/index.html</code>. Run <code>npm run build</code> and restart it.',
  'The management API works without it: see <a href="/api/doc">/api/doc</a>.',
]);

export interface UiRouteOptions {
  sessions: BrowserSessions;
  scheme: 'http' | 'https';
  transport: 'tcp' | 'unix';
  /** The API token on TCP: a request carrying it also gets the page (scripts, curl). */
  apiToken?: string;
  /** Where the UI build is; default `findUiDir()`. */
  uiDir?: string;
}

/** Headers that carry the MCP session between the playground and the workload. */
const MCP_REQUEST_HEADERS = ['mcp-session-id', 'mcp-protocol-version', 'last-event-id'] as const;
const MCP_TIMEOUT_MS = 120_000;
/**
 * What the playground relays: a Streamable HTTP answer is JSON or an event stream (MCP
 * 2025-06-18, Transports §Sending Messages to the Server). Anything else comes from a server
 * that is not trusted with the API's origin, where the UI's session cookie lives.
 */
const RELAYED_TYPES: ReadonlySet<string> = new Set(['application/json', 'text/event-stream']);
/**
 * On every answer of the relay, as the workload proxy sends them: the browser neither sniffs
 * the body into another type nor runs it as a document of this origin (CSP Level 3 `sandbox`).
 */
const RELAY_HEADERS = { 'Content-Security-Policy': 'sandbox', 'X-Content-Type-Options': 'nosniff' } as const;

export async function uiRoutes(app: SkepApp, ctx: ApiContext, options: UiRouteOptions): Promise<void> {
  const uiDir = options.uiDir ?? findUiDir();
  const indexHtml = uiDir === undefined ? undefined : readFileSync(join(uiDir, 'index.html'), 'utf8');
  const matches = options.apiToken === undefined ? undefined : tokenMatcher(options.apiToken);

  /** Logged in: a live session cookie from the server's own pages, or the bearer token; always on the socket. */
  const loggedIn = (request: FastifyRequest): boolean => {
    if (options.transport === 'unix') return true;
    const bearer = /^bearer +(\S+) *$/i.exec(request.headers.authorization ?? '')?.[1];
    if (bearer !== undefined) return matches?.(bearer) === true;
    const session = readCookie(request.headers.cookie, SESSION_COOKIE);
    return session !== undefined && fromOwnPage(request, options.scheme) && options.sessions.touch(session);
  };

  for (const path of UI_PATHS) {
    app.get(path, { schema: { hide: true, security: PUBLIC_ROUTE } }, async (request, reply) => {
      // The page is for browsers; an API client asking for JSON gets the API's 404.
      const accept = request.headers.accept ?? '';
      if (!accept.includes('text/html') && !accept.includes('*/*'))
        return sendError(
          reply,
          404,
          'not_found',
          `no route GET ${path}; this path is the web UI (text/html)`,
        );
      reply
        .type('text/html; charset=utf-8')
        .header('Cache-Control', 'no-cache')
        .header('Content-Security-Policy', UI_CSP)
        .header('Referrer-Policy', 'no-referrer')
        .header('X-Frame-Options', 'DENY');
      if (!loggedIn(request)) return reply.code(401).send(LOGIN_HINT_HTML);
      if (indexHtml === undefined) return reply.code(503).send(NOT_BUILT_HTML);
      return reply.send(indexHtml);
    });
  }

  app.get(
    '/assets/:file',
    {
      schema: {
        hide: true,
        security: PUBLIC_ROUTE,
        params: Type.Object({ file: Type.String({ pattern: '^[A-Za-z0-9_-]+\\.(js|css|svg)$' }) }),
      },
    },
    async (request, reply) => {
      const file = request.params.file;
      const path = uiDir === undefined ? undefined : join(uiDir, 'assets', file);
      if (path === undefined || !existsSync(path))
        return sendError(reply, 404, 'not_found', `no UI asset ${file}; rebuild the UI (npm run build)`);
      return reply
        .type(ASSET_TYPES[extname(file)] ?? 'application/octet-stream')
        .header('Cache-Control', 'public, max-age=31536000, immutable')
        .send(readFileSync(path));
    },
  );

  app.post(
    '/api/v1beta/workloads/:name/mcp',
    {
      schema: {
        tags: ['workloads'],
        summary: "Send one MCP message to a workload's endpoint (the web UI's playground)",
        description:
          'Skep extension. The body (a JSON-RPC message) goes to the workload’s proxy as a Streamable HTTP POST, ' +
          'with `Mcp-Session-Id` and `MCP-Protocol-Version` passed through both ways; the answer (JSON or an SSE ' +
          'stream, read to its end) comes back as the proxy sent it. Needs a running workload in ' +
          '`streamable-http` proxy mode.',
        params: Type.Object({ name: Type.String() }),
        body: Type.Object(
          { jsonrpc: Type.Literal('2.0'), method: Type.String() },
          { additionalProperties: true },
        ),
        response: withErrors({ 200: Type.Unknown(), 202: Type.Unknown() }, 400, 404, 409, 502),
      },
    },
    async (request, reply) => {
      reply.headers(RELAY_HEADERS);
      const workload = ctx.workloads.get(request.params.name);
      if (workload.status !== 'running')
        return sendError(
          reply,
          409,
          'conflict',
          `workload ${workload.name} is ${workload.status}; start it before using the playground`,
        );
      if (workload.proxy_mode === 'sse')
        return sendError(
          reply,
          400,
          'bad_request',
          `workload ${workload.name} serves SSE (proxy_mode sse); the playground speaks Streamable HTTP: set proxy_mode to streamable-http`,
        );
      // The detail view's `url` is the configured remote URL; the proxy's is in the summary.
      const proxyUrl = ctx.workloads.list({ all: true }).find((w) => w.name === workload.name)?.url ?? '';
      if (proxyUrl === '')
        return sendError(
          reply,
          409,
          'conflict',
          `workload ${workload.name} has no proxy URL yet; wait until it runs`,
        );
      const target = new URL(proxyUrl);
      target.hash = '';
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      };
      for (const name of MCP_REQUEST_HEADERS) {
        const value = request.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      let upstream: Response;
      let text: string;
      try {
        upstream = await fetch(target, {
          method: 'POST',
          headers,
          body: JSON.stringify(request.body),
          signal: AbortSignal.timeout(MCP_TIMEOUT_MS),
        });
        text = await upstream.text();
      } catch (err) {
        return sendError(
          reply,
          502,
          'bad_gateway',
          `workload ${workload.name} did not answer at ${target.origin}${target.pathname}: ${(err as Error).message}`,
        );
      }
      // Only a body of an MCP type is relayed (a notification's 202 has none): an HTML page
      // served here would run as the API's own.
      const contentType = upstream.headers.get('content-type');
      const mediaType = contentType?.split(';')[0]?.trim().toLowerCase() ?? '';
      if (text !== '' && !RELAYED_TYPES.has(mediaType))
        return sendError(
          reply,
          502,
          'bad_gateway',
          `workload ${workload.name} answered ${upstream.status} with ${mediaType === '' ? 'no Content-Type' : `Content-Type ${mediaType}`}; the playground relays only MCP answers (application/json or text/event-stream)`,
        );
      const session = upstream.headers.get('mcp-session-id');
      if (session !== null) reply.header('Mcp-Session-Id', session);
      reply.code(upstream.status).header('Cache-Control', 'no-store');
      if (text === '') return reply.send();
      return reply
        .type(contentType as string)
        .serializer((payload: unknown) => payload as string)
        .send(text);
    },
  );
}
