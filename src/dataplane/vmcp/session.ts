/**
 * One client session of the virtual MCP server: an in-process MCP server that the proxy's
 * per-session bridge drives like a stdio child, but in whole messages, without pipes
 * (`InProcessServer`), so the proxy serves `/mcp` and `/sse`, runs the pipeline, and answers
 * `initialize` from this session's own result. It opens one backend session per backend lazily
 * (`backend-client.ts`), aggregates their lists (`aggregate.ts`), routes calls with the
 * original names, and relays what backends send back: server → client requests (sampling,
 * elicitation, roots) go to this client session, progress goes to the call that asked for it,
 * and cancellations go to the backend request they name.
 */
import {
  INTERNAL_ERROR,
  INVALID_PARAMS,
  jsonRpcError,
  type JsonRpcMessage,
  METHOD_NOT_FOUND,
  REQUEST_TIMEOUT,
  RESOURCE_NOT_FOUND,
  UPSTREAM_UNAVAILABLE,
} from '../../protocol/index.js';
import type { WorkSpan } from '../middleware/telemetry/index.js';
import type { InProcessPeer, InProcessServer, ProxyIdentity, SessionChild } from '../proxy/index.js';
import { type Logger, SeqTable } from '../../shared/index.js';
import { type Aggregated, aggregate, type BackendLists, type Obj, routeResource } from './aggregate.js';
import { BackendError, BackendSession, type CallOptions, RawJson } from './backend-client.js';
import type { BackendInfo } from './backends.js';
import type { ResolvedVmcpConfig } from './config.js';
import { LIST_CACHE_MAX_AGE_MS, ListCache } from './list-cache.js';
import type { Optimizer } from './optimizer/index.js';
import type { CompiledComposite } from './composite/definition.js';
import {
  type CompositeRuntime,
  type ElicitAnswer,
  ElicitationUnsupported,
  type InnerCall,
  InnerCallError,
  runComposite,
  type ToolResult,
} from './composite/engine.js';
import { compositeAnnotations, resolveTool, toolIndex, unresolved } from './composite/resolve.js';
import { EXECUTE_TOOL_SCRIPT, scriptToolDefinition } from './codemode/sandbox.js';

/** Where the runner's vMCP middleware puts the caller's identity (it always overwrites it). */
export const IDENTITY_META = 'dev.skep/identity';
/** Where it puts the key of a composite call, under which `SessionHost.admitInner` finds the outer request. */
export const CALL_META = 'dev.skep/call';

/** The pipeline's verdict on one inner call of a composite tool. */
export type InnerAdmission =
  | { readonly ok: true; done(reply: JsonRpcMessage): void | Promise<void> }
  | { readonly ok: false; readonly status: number; readonly message: string };

/** The composite tools of one aggregation: advertised entries, and each one's definition or why it is withheld. */
interface CompositeView {
  readonly tools: Obj[];
  readonly byName: Map<string, { def: CompiledComposite; problem: string | undefined; unresolved: boolean }>;
}

/** What a session needs from the virtual server that owns it. */
export interface SessionHost {
  readonly config: ResolvedVmcpConfig;
  readonly logger: Logger;
  readonly serverName: string;
  /** Healthy backends whose outgoing auth could be built, sorted by name. */
  backends(): readonly BackendInfo[];
  /** Outgoing headers for a request to `backend` on behalf of `identity` (a promise only when auth must work for them). */
  headers(backend: string, identity: ProxyIdentity): Record<string, string> | Promise<Record<string, string>>;
  reportUnreachable(backend: string): void;
  /** Whether the caller's identity arrives in `_meta` (outgoing auth needs it). */
  readonly identityInMeta: boolean;
  /** With `optimizer`: `find_tool` / `call_tool` instead of the aggregated tools (ToolHive's optimizer). */
  optimizer(): Promise<Optimizer | undefined>;
  /** Indexes `tools` in the optimizer unless this very list is indexed already. */
  indexTools(tools: Obj[]): Promise<void>;
  sessionEnded(session: VirtualSession): void;
  /** How old the shared cache of backend lists may get (default `LIST_CACHE_MAX_AGE_MS`). */
  readonly listCacheMaxAgeMs?: number;
  /**
   * Runs the workload's pipeline on one inner call of a composite tool (`key`: the outer
   * call's `CALL_META`); absent, inner calls are not re-admitted (no pipeline).
   */
  admitInner?(
    key: string | undefined,
    name: string,
    args: Record<string, unknown>,
    stepId: string,
    traceparent?: string,
  ): Promise<InnerAdmission>;
  /** The span of the composite call `key` (its request's), under which its run is traced. */
  spanOf?(key: string | undefined): WorkSpan;
}

const compositeViews = new WeakMap<Aggregated, CompositeView>();
const scriptTools = new WeakMap<Aggregated, Obj>();

/** The backend lists shared by the sessions of one virtual server (`list-cache.ts`). */
const listCaches = new WeakMap<SessionHost, ListCache>();

export function listCacheOf(host: SessionHost): ListCache {
  let cache = listCaches.get(host);
  if (cache === undefined) {
    cache = new ListCache(host.listCacheMaxAgeMs ?? LIST_CACHE_MAX_AGE_MS);
    listCaches.set(host, cache);
  }
  return cache;
}

/**
 * A request `#forward` relays to a backend, and whether it was sent again after the backend
 * forgot the session.
 */
interface Forwarded {
  readonly id: string | number;
  readonly backend: string;
  readonly method: string;
  readonly params: Record<string, unknown>;
  readonly isTool: boolean;
  readonly options: CallOptions;
  readonly retried: boolean;
}

interface Open {
  readonly info: BackendInfo;
  readonly session: BackendSession;
  readonly ready: Promise<void>;
  /** `ready` has resolved: calls go out without waiting on it. */
  isReady: boolean;
}

const CLIENT_CAPABILITIES = { sampling: {}, elicitation: {}, roots: { listChanged: true } };

const NO_ELICITATION =
  'the client did not declare the elicitation capability, so it cannot be asked; call this tool from a client that supports elicitation';

/**
 * Whether the error that answered our `elicitation/create` says the client cannot be asked:
 * it does not know the method, or the proxy in front of this session answered for it because
 * its client did not declare `elicitation` in `initialize` (MCP 2025-11-25, client
 * capabilities). The proxy initializes this session itself, declaring what it can route, so
 * the client's own capabilities show only in that answer.
 */
function cannotElicit(e: Error): boolean {
  return (
    e instanceof BackendError &&
    (e.code === METHOD_NOT_FOUND ||
      (e.code === INTERNAL_ERROR && e.message.startsWith('no connected client can answer')))
  );
}

export class VirtualSession implements InProcessServer {
  readonly #host: SessionHost;
  /** The proxy's bridge, once it connected (`connect`). */
  #peer: InProcessPeer | undefined;
  readonly #open = new Map<string, Open>();
  /**
   * Calls relayed to a backend: the client's request id (as the bridge sent it) and where it
   * went, for cancellation. A `SeqTable` under a number of our own, not a `Map` by request id
   * (shared/seq-table.ts says why).
   */
  readonly #inflight = new SeqTable<{ key: string; open: Open; backendId: string | undefined }>();
  #inflightSeq = 0;
  /** Our server → client requests awaiting the client's answer. */
  readonly #asked = new Map<string, { resolve(v: unknown): void; reject(e: Error): void }>();
  #askSeq = 0;
  #identity: ProxyIdentity = {};
  #aggregated: Aggregated | undefined;
  /** `performance.now()` when `#aggregated` was computed (it is recomputed past the cache's age). */
  #aggregatedAt = 0;
  #aggregating: Promise<Aggregated> | undefined;
  readonly #cache: ListCache;
  readonly #unsubscribe: () => void;
  /** Serialized lists last announced, per kind, to tell whether a change is worth a list_changed. */
  #announced: Record<string, string> | undefined;
  #logLevel: string | undefined;
  #toolsJson: { of: Aggregated; text: string } | undefined;
  /** The client's `initialize` capabilities (elicitation steps need `elicitation`). */
  #clientCapabilities: Record<string, unknown> | undefined;
  /** Composite calls in flight, by client request id, for cancellation. */
  readonly #running = new Map<string, AbortController>();
  #closed = false;

  constructor(host: SessionHost) {
    this.#host = host;
    this.#cache = listCacheOf(host);
    this.#unsubscribe = this.#cache.subscribe(() => this.#invalidate());
  }

  /** What the proxy's bridge attaches to. */
  child(): SessionChild {
    let exited: () => void = () => {};
    const exitedPromise = new Promise<void>((resolve) => {
      exited = resolve;
    });
    this.#onClose = exited;
    return {
      inProcess: this,
      stop: async () => this.close(),
      exited: exitedPromise,
    };
  }

  connect(peer: InProcessPeer): (message: JsonRpcMessage) => void {
    if (this.#peer !== undefined) throw new Error('a virtual MCP session takes one connection');
    this.#peer = peer;
    return (message) => {
      if (!this.#closed) this.#receive(message);
    };
  }

  #onClose: () => void = () => {};

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unsubscribe();
    for (const o of this.#open.values()) o.session.close();
    this.#open.clear();
    for (const a of this.#asked.values())
      a.reject(new BackendError(UPSTREAM_UNAVAILABLE, 'client session ended'));
    this.#asked.clear();
    this.#peer?.closed('the virtual MCP session ended');
    this.#onClose();
    this.#host.sessionEnded(this);
  }

  /** The backend set changed: close sessions of backends that left, then announce list changes. */
  backendsChanged(): void {
    if (this.#closed) return;
    const served = this.#host.backends();
    this.#cache.prune(served);
    const up = new Set(served.map((b) => b.url));
    for (const [name, o] of this.#open) {
      if (!up.has(o.info.url)) {
        o.session.close();
        this.#open.delete(name);
      }
    }
    this.#invalidate();
  }

  #send(message: string): void {
    if (!this.#closed) this.#peer?.message(message);
  }

  #reply(id: string | number, result: unknown): void {
    this.#send(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${JSON.stringify(result)}}`);
  }

  #error(id: string | number, code: number, message: string, data?: unknown): void {
    this.#send(JSON.stringify(jsonRpcError(id, code, message, data)));
  }

  /** One message from the proxy: the client's, already parsed, and ours to change. */
  #receive(m: JsonRpcMessage): void {
    if (m.method === undefined) {
      // The client's answer to one of our server → client requests.
      const asked = this.#asked.get(String(m.id));
      if (asked === undefined) return;
      this.#asked.delete(String(m.id));
      if (m.error !== undefined) asked.reject(new BackendError(m.error.code, m.error.message, m.error.data));
      else asked.resolve(m.result);
      return;
    }
    const params = m.params;
    const callKey = params === undefined ? undefined : this.#takeIdentity(params);
    if (m.id === undefined || m.id === null) {
      this.#notification(m.method, params);
      return;
    }
    const id = m.id;
    if (m.method === 'tools/call' && params !== undefined && this.#callTool(id, params)) return;
    this.#request(id, m.method, params ?? {}, callKey).catch((err: unknown) => this.#failed(id, err));
  }

  /** Answers a request whose handling threw. */
  #failed(id: string | number, err: unknown): void {
    if (err instanceof BackendError) this.#error(id, err.code, err.message, err.data);
    else {
      this.#host.logger.warn({ err }, 'virtual MCP request failed');
      this.#error(id, INTERNAL_ERROR, 'internal error');
    }
  }

  /**
   * A call of an aggregated backend tool while this session's lists are fresh, sent on at once
   * (the general path, `#request`, awaits the lists and the optimizer). False when the call
   * needs that path: a name the optimizer, code mode or a composite tool may answer, an
   * unknown tool, or lists to fetch.
   */
  #callTool(id: string | number, params: Record<string, unknown>): boolean {
    const name = params['name'];
    if (
      typeof name !== 'string' ||
      name === 'find_tool' ||
      name === 'call_tool' ||
      name === EXECUTE_TOOL_SCRIPT
    )
      return false;
    const lists = this.#warm();
    if (lists === undefined) return false;
    if (this.#host.config.composites.length > 0 && this.#compositeView(lists).byName.has(name)) return false;
    const route = lists.toolRoutes.get(name);
    if (route === undefined) return false;
    params['name'] = route.original;
    this.#forward(id, route.backend, 'tools/call', params, true).catch((err: unknown) =>
      this.#failed(id, err),
    );
    return true;
  }

  /** Reads and strips what the runner's middleware put in `_meta`; returns a composite call's key. */
  #takeIdentity(params: Record<string, unknown>): string | undefined {
    const meta = params['_meta'] as Record<string, unknown> | undefined;
    if (meta === undefined || typeof meta !== 'object' || meta === null) return undefined;
    const hasIdentity = IDENTITY_META in meta;
    const hasCall = CALL_META in meta;
    if (!hasIdentity && !hasCall) return undefined;
    const identity = meta[IDENTITY_META];
    const call = meta[CALL_META];
    delete meta[IDENTITY_META];
    delete meta[CALL_META];
    if (Object.keys(meta).length === 0) delete params['_meta'];
    if (this.#host.identityInMeta && typeof identity === 'object' && identity !== null) {
      this.#identity = identity;
    }
    return typeof call === 'string' ? call : undefined;
  }

  #notification(method: string, params: Record<string, unknown> | undefined): void {
    if (method === 'notifications/cancelled') {
      const requestId = params?.['requestId'];
      const composite = this.#running.get(String(requestId));
      if (composite !== undefined) {
        composite.abort(new InnerCallError('cancelled', 'the client cancelled the call'));
        return;
      }
      const key = String(requestId);
      const f = this.#inflight.values().find((call) => call.key === key);
      if (f?.backendId !== undefined) {
        const reason = params?.['reason'];
        f.open.session.cancel(f.backendId, typeof reason === 'string' ? reason : undefined);
      }
      return;
    }
    if (method === 'notifications/roots/list_changed') {
      for (const o of this.#open.values()) void o.session.notify(method, undefined).catch(() => undefined);
    }
  }

  async #request(
    id: string | number,
    method: string,
    params: Record<string, unknown>,
    callKey?: string,
  ): Promise<void> {
    switch (method) {
      case 'initialize':
        this.#clientCapabilities =
          typeof params['capabilities'] === 'object' && params['capabilities'] !== null
            ? (params['capabilities'] as Record<string, unknown>)
            : {};
        this.#reply(id, {
          protocolVersion:
            typeof params['protocolVersion'] === 'string' ? params['protocolVersion'] : '2025-11-25',
          capabilities: {
            tools: { listChanged: true },
            resources: { listChanged: true, subscribe: true },
            prompts: { listChanged: true },
            completions: {},
            logging: {},
          },
          serverInfo: { name: this.#host.serverName, version: '1.0.0' },
          instructions:
            `Virtual MCP server over the workloads of group ${this.#host.config.groupRef ?? ''}`.trim(),
        });
        return;
      case 'ping':
        this.#reply(id, {});
        return;
      case 'logging/setLevel':
        this.#logLevel = typeof params['level'] === 'string' ? params['level'] : undefined;
        for (const o of this.#open.values()) void this.#forwardLevel(o);
        this.#reply(id, {});
        return;
      case 'tools/list': {
        const lists = this.#warm() ?? (await this.#lists());
        const optimizer = await this.#host.optimizer();
        if (optimizer !== undefined) {
          this.#reply(id, { tools: optimizer.tools() });
          return;
        }
        // Serialized once per aggregation: a warm list is one string concatenation.
        if (this.#toolsJson?.of !== lists)
          this.#toolsJson = { of: lists, text: JSON.stringify(this.#advertised(lists)) };
        this.#send(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"tools":${this.#toolsJson.text}}}`);
        return;
      }
      case 'prompts/list':
        this.#reply(id, { prompts: (await this.#lists()).prompts });
        return;
      case 'resources/list':
        this.#reply(id, { resources: (await this.#lists()).resources });
        return;
      case 'resources/templates/list':
        this.#reply(id, { resourceTemplates: (await this.#lists()).templates });
        return;
      case 'tools/call': {
        const name = params['name'];
        const lists = this.#warm() ?? (await this.#lists());
        if (name === 'find_tool' || name === 'call_tool') {
          const optimizer = await this.#host.optimizer();
          if (optimizer !== undefined) {
            await this.#host.indexTools(this.#advertised(lists));
            if (name === 'find_tool') {
              this.#reply(id, await optimizer.find(params['arguments']));
              return;
            }
            // The runner's middleware rewrote every well-formed call_tool into the inner call
            // before authorization; what reaches here is malformed or names an unknown tool.
            const resolved = optimizer.resolveCall(params['arguments']);
            if (!resolved.ok) {
              this.#reply(id, resolved.result);
              return;
            }
            params['name'] = resolved.name;
            params['arguments'] = resolved.arguments;
            return this.#request(id, method, params, callKey);
          }
        }
        if (name === EXECUTE_TOOL_SCRIPT && this.#host.config.codeMode !== undefined) {
          await this.#runScript(id, params, lists, callKey);
          return;
        }
        const composite =
          typeof name === 'string' && this.#host.config.composites.length > 0
            ? this.#compositeView(lists).byName.get(name)
            : undefined;
        if (composite !== undefined) {
          await this.#runComposite(id, composite.def, composite.problem, params, lists, callKey);
          return;
        }
        const route = typeof name === 'string' ? lists.toolRoutes.get(name) : undefined;
        if (route === undefined) throw new BackendError(INVALID_PARAMS, `Unknown tool: ${String(name)}`);
        params['name'] = route.original;
        await this.#forward(id, route.backend, method, params, true);
        return;
      }
      case 'prompts/get': {
        const name = params['name'];
        const route = typeof name === 'string' ? (await this.#lists()).promptRoutes.get(name) : undefined;
        if (route === undefined) throw new BackendError(INVALID_PARAMS, `Unknown prompt: ${String(name)}`);
        params['name'] = route.original;
        await this.#forward(id, route.backend, method, params, false);
        return;
      }
      case 'resources/read':
      case 'resources/subscribe':
      case 'resources/unsubscribe': {
        const uri = params['uri'];
        const route = typeof uri === 'string' ? routeResource(await this.#lists(), uri) : undefined;
        if (route === undefined)
          throw new BackendError(RESOURCE_NOT_FOUND, `Resource not found: ${String(uri)}`);
        await this.#forward(id, route.backend, method, params, false);
        return;
      }
      case 'completion/complete': {
        const ref = params['ref'] as Obj | undefined;
        const lists = await this.#lists();
        let backend: string | undefined;
        if (ref?.['type'] === 'ref/prompt' && typeof ref['name'] === 'string') {
          const route = lists.promptRoutes.get(ref['name']);
          if (route !== undefined) {
            backend = route.backend;
            params['ref'] = Object.assign({}, ref, { name: route.original });
          }
        } else if (ref?.['type'] === 'ref/resource' && typeof ref['uri'] === 'string') {
          backend = routeResource(lists, ref['uri'])?.backend;
        }
        if (backend === undefined)
          throw new BackendError(INVALID_PARAMS, 'completion/complete: unknown prompt or resource reference');
        await this.#forward(id, backend, method, params, false);
        return;
      }
      default:
        throw new BackendError(METHOD_NOT_FOUND, `Method not found: ${method}`);
    }
  }

  async #forwardLevel(o: Open): Promise<void> {
    if (this.#logLevel === undefined) return;
    await o.ready;
    await o.session
      .request('logging/setLevel', { level: this.#logLevel }, { timeoutMs: this.#timeout(o.info.name) })
      .catch(() => undefined);
  }

  #timeout(backend: string): number {
    return this.#host.config.perWorkloadTimeoutMs.get(backend) ?? this.#host.config.timeoutMs;
  }

  /**
   * Sends a request to its backend and relays the answer. A backend that is down fails
   * only this call, at once: a tool call gets a tool error, anything else a JSON-RPC error.
   */
  #forward(
    id: string | number,
    backend: string,
    method: string,
    params: Record<string, unknown>,
    isTool: boolean,
  ): Promise<void> {
    const meta = params['_meta'] as Obj | undefined;
    const wantsProgress = meta !== undefined && meta['progressToken'] !== undefined;
    const clientToken = wantsProgress ? meta['progressToken'] : undefined;
    const timeoutMs = this.#timeout(backend);
    // `raw`: a plain JSON answer's result is relayed as the backend's own text (not re-serialised).
    const options: CallOptions = wantsProgress
      ? {
          timeoutMs,
          raw: true,
          onProgress: (p: Record<string, unknown>) => {
            const relayed = Object.assign({}, p, { progressToken: clientToken });
            this.#send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: relayed }));
          },
        }
      : { timeoutMs, raw: true };
    return this.#sendTo({ id, backend, method, params, isTool, options, retried: false });
  }

  /** One attempt of `#forward`'s call, on the backend's session (opened first if need be). */
  #sendTo(call: Forwarded): Promise<void> {
    let opening: Open | Promise<Open>;
    try {
      opening = this.#session(call.backend);
    } catch (err) {
      this.#backendFailed(call.id, call.backend, err, call.isTool);
      return Promise.resolve();
    }
    if (opening instanceof Promise)
      return opening.then(
        (open) => this.#sendOn(open, call),
        (err: unknown) => this.#backendFailed(call.id, call.backend, err, call.isTool),
      );
    return this.#sendOn(opening, call);
  }

  #sendOn(open: Open, call: Forwarded): Promise<void> {
    const { id, backend } = call;
    const answer = open.session.request(call.method, call.params, call.options);
    // The backend request id, assigned synchronously by `request`, for a later cancellation.
    const slot = ++this.#inflightSeq;
    this.#inflight.set(slot, { key: String(id), open, backendId: open.session.lastRequestId });
    return answer.then(
      (result) => {
        this.#inflight.delete(slot);
        if (result instanceof RawJson)
          this.#send(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result.json}}`);
        else this.#reply(id, result);
      },
      (err: unknown): Promise<void> | undefined => {
        this.#inflight.delete(slot);
        // The backend restarted and forgot our session: open a new one and try once more.
        if (err instanceof BackendError && err.message === 'backend session expired' && !call.retried) {
          this.#open.delete(backend);
          this.#cache.invalidate(backend);
          return this.#sendTo({ ...call, retried: true });
        }
        if (err instanceof BackendError && !err.unreachable && err.code !== UPSTREAM_UNAVAILABLE)
          this.#error(id, err.code, err.message, err.data);
        else this.#backendFailed(id, backend, err, call.isTool);
        return undefined;
      },
    );
  }

  #backendFailed(id: string | number, backend: string, err: unknown, isTool: boolean): void {
    const reason = err instanceof Error ? err.message : String(err);
    if (err instanceof BackendError && err.unreachable) {
      this.#host.reportUnreachable(backend);
      this.#open.get(backend)?.session.close();
      this.#open.delete(backend);
    }
    const message = `backend ${backend} is unavailable: ${reason}`;
    if (isTool) this.#reply(id, { content: [{ type: 'text', text: message }], isError: true });
    else this.#error(id, UPSTREAM_UNAVAILABLE, message);
  }

  /** The backend session, opened on first use (the session itself once it is ready). */
  #session(backend: string): Open | Promise<Open> {
    const existing = this.#open.get(backend);
    if (existing !== undefined && !existing.session.closed) {
      if (existing.isReady) return existing;
      return existing.ready.then(() => existing);
    }
    const info = this.#host.backends().find((b) => b.name === backend);
    if (info === undefined)
      return Promise.reject(
        new BackendError(UPSTREAM_UNAVAILABLE, 'it is not running or not healthy', undefined, false),
      );
    const session = new BackendSession(info.url, () => this.#host.headers(backend, this.#identity), {
      onServerRequest: (m) => this.#ask(m),
      onNotification: (m) => this.#backendNotification(backend, m),
    });
    const open: Open = {
      info,
      session,
      ready: session.open(this.#timeout(backend), CLIENT_CAPABILITIES),
      isReady: false,
    };
    this.#open.set(backend, open);
    open.ready.then(
      () => {
        open.isReady = true;
      },
      () => {
        if (this.#open.get(backend) === open) this.#open.delete(backend);
        session.close();
      },
    );
    if (this.#logLevel !== undefined) void this.#forwardLevel(open);
    return open.ready.then(() => open);
  }

  /** A backend's request to the client (sampling, elicitation, roots): asked on this session. */
  #ask(m: JsonRpcMessage): Promise<unknown> {
    if (this.#closed) return Promise.reject(new BackendError(UPSTREAM_UNAVAILABLE, 'client session ended'));
    const id = `vmcp-${++this.#askSeq}`;
    return new Promise((resolve, reject) => {
      this.#asked.set(id, { resolve, reject });
      const body =
        m.params === undefined
          ? { jsonrpc: '2.0', id, method: m.method }
          : { jsonrpc: '2.0', id, method: m.method, params: m.params };
      this.#send(JSON.stringify(body));
    });
  }

  #backendNotification(backend: string, m: JsonRpcMessage): void {
    const method = m.method!;
    if (method.endsWith('/list_changed') && method !== 'notifications/roots/list_changed') {
      // Every session of this virtual server re-reads the backend's lists (`list-cache.ts`).
      this.#cache.invalidate(backend);
      return;
    }
    if (method === 'notifications/resources/updated' || method === 'notifications/message') {
      this.#send(JSON.stringify({ jsonrpc: '2.0', method, params: m.params }));
    }
  }

  /** Drops the aggregated lists; when the client has seen lists, recomputes and announces what changed. */
  #invalidate(): void {
    if (this.#closed) return;
    this.#aggregated = undefined;
    this.#aggregating = undefined;
    if (this.#announced === undefined) return;
    void this.#lists().then(
      () => undefined,
      () => undefined,
    );
  }

  /**
   * Why composite tools cannot run against the backends as they are now (a step's tool no
   * backend offers, a taken name, annotations safer than the steps): one line each. Undefined
   * when the backends' lists could not be read.
   */
  async compositeProblems(unresolvedOnly = false): Promise<string[] | undefined> {
    let a: Aggregated;
    try {
      a = await this.#lists();
    } catch {
      return undefined;
    }
    const view = this.#compositeView(a);
    return [...view.byName.values()].flatMap((c) =>
      c.problem === undefined || (unresolvedOnly && !c.unresolved) ? [] : [c.problem],
    );
  }

  /** The tools this session advertises: the backends' and the composite tools that can run. */
  #advertised(a: Aggregated): Obj[] {
    const codeMode = this.#host.config.codeMode;
    if (this.#host.config.composites.length === 0 && codeMode === undefined) return a.tools;
    const view = this.#compositeView(a);
    const script = codeMode === undefined ? [] : [this.#scriptTool(a)];
    return view.tools.length === 0 && script.length === 0 ? a.tools : [...a.tools, ...view.tools, ...script];
  }

  /** Code mode's `execute_tool_script`, describing the tools this aggregation lists. */
  #scriptTool(a: Aggregated): Obj {
    const cached = scriptTools.get(a);
    if (cached !== undefined) return cached;
    const tool = scriptToolDefinition(
      a.tools
        .filter((t) => t['name'] !== EXECUTE_TOOL_SCRIPT)
        .map((t) => ({ name: String(t['name']), description: String(t['description'] ?? '') })),
      this.#host.config.codeMode!,
    );
    scriptTools.set(a, tool);
    return tool;
  }

  /**
   * Code mode: runs the script in the sandbox (`codemode/sandbox.ts`); each of its tool calls
   * is an inner call like a composite step's (admitted by the pipeline, audited, traced).
   */
  async #runScript(
    id: string | number,
    params: Record<string, unknown>,
    lists: Aggregated,
    callKey: string | undefined,
  ): Promise<void> {
    const settings = this.#host.config.codeMode!;
    const args = (params['arguments'] ?? {}) as Obj;
    const script = args['script'];
    const data = args['data'] ?? {};
    if (typeof script !== 'string' || script.trim() === '') {
      this.#reply(id, {
        content: [
          { type: 'text', text: `${EXECUTE_TOOL_SCRIPT} requires a non-empty 'script' string argument` },
        ],
        isError: true,
      });
      return;
    }
    if (typeof data !== 'object' || data === null || Array.isArray(data)) {
      this.#reply(id, { content: [{ type: 'text', text: "'data' must be an object" }], isError: true });
      return;
    }
    const listed = new Set(lists.tools.map((t) => String(t['name'])));
    const tools = lists.tools
      .filter((t) => t['name'] !== EXECUTE_TOOL_SCRIPT)
      .map((t) => ({ name: String(t['name']), description: String(t['description'] ?? '') }));
    const index = toolIndex(lists);
    const abort = new AbortController();
    const key = String(id);
    this.#running.set(key, abort);
    let seq = 0;
    try {
      const { runScript } = await import('./codemode/sandbox.js');
      const outcome = await runScript(
        script,
        data as Obj,
        tools,
        settings,
        {
          call: (name, callArgs, signal) => {
            if (!listed.has(name)) return Promise.reject(new Error(`unknown tool "${name}"`));
            return this.#innerCall(
              {
                stepId: `script-${++seq}`,
                tool: name,
                arguments: callArgs,
                timeoutMs: settings.toolCallTimeoutMs,
                signal,
              },
              lists,
              index,
              callKey,
            );
          },
        },
        abort.signal,
      );
      if (abort.signal.aborted) return; // cancelled: no answer
      if (!outcome.ok) {
        this.#reply(id, {
          content: [{ type: 'text', text: `script failed: ${outcome.error ?? 'unknown error'}` }],
          isError: true,
        });
        return;
      }
      const value = outcome.value ?? null;
      const result: Obj = {
        content: [{ type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value) }],
      };
      if (typeof value === 'object' && value !== null && !Array.isArray(value))
        result['structuredContent'] = value;
      this.#reply(id, result);
    } finally {
      this.#running.delete(key);
    }
  }

  /**
   * The composite tools against one aggregation (computed once per aggregation, shared by the
   * sessions): a composite whose step names a tool no backend offers, whose name is taken by a
   * backend tool, or whose explicit annotations claim more safety than its steps allow, is
   * withheld from `tools/list` (with a warning), and a call gets a tool error saying why.
   */
  #compositeView(a: Aggregated): CompositeView {
    const cached = compositeViews.get(a);
    if (cached !== undefined) return cached;
    const index = toolIndex(a);
    const tools: Obj[] = [];
    const byName = new Map<
      string,
      { def: CompiledComposite; problem: string | undefined; unresolved: boolean }
    >();
    for (const def of this.#host.config.composites) {
      let problem = unresolved(def, a, index);
      const missing = problem !== undefined;
      if (problem === undefined && a.toolRoutes.has(def.name))
        problem = `${def.where}: the name is taken by the backend tool "${def.name}" (${a.toolRoutes.get(def.name)!.backend})`;
      let annotations: Obj | undefined;
      if (problem === undefined) {
        const ann = compositeAnnotations(def, a, index);
        if (ann.ok) annotations = ann.annotations;
        else problem = `${def.where}: ${ann.reason}`;
      }
      byName.set(def.name, { def, problem, unresolved: missing });
      if (problem !== undefined) {
        this.#host.logger.warn({ composite: def.name, problem }, 'composite tool withheld from tools/list');
        continue;
      }
      const tool: Obj = { name: def.name, description: def.description, inputSchema: def.inputSchema };
      if (def.output !== undefined) tool['outputSchema'] = def.output.schema;
      if (annotations !== undefined) tool['annotations'] = annotations;
      tools.push(tool);
    }
    const view = { tools, byName };
    compositeViews.set(a, view);
    return view;
  }

  /** Runs one composite call; its answer is a tool result (a failure is a tool error). */
  async #runComposite(
    id: string | number,
    def: CompiledComposite,
    problem: string | undefined,
    params: Record<string, unknown>,
    lists: Aggregated,
    callKey: string | undefined,
  ): Promise<void> {
    if (problem !== undefined) {
      this.#reply(id, {
        content: [{ type: 'text', text: `composite tool ${def.name} cannot run: ${problem}` }],
        isError: true,
      });
      return;
    }
    const args = params['arguments'];
    if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args))) {
      this.#reply(id, { content: [{ type: 'text', text: 'arguments must be an object' }], isError: true });
      return;
    }
    const meta = params['_meta'] as Obj | undefined;
    const token = meta?.['progressToken'];
    const abort = new AbortController();
    const key = String(id);
    this.#running.set(key, abort);
    const index = toolIndex(lists);
    const span = this.#host.spanOf?.(callKey);
    const runtime: CompositeRuntime = {
      inputSchemaOf: (tool) => {
        const r = resolveTool(tool, lists, index);
        return r.ok ? (r.ref.tool?.['inputSchema'] as Obj | undefined) : undefined;
      },
      callTool: (call) => this.#innerCall(call, lists, index, callKey),
      elicit: (_step, message, schema, signal) => this.#elicit(message, schema, signal),
      ...(span === undefined ? {} : { span }),
    };
    if (token !== undefined)
      runtime.progress = (done, total, message) =>
        this.#send(
          JSON.stringify({
            jsonrpc: '2.0',
            method: 'notifications/progress',
            params: { progressToken: token, progress: done, total, message },
          }),
        );
    try {
      const result = await runComposite(def, (args ?? {}) as Obj, runtime, abort.signal);
      this.#reply(id, result);
    } catch (err) {
      // Cancelled by the client: no answer (MCP's cancellation rule).
      if (!(err instanceof InnerCallError && err.kind === 'cancelled')) throw err;
    } finally {
      this.#running.delete(key);
    }
  }

  /** One inner call: admitted by the pipeline like a direct call, then sent to its backend. */
  async #innerCall(
    call: InnerCall,
    lists: Aggregated,
    index: Map<string, Obj>,
    callKey: string | undefined,
  ): Promise<ToolResult> {
    const r = resolveTool(call.tool, lists, index);
    if (!r.ok) throw new InnerCallError('not_found', r.reason);
    const { name, route } = r.ref;
    if (call.signal.aborted) throw new InnerCallError('cancelled', 'cancelled');
    const admission =
      this.#host.admitInner === undefined
        ? ({ ok: true, done: () => undefined } as const)
        : await this.#host.admitInner(callKey, name, call.arguments, call.stepId, call.traceparent);
    if (!admission.ok)
      throw new InnerCallError(
        'denied',
        `the call to ${name} was refused (HTTP ${admission.status}: ${admission.message})`,
      );
    let open: Open;
    try {
      const opening = this.#session(route.backend);
      open = opening instanceof Promise ? await opening : opening;
    } catch (err) {
      const message = `backend ${route.backend} is unavailable: ${(err as Error).message}`;
      await admission.done({ jsonrpc: '2.0', error: { code: UPSTREAM_UNAVAILABLE, message } });
      throw new InnerCallError('unavailable', message);
    }
    let backendId: string | undefined;
    const onAbort = () => {
      if (backendId !== undefined) open.session.cancel(backendId, 'the composite call stopped');
    };
    call.signal.addEventListener('abort', onAbort, { once: true });
    try {
      const result = (await open.session.request(
        'tools/call',
        { name: route.original, arguments: call.arguments },
        {
          timeoutMs: call.timeoutMs,
          onId: (i) => {
            backendId = i;
          },
        },
      )) as ToolResult;
      await admission.done({ jsonrpc: '2.0', result });
      return result;
    } catch (err) {
      const e = err instanceof BackendError ? err : new BackendError(INTERNAL_ERROR, (err as Error).message);
      await admission.done({ jsonrpc: '2.0', error: { code: e.code, message: e.message } });
      if (call.signal.aborted) throw new InnerCallError('cancelled', 'cancelled');
      if (e.code === REQUEST_TIMEOUT)
        throw new InnerCallError(
          'timeout',
          `${name} did not answer within its step timeout (${call.timeoutMs} ms)`,
        );
      if (e.unreachable) {
        this.#host.reportUnreachable(route.backend);
        throw new InnerCallError('unavailable', `backend ${route.backend} is unavailable: ${e.message}`);
      }
      throw new InnerCallError('failed', `${name}: ${e.message}`);
    } finally {
      call.signal.removeEventListener('abort', onAbort);
    }
  }

  /** An elicitation step: asks this client (`elicitation/create`), if it said it can answer. */
  #elicit(message: string, schema: Obj, signal: AbortSignal): Promise<ElicitAnswer> {
    if (this.#clientCapabilities?.['elicitation'] === undefined)
      return Promise.reject(new ElicitationUnsupported(NO_ELICITATION));
    if (this.#closed) return Promise.reject(new InnerCallError('cancelled', 'client session ended'));
    const id = `vmcp-${++this.#askSeq}`;
    return new Promise<ElicitAnswer>((resolve, reject) => {
      const onAbort = () => {
        this.#asked.delete(id);
        this.#send(
          JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } }),
        );
        reject(signal.reason instanceof Error ? signal.reason : new InnerCallError('cancelled', 'cancelled'));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#asked.set(id, {
        resolve: (v) => {
          signal.removeEventListener('abort', onAbort);
          const answer = (v ?? {}) as Obj;
          const action = answer['action'];
          if (action !== 'accept' && action !== 'decline' && action !== 'cancel') {
            reject(new Error(`the client answered the elicitation with action ${JSON.stringify(action)}`));
            return;
          }
          const content = answer['content'];
          resolve(
            typeof content === 'object' && content !== null
              ? { action, content: content as Obj }
              : { action },
          );
        },
        reject: (e) => {
          signal.removeEventListener('abort', onAbort);
          reject(
            cannotElicit(e)
              ? new ElicitationUnsupported(NO_ELICITATION)
              : new Error(`the client answered the elicitation with an error: ${e.message}`, { cause: e }),
          );
        },
      });
      this.#send(
        JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'elicitation/create',
          params: { message, requestedSchema: schema },
        }),
      );
    });
  }

  /** The aggregated lists when they are computed and younger than the cache's bound. */
  #warm(): Aggregated | undefined {
    const a = this.#aggregated;
    if (a === undefined || performance.now() - this.#aggregatedAt >= this.#cache.maxAgeMs) return undefined;
    return a;
  }

  /**
   * The aggregated lists of this session: computed from the shared backend lists, kept until a
   * backend or a list changes, or the cache's age bound passes.
   */
  #lists(): Promise<Aggregated> {
    const warm = this.#warm();
    if (warm !== undefined) return Promise.resolve(warm);
    if (this.#aggregating !== undefined) return this.#aggregating;
    const computing = this.#compute().then((a) => {
      if (this.#aggregating === computing) {
        this.#aggregated = a;
        this.#aggregatedAt = performance.now();
        this.#aggregating = undefined;
        this.#announce(a);
      }
      return a;
    });
    this.#aggregating = computing;
    computing.catch(() => {
      if (this.#aggregating === computing) this.#aggregating = undefined;
    });
    return computing;
  }

  #announce(a: Aggregated): void {
    const now: Record<string, string> = {
      tools: JSON.stringify(this.#advertised(a)),
      prompts: JSON.stringify(a.prompts),
      resources: JSON.stringify(a.resources) + JSON.stringify(a.templates),
    };
    // The same text is what tools/list sends: serialised once per aggregation, not twice.
    this.#toolsJson = { of: a, text: now['tools']! };
    const before = this.#announced;
    this.#announced = now;
    if (before === undefined) return;
    for (const kind of ['tools', 'prompts', 'resources']) {
      // Removals are announced like additions (⚠ the reference announces resource and prompt additions only).
      if (before[kind] !== now[kind])
        this.#send(`{"jsonrpc":"2.0","method":"notifications/${kind}/list_changed"}`);
    }
  }

  async #compute(): Promise<Aggregated> {
    const backends = this.#host.backends();
    const viewer = this.#viewer();
    const settled = await Promise.allSettled(
      backends.map((b) => this.#cache.get(b.name, b.url, viewer, () => this.#loadLists(b.name))),
    );
    const lists: BackendLists[] = [];
    for (const [i, s] of settled.entries()) {
      if (s.status === 'fulfilled') {
        lists.push(s.value);
        continue;
      }
      const name = backends[i]!.name;
      const reason = (s.reason as Error).message;
      if (this.#host.config.partialFailureMode === 'fail') {
        throw new BackendError(
          UPSTREAM_UNAVAILABLE,
          `backend ${name} failed to list its capabilities: ${reason} (partialFailureMode fail)`,
        );
      }
      this.#host.logger.warn(
        { backend: name, reason },
        'leaving a backend out of the lists (partialFailureMode best_effort)',
      );
    }
    const a = aggregate(lists, this.#host.config);
    for (const p of a.problems) this.#host.logger.warn({ problem: p }, 'aggregation');
    return a;
  }

  /**
   * Whose view of the backends' lists this session gets: with outgoing auth that carries the
   * caller, a backend may list per caller, so the caller (subject, else token) keys the shared
   * cache; otherwise every session reaches the backends alike.
   */
  #viewer(): string {
    if (!this.#host.identityInMeta) return '';
    return this.#identity.subject ?? this.#identity.token ?? '';
  }

  /** Lists a backend through this session's backend session (on a miss of the shared cache). */
  async #loadLists(backend: string): Promise<BackendLists> {
    const open = await this.#session(backend);
    const caps = (open.session.initializeResult?.['capabilities'] ?? {}) as Obj;
    const timeoutMs = this.#timeout(backend);
    const all = async (method: string, key: string): Promise<Obj[]> => {
      const out: Obj[] = [];
      let cursor: unknown;
      do {
        const page = (await open.session.request(method, cursor === undefined ? undefined : { cursor }, {
          timeoutMs,
        })) as Obj;
        const items = page[key];
        if (Array.isArray(items)) for (const item of items) out.push(item as Obj);
        cursor = page['nextCursor'];
      } while (typeof cursor === 'string' && cursor !== '');
      return out;
    };
    const [tools, prompts, resources, templates] = await Promise.all([
      caps['tools'] !== undefined ? all('tools/list', 'tools') : [],
      caps['prompts'] !== undefined ? all('prompts/list', 'prompts') : [],
      caps['resources'] !== undefined ? all('resources/list', 'resources') : [],
      caps['resources'] !== undefined ? all('resources/templates/list', 'resourceTemplates') : [],
    ]);
    return { name: backend, tools, prompts, resources, templates };
  }
}
