/**
 * The opt-in "one child per session" mode (`ProxyOptions.perSession`), for stdio servers that
 * keep per-client state. Each client session gets its own freshly spawned child behind its own
 * `StdioBridge` (initialized by the proxy exactly like the shared child, so the client's
 * `initialize` is answered from that child's cached result). The child is stopped when the
 * session ends: DELETE, the SSE stream closing, the idle timeout, or the proxy closing; a
 * child that exits on its own ends its session, so the client gets 404 and re-initializes.
 * Starting children count towards `maxChildren`, so a burst of `initialize` cannot overshoot.
 *
 * The shared-child path never touches this module: the proxy only builds it when the option
 * is set.
 */
import type { ErrorCode, Logger } from '../../shared/index.js';
import type { Session } from './session.js';
import { type BridgeOptions, StdioBridge } from './stdio-bridge.js';
import type { PerSessionOptions, SessionChild } from './types.js';

interface Entry {
  readonly bridge: StdioBridge;
  readonly child: SessionChild;
}

/** `maxChildren` children are live or starting. */
export class ChildCapReached extends Error {
  override readonly name = 'ChildCapReached';
  readonly code: ErrorCode = 'unavailable';
}

export class SessionChildren {
  readonly #live = new Map<Session, Entry>();
  readonly #starting = new Set<Promise<unknown>>();
  readonly #stopping = new Set<Promise<void>>();
  #closed = false;

  readonly #options: PerSessionOptions;
  readonly #bridgeOptions: Omit<BridgeOptions, 'sessions'>;
  readonly #logger: Logger;
  readonly #onExit: (session: Session) => void;

  constructor(
    options: PerSessionOptions,
    bridgeOptions: Omit<BridgeOptions, 'sessions'>,
    logger: Logger,
    /** A child exited by itself: the proxy ends the session. */
    onExit: (session: Session) => void,
  ) {
    this.#options = options;
    this.#bridgeOptions = bridgeOptions;
    this.#logger = logger;
    this.#onExit = onExit;
    if (!Number.isInteger(options.maxChildren) || options.maxChildren < 1) {
      throw new Error(`perSession.maxChildren must be a positive integer, got ${options.maxChildren}`);
    }
    if (!Number.isFinite(options.idleMs) || options.idleMs <= 0) {
      throw new Error(`perSession.idleMs must be a positive number of ms, got ${options.idleMs}`);
    }
  }

  /** Live and starting children. */
  get count(): number {
    return this.#live.size + this.#starting.size;
  }

  get max(): number {
    return this.#options.maxChildren;
  }

  get idleMs(): number {
    return this.#options.idleMs;
  }

  bridgeOf(session: Session): StdioBridge | undefined {
    return this.#live.get(session)?.bridge;
  }

  /**
   * Spawns and initializes a child for `session`. Rejects with `ChildCapReached` at the cap,
   * or with the spawn / initialize failure (the child is stopped then).
   */
  start(session: Session): Promise<StdioBridge> {
    if (this.#closed) return Promise.reject(new Error('proxy is closed'));
    if (this.count >= this.#options.maxChildren) {
      return Promise.reject(
        new ChildCapReached(`all ${this.#options.maxChildren} per-session MCP server processes are in use`),
      );
    }
    const started = this.#spawn(session);
    this.#starting.add(started);
    const forget = () => this.#starting.delete(started);
    started.then(forget, forget);
    return started;
  }

  async #spawn(session: Session): Promise<StdioBridge> {
    const child = await this.#options.spawn();
    const bridge = new StdioBridge(
      Object.assign({}, this.#bridgeOptions, { sessions: () => (session.closed ? [] : [session]) }),
    );
    try {
      await bridge.attach(child);
      if (this.#closed) throw new Error('proxy closed while the server was starting');
      if (session.closed) throw new Error('the client went away while the server was starting');
    } catch (err) {
      bridge.close();
      this.#track(child.stop());
      throw err;
    }
    const entry: Entry = { bridge, child };
    this.#live.set(session, entry);
    child.exited?.then(
      () => {
        if (this.#live.get(session) !== entry) return;
        this.#logger.warn({ session: session.id }, 'the session’s MCP server exited; ending the session');
        this.#onExit(session);
      },
      () => undefined,
    );
    return bridge;
  }

  /** The session ended: cancel its work, then stop and reap its child. Idempotent. */
  release(session: Session): void {
    const entry = this.#live.get(session);
    if (entry === undefined) {
      session.closed = true;
      return;
    }
    this.#live.delete(session);
    entry.bridge.sessionClosed(session);
    entry.bridge.close();
    this.#track(entry.child.stop());
  }

  /** Stops every child, including those still starting; resolves when all are gone. */
  async closeAll(): Promise<void> {
    this.#closed = true;
    for (const session of [...this.#live.keys()]) this.release(session);
    await Promise.allSettled([...this.#starting]);
    await Promise.allSettled([...this.#stopping]);
  }

  #track(stopped: Promise<void>): void {
    const p = stopped.catch((err: unknown) =>
      this.#logger.warn({ err }, 'stopping a per-session MCP server failed'),
    );
    this.#stopping.add(p);
    void p.then(() => this.#stopping.delete(p));
  }
}
