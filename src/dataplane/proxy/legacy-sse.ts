/**
 * The 2024-11-05 HTTP+SSE transport in front of a stdio server, for clients that predate
 * streamable HTTP: `GET /sse` opens a session's stream and names, in its `endpoint` event, the
 * URL to POST messages to (`/messages?session_id=…`, after the prefix of the client's view:
 * `public-view.ts`); answers and
 * server messages all arrive on that stream. The stream closing ends the session.
 */
import type { ServerResponse } from 'node:http';
import { messagesEndpoint } from './endpoint-prefix.js';
import { badRequest, sendRefusal } from './http-util.js';
import { messagesOf, PROTOCOL_ERRORS } from '../../protocol/index.js';
import { OutletTarget, SSE_HEADERS, SseOutlet } from './outlets.js';
import type { Session } from './session.js';
import type { StdioSessions } from './stdio-sessions.js';
import type { WrapTarget } from './streamable-http.js';
import type { ProxyLimits } from './types.js';

export class LegacySseEndpoint {
  readonly #sessions: StdioSessions;
  readonly #limits: ProxyLimits;

  constructor(sessions: StdioSessions, limits: ProxyLimits) {
    this.#sessions = sessions;
    this.#limits = limits;
  }

  /** `GET /sse`; `prefix` goes before `/messages` in the `endpoint` event (`public-view.ts`). */
  handleStream(res: ServerResponse, method: string, prefix = ''): void {
    if (method !== 'GET') {
      res.writeHead(405, { allow: 'GET' });
      res.end();
      return;
    }
    if (this.#sessions.full) {
      sendRefusal(res, PROTOCOL_ERRORS.too_many_sessions);
      return;
    }
    const children = this.#sessions.children;
    if (children !== undefined) {
      this.#sessions.openWithChild(children, res, 'sse', (session) => this.#announce(res, session, prefix));
      return;
    }
    this.#announce(res, this.#sessions.open('sse'), prefix);
  }

  /** `POST /messages` (and `/message`) with the session id the stream announced. */
  handleMessages(
    res: ServerResponse,
    method: string,
    query: string,
    body: unknown,
    wrap: WrapTarget = (target) => target,
  ): void {
    if (method !== 'POST') {
      res.writeHead(405, { allow: 'POST' });
      res.end();
      return;
    }
    const params = new URLSearchParams(query);
    const sessionId = params.get('session_id') ?? params.get('sessionId');
    const session = sessionId === null ? undefined : this.#sessions.all.get(sessionId);
    if (session === undefined || session.transport !== 'sse' || session.standing?.open !== true) {
      sendRefusal(res, PROTOCOL_ERRORS.session_not_found);
      return;
    }
    const messages = messagesOf(body);
    if (typeof messages === 'string') {
      badRequest(res, `Invalid Request: ${messages}`);
      return;
    }
    const outlet = new OutletTarget(session.standing);
    // Reply hooks exist only for a single message (a middleware that judges messages refuses batches).
    const target = messages.length === 1 ? wrap(outlet) : outlet;
    const bridge = this.#sessions.bridgeOf(session);
    for (const m of messages) bridge.handle(session, m, target);
    res.writeHead(202, { 'content-type': 'text/plain' });
    res.end('Accepted');
  }

  #announce(res: ServerResponse, session: Session, prefix: string): void {
    res.writeHead(200, SSE_HEADERS);
    const outlet = new SseOutlet(res, this.#limits.maxClientBufferBytes, 0, () =>
      this.#sessions.end(session),
    );
    session.standing = outlet;
    outlet.writeEvent('endpoint', messagesEndpoint(prefix, session.id));
  }
}
