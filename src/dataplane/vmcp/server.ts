/**
 * The virtual MCP server of one virtual workload: it watches the group's backends
 * (`backends.ts`), builds each backend's outgoing auth (`outgoing-auth.ts`; a backend whose
 * auth cannot be built is left out, with the reason in the workload's status), and hands the
 * proxy one in-process MCP server per client session (`spawn`, for `ProxyOptions.perSession`),
 * so the endpoint runs behind the same proxy and pipeline as any workload.
 */
import { randomUUID } from 'node:crypto';
import type { JsonRpcMessage } from '../../protocol/index.js';
import {
  newRequestContext,
  type ExchangeEnd,
  type ProxyIdentity,
  type ProxyMiddleware,
  type ProxyRequestContext,
  runReplyHooks,
  type SessionChild,
} from '../proxy/index.js';
import { type Logger, SkepError } from '../../shared/index.js';
import { NO_SPAN, requestSpan, type WorkSpan } from '../middleware/telemetry/index.js';
import { closePools } from './backend-client.js';
import { type BackendInfo, BackendSet } from './backends.js';
import type { ResolvedVmcpConfig } from './config.js';
import { type AuthDeps, type BackendAuth, buildBackendAuth } from './outgoing-auth.js';
import type { Obj } from './aggregate.js';
import type { Optimizer } from './optimizer/index.js';
import { CALL_TOOL_NAME, FIND_TOOL_NAME, parseCallToolArguments } from './optimizer/call-arguments.js';
import {
  CALL_META,
  IDENTITY_META,
  type InnerAdmission,
  type SessionHost,
  VirtualSession,
} from './session.js';

export interface VirtualServerOptions {
  /** The virtual workload's name (its `serverInfo.name`). */
  name: string;
  config: ResolvedVmcpConfig;
  /** The running workloads of the group, this one excluded. */
  discover: () => BackendInfo[];
  logger: Logger;
  auth: AuthDeps;
  pollMs?: number;
  /** Told a one-line summary whenever the served set changes (the runner writes it to the status). */
  onStatus?: (summary: string) => void;
}

interface AuthEntry {
  readonly key: string;
  auth: BackendAuth | undefined;
  problem: string | undefined;
  building: Promise<void> | undefined;
}

export class VirtualMcpServer implements SessionHost {
  readonly config: ResolvedVmcpConfig;
  readonly logger: Logger;
  readonly serverName: string;
  readonly identityInMeta: boolean;
  readonly #options: VirtualServerOptions;
  readonly #set: BackendSet;
  readonly #auth = new Map<string, AuthEntry>();
  readonly #sessions = new Set<VirtualSession>();
  #served: BackendInfo[] = [];
  #optimizer: Promise<Optimizer> | undefined;
  #indexed: Obj[] | undefined;
  #lastStatus = '';
  /** The workload's pipeline, which each inner call of a composite tool passes like a direct call. */
  #innerChain: readonly ProxyMiddleware[] = [];
  /** Composite calls in flight: the outer request each inner call is admitted on behalf of. */
  readonly #outer = new Map<string, { ctx: ProxyRequestContext; link: string; seq: number }>();
  readonly #compositeNames: ReadonlySet<string>;

  constructor(options: VirtualServerOptions) {
    this.#options = options;
    this.config = options.config;
    this.logger = options.logger;
    this.serverName = options.name;
    const strategies = [
      options.config.outgoingAuth.default,
      ...Object.values(options.config.outgoingAuth.backends),
    ];
    this.identityInMeta =
      options.config.outgoingAuth.source === 'discovered' ||
      strategies.some(
        (s) => s !== undefined && s.type !== 'unauthenticated' && s.type !== 'header_injection',
      );
    this.#set = new BackendSet(
      Object.assign(
        { discover: options.discover, config: options.config, logger: options.logger },
        options.pollMs === undefined ? {} : { pollMs: options.pollMs },
      ),
    );
    this.#set.on('change', () => void this.#refresh());
    // Calls whose inner calls are admitted on their behalf: composite tools and code mode's script.
    this.#compositeNames = new Set([
      ...options.config.composites.map((c) => c.name),
      ...(options.config.codeMode === undefined ? [] : ['execute_tool_script']),
    ]);
  }

  /**
   * The runner's middleware pipeline (authentication, authorization, audit, telemetry, ...):
   * each inner call of a composite tool goes through it as its own `tools/call`, so it is
   * authorized, audited and traced like a direct call.
   */
  useInnerChain(middlewares: readonly ProxyMiddleware[]): void {
    this.#innerChain = middlewares.filter((m) => !m.name.startsWith('vmcp-'));
  }

  /**
   * Admits one inner call of the composite call `key` (the outer request's `CALL_META`):
   * runs the pipeline on a `tools/call` of `name` with the outer request's headers and
   * address. The inner request carries the outer's `X-Request-ID` (or one made for the
   * composite call), linking their audit events, and as its parent span `traceparent` (the
   * span the composite made the call in), else the outer request's span.
   */
  async admitInner(
    key: string | undefined,
    name: string,
    args: Record<string, unknown>,
    stepId: string,
    parentSpan?: string,
  ): Promise<InnerAdmission> {
    const outer = key === undefined ? undefined : this.#outer.get(key);
    if (outer === undefined || this.#innerChain.length === 0) return { ok: true, done: () => undefined };
    const id = `${outer.link}/${stepId}/${++outer.seq}`;
    const meta: Record<string, unknown> = {};
    const traceparent = parentSpan ?? outer.ctx.outboundHeaders['traceparent'];
    if (traceparent !== undefined) meta['traceparent'] = traceparent;
    const body = {
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params:
        Object.keys(meta).length > 0 ? { name, arguments: args, _meta: meta } : { name, arguments: args },
    };
    let fire: ((end: ExchangeEnd) => void) | undefined;
    const built = newRequestContext({
      method: 'POST',
      path: outer.ctx.path,
      query: outer.ctx.query,
      headers: Object.assign({}, outer.ctx.headers, { 'x-request-id': outer.link }),
      remoteAddress: outer.ctx.remoteAddress,
      remotePort: outer.ctx.remotePort,
      httpVersion: outer.ctx.httpVersion,
      body: { json: body },
      serverName: outer.ctx.serverName,
      backendTransport: outer.ctx.backendTransport,
      whenEnded: (f) => {
        fire = f;
      },
      logger: this.logger,
    });
    for (const mw of this.#innerChain) {
      const rejected = await mw.handle(built.ctx);
      if (rejected === undefined) continue;
      fire?.({ status: rejected.status, completed: true });
      return { ok: false, status: rejected.status, message: refusalMessage(rejected.body) };
    }
    return {
      ok: true,
      done: async (reply: JsonRpcMessage) => {
        const r = Object.assign({ jsonrpc: '2.0', id }, reply) as JsonRpcMessage;
        await runReplyHooks(built.replyHooks, r);
        fire?.({ status: 200, completed: true });
      },
    };
  }

  /** The span of the composite call `key`'s request (`NO_SPAN` when it is not traced). */
  spanOf(key: string | undefined): WorkSpan {
    const outer = key === undefined ? undefined : this.#outer.get(key);
    return outer === undefined ? NO_SPAN : requestSpan(outer.ctx);
  }

  async start(): Promise<void> {
    await this.#set.start();
    await this.#refresh();
    // At config load, against the aggregated routing table: a composite tool whose step names
    // a tool the backends do not offer is an invalid configuration (named), not a tool that
    // fails at its first call. Later changes of the backends are reported in the status.
    const problems = await this.compositeProblems(true);
    if (problems !== undefined && problems.length > 0)
      throw new SkepError('invalid_config', problems.join('; '));
  }

  /** `VirtualSession.compositeProblems` through a session of no client (undefined: lists unreadable). */
  async compositeProblems(unresolvedOnly = false): Promise<string[] | undefined> {
    if (this.config.composites.length === 0) return [];
    const probe = new VirtualSession(this);
    try {
      return await probe.compositeProblems(unresolvedOnly);
    } finally {
      probe.close();
    }
  }

  /** `ProxyOptions.perSession.spawn`: a fresh in-process MCP server for one client session. */
  spawn = async (): Promise<SessionChild> => {
    const session = new VirtualSession(this);
    this.#sessions.add(session);
    return session.child();
  };

  /**
   * Put last in the workload's middleware chain when outgoing auth needs the caller: copies
   * the identity inbound auth established into the message's `_meta`, always overwriting
   * what a client may have put there, so a session's backend calls carry its caller's token.
   */
  identityMiddleware(): ProxyMiddleware | undefined {
    if (!this.identityInMeta && this.#compositeNames.size === 0) return undefined;
    const withIdentity = this.identityInMeta;
    const composites = this.#compositeNames;
    const outerCalls = this.#outer;
    return {
      name: 'vmcp-identity',
      async handle(ctx) {
        const msg = ctx.mcp?.message;
        if (msg === undefined || ctx.mcp?.id === undefined) return undefined;
        const composite =
          ctx.mcp.method === 'tools/call' &&
          ctx.mcp.resourceId !== undefined &&
          composites.has(ctx.mcp.resourceId);
        if (!withIdentity && !composite) return undefined;
        const params: Record<string, unknown> =
          typeof msg.params === 'object' && msg.params !== null ? msg.params : {};
        const meta = (
          typeof params['_meta'] === 'object' && params['_meta'] !== null ? params['_meta'] : {}
        ) as Record<string, unknown>;
        const added: Record<string, unknown> = {};
        if (withIdentity) {
          const identity: ProxyIdentity = {};
          if (ctx.identity.token !== undefined) identity.token = ctx.identity.token;
          if (ctx.identity.claims !== undefined) identity.claims = ctx.identity.claims;
          if (ctx.identity.subject !== undefined) identity.subject = ctx.identity.subject;
          added[IDENTITY_META] = identity;
        }
        if (composite) {
          // The composite call's inner calls are admitted on behalf of this request (`admitInner`).
          const key = randomUUID();
          const given = ctx.headers['x-request-id'];
          const link = typeof given === 'string' && given !== '' ? given : `composite-${key}`;
          // The outer event carries the same request id as its inner calls' events.
          if (given === undefined) ctx.headers['x-request-id'] = link;
          outerCalls.set(key, { ctx, link, seq: 0 });
          ctx.onEnd(() => outerCalls.delete(key));
          added[CALL_META] = key;
        } else {
          added[CALL_META] = undefined;
        }
        const nextMeta = Object.assign({}, meta, added);
        const nextParams = Object.assign({}, params, { _meta: nextMeta });
        ctx.replaceBody(Object.assign({}, msg, { params: nextParams }));
        return undefined;
      },
    };
  }

  /** The optimizer (loaded only when configured), shared by the sessions. */
  optimizer(): Promise<Optimizer | undefined> {
    const settings = this.config.optimizer;
    if (settings === undefined) return Promise.resolve(undefined);
    this.#optimizer ??= import('./optimizer/index.js').then((m) =>
      m.createOptimizer({ settings, logger: this.logger }),
    );
    return this.#optimizer;
  }

  async indexTools(tools: Obj[]): Promise<void> {
    const optimizer = await this.optimizer();
    if (optimizer === undefined || this.#indexed === tools) return;
    this.#indexed = tools;
    // BM25 is rebuilt before `index` returns; embeddings (if any) follow in the background.
    void optimizer.index(tools as never);
  }

  /**
   * With the optimizer: put FIRST in the workload's chain, so that authorization (and audit)
   * see the inner tool. A `call_tool` call `{tool_name, parameters}` becomes the `tools/call`
   * of the inner tool, a composite tool included (read by the optimizer's own parser, so every
   * call it would run is rewritten here); one it cannot read stays `call_tool`, which the
   * session answers with the parser's error.
   */
  callToolMiddleware(): ProxyMiddleware | undefined {
    if (this.config.optimizer === undefined) return undefined;
    return {
      name: 'vmcp-call-tool',
      async handle(ctx) {
        const mcp = ctx.mcp;
        if (mcp === undefined || mcp.method !== 'tools/call' || mcp.resourceId !== CALL_TOOL_NAME)
          return undefined;
        const msg = mcp.message;
        const call = parseCallToolArguments(msg.params?.['arguments']);
        if (!call.ok || call.name === CALL_TOOL_NAME || call.name === FIND_TOOL_NAME) return undefined;
        const params = Object.assign({}, msg.params as Record<string, unknown>, {
          name: call.name,
          arguments: call.parameters,
        });
        ctx.replaceBody(Object.assign({}, msg, { params }));
        return undefined;
      },
    };
  }

  /** The last one-line summary of the served set (what `onStatus` was told). */
  summary(): string {
    return this.#lastStatus;
  }

  backends(): readonly BackendInfo[] {
    return this.#served;
  }

  /** Healthy and excluded backends, for the status. */
  describe(): {
    served: string[];
    states: Array<{ name: string; health: string }>;
    problems: Record<string, string>;
  } {
    const problems: Record<string, string> = {};
    for (const [name, e] of this.#auth) if (e.problem !== undefined) problems[name] = e.problem;
    return { served: this.#served.map((b) => b.name), states: this.#set.states(), problems };
  }

  headers(
    backend: string,
    identity: ProxyIdentity,
  ): Record<string, string> | Promise<Record<string, string>> {
    const auth = this.#auth.get(backend)?.auth;
    if (auth === undefined) return {};
    return auth.headers(identity);
  }

  reportUnreachable(backend: string): void {
    this.#set.reportUnreachable(backend);
  }

  sessionEnded(session: VirtualSession): void {
    this.#sessions.delete(session);
  }

  async close(): Promise<void> {
    this.#outer.clear();
    this.#set.close();
    for (const s of [...this.#sessions]) s.close();
    await Promise.allSettled([...this.#auth.values()].map((e) => e.auth?.close()));
    await closePools();
  }

  /** Builds auth for new backends, then publishes the served set and tells sessions. */
  async #refresh(): Promise<void> {
    const up = this.#set.up;
    await Promise.all(up.map((b) => this.#ensureAuth(b)));
    if (this.#set.up !== up) return; // a newer change is being handled
    const served = up.filter((b) => this.#auth.get(b.name)?.auth !== undefined);
    const changed = served.length !== this.#served.length || served.some((b, i) => b !== this.#served[i]);
    this.#served = served;
    const excluded = up.filter((b) => this.#auth.get(b.name)?.auth === undefined);
    const summary =
      `serving ${served.length} backend${served.length === 1 ? '' : 's'}` +
      (served.length > 0 ? ` (${served.map((b) => b.name).join(', ')})` : '') +
      excluded.map((b) => `; ${b.name} left out: ${this.#auth.get(b.name)?.problem ?? 'no auth'}`).join('');
    if (changed) for (const s of this.#sessions) s.backendsChanged();
    this.#publish(summary);
    // Composite tools that cannot run against this set of backends: said in the status.
    if (this.config.composites.length > 0 && served.length > 0) {
      const problems = await this.compositeProblems();
      if (this.#set.up !== up || problems === undefined || problems.length === 0) return;
      this.#publish(summary + problems.map((p) => `; withheld: ${p}`).join(''));
    }
  }

  #publish(summary: string): void {
    if (summary === this.#lastStatus) return;
    this.#lastStatus = summary;
    this.#options.onStatus?.(summary);
  }

  #ensureAuth(b: BackendInfo): Promise<void> {
    const key = `${b.url}\u0000${JSON.stringify(b.runConfig ?? null)}`;
    const existing = this.#auth.get(b.name);
    if (existing !== undefined && existing.key === key) return existing.building ?? Promise.resolve();
    void existing?.auth?.close();
    const entry: AuthEntry = { key, auth: undefined, problem: undefined, building: undefined };
    this.#auth.set(b.name, entry);
    entry.building = buildBackendAuth(b.name, b.runConfig, this.config, this.#options.auth).then(
      (auth) => {
        entry.auth = auth;
        entry.building = undefined;
      },
      (err: unknown) => {
        entry.problem = (err as Error).message;
        entry.building = undefined;
        this.logger.warn(
          { backend: b.name, reason: entry.problem },
          'leaving a backend out: its outgoing auth cannot be built',
        );
      },
    );
    return entry.building;
  }
}

/** What a middleware's refusal says (a JSON-RPC error's message, else its text). */
function refusalMessage(body: unknown): string {
  if (typeof body === 'string') return body;
  if (typeof body === 'object' && body !== null) {
    const err = (body as { error?: { message?: unknown } }).error;
    if (typeof err?.message === 'string') return err.message;
  }
  return 'refused';
}
