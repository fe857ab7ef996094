/**
 * `/mcp` in front of a stdio server: the streamable HTTP transport (MCP 2025-11-25
 * "Transports"). POST carries client messages (`initialize` opens a session, answered with
 * `Mcp-Session-Id`; a 2026-07-28 request with its `_meta` envelope needs none), GET opens the
 * session's standing SSE stream or resumes the answer to a POST (`Last-Event-ID`), DELETE
 * ends the session.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../../shared/index.js';
import { badRequest, sendJson, sendRefusal } from './http-util.js';
import { isRequest, messagesOf, PROTOCOL_ERRORS } from '../../protocol/index.js';
import { BatchExchange, PostExchange, type ReplyTarget, SSE_HEADERS, SseOutlet } from './outlets.js';
import { Session } from './session.js';
import { modernVersionOf } from './stateless-flow.js';
import { LEGACY_PROTOCOL_VERSIONS } from './stdio-bridge.js';
import type { StdioSessions } from './stdio-sessions.js';
import type { ProxyLimits } from './types.js';

const HEADER_SESSION = 'mcp-session-id';
const HEADER_VERSION = 'mcp-protocol-version';

/** Wraps the reply target of a single-message POST (the middlewares' reply hooks). */
export type WrapTarget = (target: ReplyTarget) => ReplyTarget;
const unwrapped: WrapTarget = (target) => target;

export class StreamableHttpEndpoint {
  readonly #sessions: StdioSessions;
  readonly #limits: ProxyLimits;
  readonly #logger: Logger;

  constructor(sessions: StdioSessions, limits: ProxyLimits, logger: Logger) {
    this.#sessions = sessions;
    this.#limits = limits;
    this.#logger = logger;
  }

  handle(
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
    body: unknown,
    wrap: WrapTarget = unwrapped,
  ): void {
    if (method === 'POST') this.#post(req, res, body, wrap);
    else if (method === 'GET') this.#get(req, res);
    else if (method === 'DELETE') this.#delete(req, res);
    else {
      res.writeHead(405, { allow: 'GET, POST, DELETE' });
      res.end();
    }
  }

  #post(req: IncomingMessage, res: ServerResponse, body: unknown, wrap: WrapTarget): void {
    const messages = messagesOf(body);
    if (typeof messages === 'string') {
      badRequest(res, `Invalid Request: ${messages}`);
      return;
    }
    const first = messages[0];
    if (first === undefined) {
      badRequest(res, 'Invalid Request: empty batch');
      return;
    }
    const accept = req.headers.accept;
    const acceptsSse = accept === undefined || accept.includes('text/event-stream') || accept.includes('*/*');
    const sessionId = req.headers[HEADER_SESSION];
    const children = this.#sessions.children;
    let session: Session | undefined;
    const headers: Record<string, string> = {};
    if (first.method === 'initialize') {
      if (messages.length > 1) {
        badRequest(res, 'Invalid Request: initialize must be sent alone');
        return;
      }
      if (this.#sessions.full) {
        sendRefusal(res, PROTOCOL_ERRORS.too_many_sessions);
        return;
      }
      if (children !== undefined) {
        const reply = wrap(new PostExchange(res, acceptsSse, headers, this.#limits.maxClientBufferBytes));
        this.#sessions.openWithChild(children, res, 'streamable-http', (s, bridge) => {
          headers[HEADER_SESSION] = s.id;
          bridge.handle(s, first, reply);
        });
        return;
      }
      session = this.#sessions.open('streamable-http');
      headers[HEADER_SESSION] = session.id;
    } else if (typeof sessionId === 'string') {
      session = this.#sessions.all.get(sessionId);
      if (session === undefined) {
        // MCP 2025-11-25 "Session Management": 404 tells the client to start a new session.
        sendRefusal(res, PROTOCOL_ERRORS.session_not_found);
        return;
      }
      const version = req.headers[HEADER_VERSION];
      if (typeof version === 'string' && !(LEGACY_PROTOCOL_VERSIONS as readonly string[]).includes(version)) {
        badRequest(res, `Bad Request: unsupported MCP-Protocol-Version: ${version}`);
        return;
      }
    } else if (messages.length === 1 && modernVersionOf(first) !== undefined && isRequest(first)) {
      if (children !== undefined) {
        badRequest(
          res,
          'Bad Request: this server runs one process per session; stateless (2026-07-28) requests ' +
            'are not served, send initialize to open a session',
        );
        return;
      }
      // MCP 2026-07-28: no initialize, no session; the request carries its own envelope.
      const bridge = this.#sessions.bridge;
      const stateless = new Session(randomUUID(), 'stateless');
      res.on('close', () => bridge.sessionClosed(stateless));
      bridge.handleModern(
        stateless,
        first,
        wrap(new PostExchange(res, acceptsSse, headers, this.#limits.maxClientBufferBytes)),
      );
      return;
    } else {
      badRequest(res, 'Bad Request: Mcp-Session-Id header is required (send initialize first)');
      return;
    }
    const bridge = this.#sessions.bridgeOf(session);
    let requests = 0;
    for (const m of messages) if (isRequest(m)) requests++;
    if (requests === 0) {
      for (const m of messages) bridge.handle(session, m, undefined);
      res.writeHead(202);
      res.end();
      return;
    }
    if (messages.length === 1) {
      bridge.handle(
        session,
        first,
        wrap(
          new PostExchange(res, acceptsSse, headers, this.#limits.maxClientBufferBytes, {
            streams: session,
            keep: this.#limits.replayEvents,
            graceMs: this.#limits.streamResumeMs,
            logger: this.#logger,
          }),
        ),
      );
      return;
    }
    const batch = new BatchExchange(requests, (text) => sendJson(res, 200, text, headers));
    for (const m of messages) bridge.handle(session, m, isRequest(m) ? batch : undefined);
  }

  #get(req: IncomingMessage, res: ServerResponse): void {
    const session = this.#sessionFor(req, res);
    if (session === undefined) return;
    const accept = req.headers.accept ?? '';
    if (!accept.includes('text/event-stream')) {
      sendRefusal(res, PROTOCOL_ERRORS.not_acceptable, 'Not Acceptable: GET needs Accept: text/event-stream');
      return;
    }
    const lastEventId = req.headers['last-event-id'];
    // `<stream>-<seq>`: the client resumes the SSE answer to one of its POSTs.
    const post = typeof lastEventId === 'string' ? /^(\d+)-(\d+)$/.exec(lastEventId) : null;
    if (post !== null) {
      const stream = session.stream(Number(post[1]));
      if (stream === undefined) {
        badRequest(res, `Bad Request: stream ${post[1]} cannot be resumed (it ended, or waited too long)`);
        return;
      }
      stream.resume(res, Number(post[2]));
      return;
    }
    const previous = session.standing instanceof SseOutlet ? session.standing : undefined;
    if (previous?.open === true) {
      sendRefusal(res, PROTOCOL_ERRORS.stream_conflict, 'Conflict: this session already has an open stream');
      return;
    }
    res.writeHead(200, SSE_HEADERS);
    const outlet = new SseOutlet(
      res,
      this.#limits.maxClientBufferBytes,
      this.#limits.replayEvents,
      () => {},
      previous,
    );
    session.standing = outlet;
    if (typeof lastEventId === 'string' && previous !== undefined) outlet.replayAfter(Number(lastEventId));
    res.flushHeaders();
    this.#sessions.bridgeOf(session).announceRoots(session);
  }

  #delete(req: IncomingMessage, res: ServerResponse): void {
    const session = this.#sessionFor(req, res);
    if (session === undefined) return;
    this.#sessions.end(session);
    res.writeHead(200);
    res.end();
  }

  #sessionFor(req: IncomingMessage, res: ServerResponse): Session | undefined {
    const id = req.headers[HEADER_SESSION];
    if (typeof id !== 'string') {
      badRequest(res, 'Bad Request: Mcp-Session-Id header is required');
      return undefined;
    }
    const session = this.#sessions.all.get(id);
    if (session === undefined) sendRefusal(res, PROTOCOL_ERRORS.session_not_found);
    return session;
  }
}
