/**
 * One client session as the proxy sees it. 2025-era clients get a session at `initialize`
 * (streamable HTTP, `Mcp-Session-Id`) or at `GET /sse` (legacy SSE). 2026-07-28 clients are
 * stateless: each request gets a throw-away session that lives as long as the request.
 */
import type { Outlet, PostExchange, ReplyTarget, StreamRegistry } from './outlets.js';

export type SessionTransport = 'streamable-http' | 'sse' | 'stateless';

export const LOG_LEVELS = [
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export function isLogLevel(value: unknown): value is LogLevel {
  return (LOG_LEVELS as readonly unknown[]).includes(value);
}

export function logSeverity(level: unknown): number {
  return isLogLevel(level) ? LOG_LEVELS.indexOf(level) : 0;
}

export class Session implements StreamRegistry {
  /** Negotiated protocol version (2025 era) or the version of the current request (2026). */
  protocolVersion = '';
  clientCapabilities: Record<string, unknown> = {};
  initialized = false;
  logLevel: LogLevel | undefined;
  readonly subscriptions = new Set<string>();
  /** The GET stream (streamable HTTP) or the `/sse` stream (legacy); unsolicited messages go here. */
  standing: Outlet | undefined;
  /** The target of the latest forwarded request (interim messages prefer it while it is open). */
  lastTarget: ReplyTarget | undefined;
  /** Requests forwarded to the server and not answered yet (`requestStarted`, `requestSettled`). */
  inflight = 0;
  lastActive = Date.now();
  closed = false;
  /** The child was told this session's roots can be asked for (`StdioBridge.announceRoots`). */
  rootsAnnounced = false;
  /** SSE answers to POSTs that can still be resumed, by stream number. */
  readonly #streams = new Map<number, PostExchange>();
  #nextStream = 1;

  constructor(
    readonly id: string,
    readonly transport: SessionTransport,
  ) {}

  /** A request of this session was forwarded; its answer goes to `target`. */
  requestStarted(target: ReplyTarget | undefined): void {
    this.inflight++;
    this.lastTarget = target;
  }

  /** A request of this session was answered or given up; an idle session keeps no response. */
  requestSettled(): void {
    this.inflight--;
    if (this.inflight <= 0) this.lastTarget = undefined;
  }

  addStream(stream: PostExchange): number {
    const no = this.#nextStream++;
    this.#streams.set(no, stream);
    return no;
  }

  removeStream(no: number): void {
    this.#streams.delete(no);
  }

  stream(no: number): PostExchange | undefined {
    return this.#streams.get(no);
  }

  abandonStreams(): void {
    for (const stream of [...this.#streams.values()]) stream.abandon();
    this.#streams.clear();
  }

  canHandle(method: string): boolean {
    const caps = this.clientCapabilities;
    if (method === 'sampling/createMessage') return caps['sampling'] !== undefined;
    if (method === 'elicitation/create') return caps['elicitation'] !== undefined;
    if (method === 'roots/list') return caps['roots'] !== undefined;
    return true;
  }
}
