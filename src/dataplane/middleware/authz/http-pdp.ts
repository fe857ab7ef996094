/**
 * The `httpv1` authorizer: an external policy decision point (ToolHive's `httpv1`).
 * Each decision is `POST <url>/decision` with a PORC body (principal from the claims mapped
 * the `mpe` or `standard` way, operation `mcp:<feature>:<op>`, resource
 * `mrn:mcp:<server>:<feature>:<id>`, context per the `context.*` flags, tool annotations at
 * `context.mcp.annotations`). Only HTTP 200 with `{"allow": <bool>}` is an answer; anything
 * else — another status, a redirect, a body that is not that shape, a timeout, a refused
 * connection — is a denial (the stage logs it at WARN, without claims).
 *
 * The URL is the user's own configuration, so its host may be loopback or private; link-local
 * and cloud metadata addresses are still refused (the shared outbound address policy).
 */
import { OutboundClient, type OutboundPolicy } from '../../../shared/index.js';
import type { AuthzDecision, AuthzFeature, AuthzRequest, Authorizer } from './authorizer.js';
import type { ClaimMapping, HttpAuthzConfig } from './config.js';

const OPERATION: Record<AuthzFeature, string> = { tool: 'call', prompt: 'get', resource: 'read' };
/** Largest decision body read; `{"allow":true}` needs 13 bytes. */
const MAX_DECISION_BYTES = 64 * 1024;

type Claims = Readonly<Record<string, unknown>>;

/** The first of `names` present in `claims` (a present key counts, whatever its value). */
function firstPresent(claims: Claims, names: readonly string[]): unknown {
  for (const n of names) if (Object.hasOwn(claims, n)) return claims[n];
  return undefined;
}

/** The PORC `principal` (reference claim mappers: values passed through unchanged). */
export function mapPrincipal(claims: Claims, mapping: ClaimMapping): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const put = (key: string, names: readonly string[]) => {
    const v = firstPresent(claims, names);
    if (v !== undefined) out[key] = v;
  };
  put('sub', ['sub']);
  if (mapping === 'standard') {
    put('roles', ['roles']);
    put('groups', ['groups']);
    put('scopes', ['scopes', 'scope']);
    return out;
  }
  put('mroles', ['mroles', 'roles']);
  put('mgroups', ['mgroups', 'groups']);
  put('scopes', ['scopes', 'scope']);
  put('mclearance', ['mclearance', 'clearance']);
  // Some decision points need it present for their identity phase.
  out['mannotations'] = firstPresent(claims, ['mannotations', 'annotations']) ?? {};
  return out;
}

export interface PdpAuthorizerDeps {
  /** Tests inject a client (e.g. a resolver); by default one per authorizer, closed with it. */
  client?: OutboundClient;
}

export class HttpPdpAuthorizer implements Authorizer {
  readonly #config: HttpAuthzConfig['pdp'];
  readonly #serverName: string;
  readonly #decisionUrl: string;
  readonly #policy: OutboundPolicy;
  readonly #client: OutboundClient;
  readonly #ownsClient: boolean;
  #closed = false;

  constructor(config: HttpAuthzConfig, serverName: string, deps: PdpAuthorizerDeps = {}) {
    this.#config = config.pdp;
    this.#serverName = serverName;
    const url = new URL(config.pdp.http.url);
    url.pathname = `${url.pathname.replace(/\/+$/, '')}/decision`;
    this.#decisionUrl = url.href;
    this.#policy = { privateHosts: [url.host], hint: 'the decision point URL is refused' };
    this.#ownsClient = deps.client === undefined;
    this.#client =
      deps.client ??
      new OutboundClient(config.pdp.http.insecure_skip_verify ? { insecureSkipVerify: true } : {});
  }

  /** The PORC body for one request (exported shape: reference `porc.go`). */
  porc(request: AuthzRequest): Record<string, unknown> {
    const operation = OPERATION[request.feature];
    const ctx = this.#config.context;
    const mcp: Record<string, unknown> = {};
    if (ctx.include_operation) {
      mcp['feature'] = request.feature;
      mcp['operation'] = operation;
      mcp['resource_id'] = request.resourceId;
    }
    if (ctx.include_args && request.arguments !== undefined && Object.keys(request.arguments).length > 0)
      mcp['args'] = request.arguments;
    if (request.feature === 'tool' && request.annotations !== undefined)
      mcp['annotations'] = request.annotations;
    return {
      principal: mapPrincipal(request.claims, this.#config.claim_mapping),
      operation: `mcp:${request.feature}:${operation}`,
      resource: `mrn:mcp:${this.#serverName}:${request.feature}:${request.resourceId}`,
      context: Object.keys(mcp).length === 0 ? {} : { mcp },
    };
  }

  async authorize(request: AuthzRequest): Promise<AuthzDecision> {
    if (this.#closed) return { allow: false, reason: 'the authorizer is closed' };
    const timeoutMs = Math.round(this.#config.http.timeout * 1000);
    let res: Response;
    try {
      res = await this.#client.fetch(
        this.#decisionUrl,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify(this.porc(request)),
          redirect: 'manual',
          signal: AbortSignal.timeout(timeoutMs),
        },
        this.#policy,
      );
    } catch (err) {
      const name = (err as Error).name;
      const why =
        name === 'TimeoutError' || name === 'AbortError'
          ? `no answer within ${this.#config.http.timeout} s`
          : describeFailure(err);
      return { allow: false, reason: `decision point unreachable: ${why}` };
    }
    let text: string;
    try {
      text = await readCapped(res);
    } catch (err) {
      return { allow: false, reason: `decision point answer unreadable: ${(err as Error).message}` };
    }
    if (res.status !== 200) return { allow: false, reason: `decision point answered HTTP ${res.status}` };
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return { allow: false, reason: 'decision point answer is not JSON' };
    }
    const allow = (body as { allow?: unknown } | null)?.allow;
    if (typeof allow !== 'boolean')
      return { allow: false, reason: 'decision point answer has no boolean "allow"' };
    return { allow, reason: allow ? 'the decision point allowed it' : 'the decision point denied it' };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#ownsClient) await this.#client.close();
  }
}

/** undici says "fetch failed"; the cause says why (refused, certificate, address policy). */
function describeFailure(err: unknown): string {
  const message = (err as Error).message;
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Error && cause.message !== '' ? `${message}: ${cause.message}` : message;
}

async function readCapped(res: Response): Promise<string> {
  if (Number(res.headers.get('content-length') ?? '0') > MAX_DECISION_BYTES)
    throw new Error(`larger than ${MAX_DECISION_BYTES} bytes`);
  const buf = Buffer.from(await res.arrayBuffer());
  if (buf.length > MAX_DECISION_BYTES) throw new Error(`larger than ${MAX_DECISION_BYTES} bytes`);
  return buf.toString('utf8');
}
