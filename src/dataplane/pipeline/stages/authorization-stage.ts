/**
 * The `authorization` stage at run time (see `authorization.ts` for what it does and how it
 * differs from the reference): loaded by the stage factory only for a workload that has an
 * authorization policy, so that other runners never load it.
 */
import type {
  AuthzDecision,
  AuthzFeature,
  AuthzRequest,
  Authorizer,
  ToolAnnotations,
} from '../../middleware/authz/index.js';
import { annotationsOf, decodeUpstreamClaims } from '../../middleware/authz/index.js';
import { PROTOCOL_ERRORS, refusalBody } from '../../../protocol/index.js';
import type { ProxyMiddlewareResult, ProxyRequestContext, ReplyHook } from '../../proxy/index.js';
import type { Logger } from '../../../shared/index.js';
import { callerClaims } from '../identity.js';
import type { Stage, StageDeps } from '../types.js';
import { isRecord } from '../../../shared/index.js';

type Reply = Parameters<ReplyHook>[0];

/** Always allowed, never judged (as in ToolHive). */
const ALWAYS_ALLOWED: ReadonlySet<string> = new Set([
  'initialize',
  'ping',
  'roots/list',
  'logging/setLevel',
  'completion/complete',
  'server/discover',
  'subscriptions/listen',
  'notifications/message',
  'notifications/initialized',
  'notifications/progress',
  'notifications/cancelled',
  'notifications/roots/list_changed',
  'notifications/tools/list_changed',
  'notifications/prompts/list_changed',
  'notifications/resources/list_changed',
  'notifications/resources/updated',
  'notifications/tasks/status',
]);

/** Passed through without a check and without filtering (as in ToolHive). */
const UNFILTERED: ReadonlySet<string> = new Set(['resources/templates/list', 'features/list']);

const FEATURE_OF: Readonly<Record<string, AuthzFeature>> = {
  'tools/call': 'tool',
  'prompts/get': 'prompt',
  'resources/read': 'resource',
  'resources/subscribe': 'resource',
  'resources/unsubscribe': 'resource',
};

/** The list method → the result field it filters and the feature each item is checked as. */
const LISTS: Readonly<Record<string, { field: 'tools' | 'prompts' | 'resources'; feature: AuthzFeature }>> = {
  'tools/list': { field: 'tools', feature: 'tool' },
  'prompts/list': { field: 'prompts', feature: 'prompt' },
  'resources/list': { field: 'resources', feature: 'resource' },
};

/**
 * The virtual MCP optimizer's search tool: its answer lists tool definitions, filtered like a
 * `tools/list` so that a search never shows a tool the caller may not call.
 */
const FIND_TOOL = 'find_tool';

/** At most this many decisions in flight while filtering one list (an external PDP). */
const LIST_CONCURRENCY = 8;

/** A client's answer to a server request: an id, a result or an error, no method. */
function isClientResponse(value: unknown): boolean {
  return (
    isRecord(value) &&
    value['method'] === undefined &&
    value['id'] !== undefined &&
    (value['result'] !== undefined || value['error'] !== undefined)
  );
}

function denial(id: unknown): ProxyMiddlewareResult {
  return {
    status: PROTOCOL_ERRORS.unauthorized.status,
    headers: { 'content-type': 'application/json' },
    // The id is omitted, never null, when the request had none (as the reference does).
    body: refusalBody('unauthorized', typeof id === 'string' || typeof id === 'number' ? id : undefined),
  };
}

const MALFORMED: ProxyMiddlewareResult = {
  status: 400,
  headers: { 'content-type': 'text/plain; charset=utf-8' },
  body: 'Invalid or malformed MCP request',
};

/** Runs `decide` over `items` with bounded concurrency; synchronous when every decision is. */
function decideAll<T>(
  items: readonly T[],
  decide: (item: T) => AuthzDecision | Promise<AuthzDecision>,
): boolean[] | Promise<boolean[]> {
  const out: boolean[] = new Array<boolean>(items.length);
  for (let i = 0; i < items.length; i++) {
    const d = decide(items[i] as T);
    if (d instanceof Promise) {
      const first = i;
      return (async () => {
        out[first] = (await d.catch(() => ({ allow: false, reason: '' }))).allow;
        let next = first + 1;
        const worker = async () => {
          while (next < items.length) {
            const j = next++;
            try {
              out[j] = (await decide(items[j] as T)).allow;
            } catch {
              out[j] = false;
            }
          }
        };
        await Promise.all(Array.from({ length: LIST_CONCURRENCY }, worker));
        return out;
      })();
    }
    out[i] = d.allow;
  }
  return out;
}

export class AuthorizationStage implements Stage {
  readonly name = 'authorization';
  readonly #authorizer: Authorizer;
  readonly #logger: Logger;
  readonly #deps: StageDeps;
  /** Whose token's claims are judged: '' for the request's own (ToolHive's claim source). */
  readonly #provider: string;
  /** Tool annotations as the server last listed them (ToolHive keeps such a cache too). */
  #annotations = new Map<string, ToolAnnotations>();
  /** A virtual workload with the optimizer: `find_tool` answers are filtered. */
  readonly #optimizer: boolean;

  constructor(authorizer: Authorizer, provider: string, deps: StageDeps) {
    this.#authorizer = authorizer;
    this.#provider = provider;
    this.#logger = deps.logger;
    this.#deps = deps;
    this.#optimizer = deps.config.vmcp?.optimizer !== undefined;
  }

  async handle(ctx: ProxyRequestContext): Promise<ProxyMiddlewareResult | undefined> {
    if (ctx.method !== 'POST') return undefined;
    const mcp = ctx.mcp;
    if (mcp === undefined) {
      const body = ctx.body;
      const responses = Array.isArray(body)
        ? body.length > 0 && body.every(isClientResponse)
        : isClientResponse(body);
      return responses ? undefined : MALFORMED;
    }
    const method = mcp.method;
    if (ALWAYS_ALLOWED.has(method) || UNFILTERED.has(method)) return undefined;

    const list = LISTS[method];
    if (list !== undefined) {
      if (mcp.id !== undefined) {
        const claims = await this.#claims(ctx);
        const firstPage = mcp.resourceId === undefined;
        ctx.onReply((reply) => this.#filter(reply, list.field, list.feature, claims, firstPage));
      }
      return undefined;
    }

    const feature = FEATURE_OF[method];
    if (feature === undefined) return this.#deny(ctx, `method ${method} is not authorized by default`);
    const resourceId = mcp.resourceId;
    if (resourceId === undefined) return this.#deny(ctx, `${method} names no ${feature}`);
    const claims = await this.#claims(ctx);
    if (claims === undefined) return this.#deny(ctx, `no claims from upstream provider ${this.#provider}`);
    let decision: AuthzDecision;
    try {
      decision = await this.#authorizer.authorize({
        claims: claims.claims,
        localUser: claims.localUser,
        feature,
        resourceId,
        arguments: feature === 'resource' ? undefined : mcp.arguments,
        annotations: feature === 'tool' ? this.#annotations.get(resourceId) : undefined,
      });
    } catch (err) {
      decision = { allow: false, reason: `authorizer failed: ${(err as Error).message}` };
    }
    if (!decision.allow) return this.#deny(ctx, decision.reason, `${feature} ${JSON.stringify(resourceId)}`);
    if (this.#optimizer && method === 'tools/call' && resourceId === FIND_TOOL && mcp.id !== undefined)
      ctx.onReply((reply) => this.#filterFound(reply, claims));
    return undefined;
  }

  /**
   * A `find_tool` answer (`structuredContent: {tools, token_metrics}` and the same JSON as its
   * text) keeps only the tools the caller may call; anything else is refused (fail closed).
   */
  #filterFound(reply: Reply, claims: Pick<AuthzRequest, 'claims' | 'localUser'>): void | Promise<void> {
    if (reply.error !== undefined) return undefined;
    const result = reply.result;
    if (!isRecord(result)) throw new Error('find_tool reply has no result object');
    if (result['isError'] === true) return undefined;
    const found = result['structuredContent'];
    if (!isRecord(found) || !Array.isArray(found['tools']))
      throw new Error('find_tool reply has no structuredContent.tools');
    const rewrite = () => {
      result['content'] = [{ type: 'text', text: JSON.stringify(found) }];
    };
    const filtered = this.#filter({ jsonrpc: '2.0', result: found }, 'tools', 'tool', claims, false);
    if (filtered instanceof Promise) return filtered.then(rewrite);
    rewrite();
    return undefined;
  }

  #deny(ctx: ProxyRequestContext, reason: string, target?: string): ProxyMiddlewareResult {
    this.#logger.warn(
      {
        workload: ctx.serverName,
        method: ctx.mcp?.method,
        ...(target === undefined ? {} : { target }),
        reason,
      },
      'request denied by authorization policy',
    );
    return denial(ctx.mcp?.id);
  }

  /**
   * The claims to judge: the request's (or the local user's), or, with an upstream provider,
   * its stored access token's. Undefined means deny: no session, no stored token, or a
   * JWT-shaped token whose payload is unreadable.
   */
  async #claims(ctx: ProxyRequestContext): Promise<Pick<AuthzRequest, 'claims' | 'localUser'> | undefined> {
    const own = { claims: callerClaims(ctx), localUser: ctx.identity.claims === undefined };
    if (this.#provider === '') return own;
    const session = ctx.identity.claims?.['tsid'];
    const server = this.#deps.authServer;
    if (typeof session !== 'string' || server === undefined) return undefined;
    let token: string;
    try {
      token = await server.upstreamToken(session, this.#provider);
    } catch {
      return undefined;
    }
    const decoded = decodeUpstreamClaims(token);
    if (decoded.kind === 'opaque') return own;
    if (decoded.kind === 'invalid') return undefined;
    return { claims: decoded.claims, localUser: false };
  }

  /** List filtering, as in ToolHive: keeps the items the caller may use; an error answer passes as it is. */
  #filter(
    reply: Reply,
    field: 'tools' | 'prompts' | 'resources',
    feature: AuthzFeature,
    claims: Pick<AuthzRequest, 'claims' | 'localUser'> | undefined,
    firstPage: boolean,
  ): void | Promise<void> {
    if (reply.error !== undefined) {
      // A reply with both is not a clean JSON-RPC response: fail closed (the proxy answers -32603).
      if (reply.result !== undefined && reply.result !== null)
        throw new Error('reply has both error and result');
      return undefined;
    }
    const result = reply.result;
    if (!isRecord(result)) throw new Error(`${field} list reply has no result object`);
    const raw = result[field];
    const items: unknown[] = Array.isArray(raw) ? raw : [];
    if (feature === 'tool') this.#rememberAnnotations(items, firstPage);
    if (claims === undefined) {
      result[field] = [];
      return undefined;
    }
    const decisions = decideAll(items, (item) => {
      const id = isRecord(item) ? item[feature === 'resource' ? 'uri' : 'name'] : undefined;
      if (typeof id !== 'string') return { allow: false, reason: 'item without a name' };
      try {
        return this.#authorizer.authorize({
          claims: claims.claims,
          localUser: claims.localUser,
          feature,
          resourceId: id,
          // Tools are listed as if called with no arguments, with their own annotations (as ToolHive does).
          annotations: feature === 'tool' ? annotationsOf(item) : undefined,
        });
      } catch {
        return { allow: false, reason: 'authorizer failed' };
      }
    });
    const apply = (allowed: boolean[]) => {
      result[field] = items.filter((_, i) => allowed[i] === true);
    };
    if (decisions instanceof Promise) return decisions.then(apply);
    apply(decisions);
    return undefined;
  }

  #rememberAnnotations(tools: readonly unknown[], firstPage: boolean): void {
    const next = firstPage ? new Map<string, ToolAnnotations>() : new Map(this.#annotations);
    for (const tool of tools) {
      const name = isRecord(tool) ? tool['name'] : undefined;
      const annotations = annotationsOf(tool);
      if (typeof name === 'string' && annotations !== undefined) next.set(name, annotations);
    }
    this.#annotations = next;
  }

  async close(): Promise<void> {
    await this.#authorizer.close?.();
  }
}
