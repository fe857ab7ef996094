/**
 * The client sessions of a proxy in front of a stdio server, and what serves them: the one
 * shared `StdioBridge`, or with `perSession` one child (and bridge) per session. Both client
 * transports (`streamable-http.ts`, `legacy-sse.ts`) open, find and end sessions here; the
 * proxy reaps idle ones and ends them all when its upstream changes kind or it closes.
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { sendRefusal } from './http-util.js';
import { PROTOCOL_ERRORS } from '../../protocol/index.js';
import { ChildCapReached, SessionChildren } from './per-session.js';
import { Session, type SessionTransport } from './session.js';
import { type BridgeOptions, StdioBridge } from './stdio-bridge.js';
import type { PerSessionOptions } from './types.js';

export class StdioSessions {
  readonly all = new Map<string, Session>();
  /** Serves every session, unless `children` does. */
  readonly bridge: StdioBridge;
  /** Only with `perSession`: one child (and bridge) per session instead of `bridge`. */
  readonly children: SessionChildren | undefined;
  #closed = false;

  readonly #options: Omit<BridgeOptions, 'sessions'>;

  constructor(options: Omit<BridgeOptions, 'sessions'>, perSession: PerSessionOptions | undefined) {
    this.#options = options;
    this.bridge = new StdioBridge(Object.assign({}, options, { sessions: () => this.all.values() }));
    this.children =
      perSession === undefined
        ? undefined
        : new SessionChildren(perSession, options, options.logger, (session) => this.end(session));
  }

  /** `maxSessions` is reached: a new session is refused with 503. */
  get full(): boolean {
    return this.all.size >= this.#options.limits.maxSessions;
  }

  /** The bridge serving a session: the shared one, or the session's own in per-session mode. */
  bridgeOf(session: Session): StdioBridge {
    return this.children === undefined ? this.bridge : (this.children.bridgeOf(session) ?? this.bridge);
  }

  /** A new session on the shared bridge (not in per-session mode: see `openWithChild`). */
  open(transport: SessionTransport): Session {
    const session = new Session(randomUUID(), transport);
    this.all.set(session.id, session);
    return session;
  }

  end(session: Session): void {
    if (this.all.get(session.id) === session) this.all.delete(session.id);
    session.abandonStreams();
    if (this.children === undefined) this.bridge.sessionClosed(session);
    else this.children.release(session);
  }

  /**
   * Per-session mode: starts the new session's own child, then registers the session and
   * calls `ready`. At the cap, or when the child cannot start, the client gets HTTP 503 with a
   * JSON-RPC error; a client that leaves while its child starts gets the child stopped.
   */
  openWithChild(
    children: SessionChildren,
    res: ServerResponse,
    transport: 'streamable-http' | 'sse',
    ready: (session: Session, bridge: StdioBridge) => void,
  ): void {
    const session = new Session(randomUUID(), transport);
    const gone = (): void => {
      session.closed = true;
    };
    res.once('close', gone);
    children.start(session).then(
      (bridge) => {
        res.off('close', gone);
        if (session.closed || this.#closed) {
          children.release(session);
          if (!res.destroyed && !res.writableEnded)
            sendRefusal(
              res,
              PROTOCOL_ERRORS.upstream_unavailable,
              'the session ended while its server was starting',
            );
          return;
        }
        this.all.set(session.id, session);
        ready(session, bridge);
      },
      (err: unknown) => {
        res.off('close', gone);
        if (err instanceof ChildCapReached) {
          sendRefusal(
            res,
            PROTOCOL_ERRORS.upstream_unavailable,
            `Too many sessions: ${err.message}; try again later`,
          );
          return;
        }
        this.#options.logger.warn({ err: (err as Error).message }, 'cannot start a server for a new session');
        sendRefusal(
          res,
          PROTOCOL_ERRORS.upstream_unavailable,
          `cannot start an MCP server for this session: ${(err as Error).message}`,
        );
      },
    );
  }

  /** Ends every session (the upstream changed kind, or the proxy closes). */
  endAll(): void {
    for (const s of [...this.all.values()]) this.end(s);
  }

  /** Ends streamable-HTTP sessions idle for longer than `idleMs` with nothing in flight or open. */
  reapIdle(idleMs: number): void {
    const cutoff = Date.now() - idleMs;
    for (const s of [...this.all.values()]) {
      if (
        s.transport === 'streamable-http' &&
        s.inflight === 0 &&
        s.standing?.open !== true &&
        s.lastActive < cutoff
      ) {
        this.end(s);
      }
    }
  }

  /** Ends every session and stops per-session children; sessions still starting are refused. */
  async close(): Promise<void> {
    this.#closed = true;
    this.bridge.close();
    this.endAll();
    await this.children?.closeAll();
  }
}
