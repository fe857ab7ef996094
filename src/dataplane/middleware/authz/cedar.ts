/**
 * The `cedarv1` authorizer: the reference's (ToolHive's) entity model evaluated by
 * the official Cedar engine. Policies are preparsed once; each decision builds three entities
 * (`Client::"<sub>"`, `Action::"<action>"`, `Tool::`/`Prompt::`/`Resource::`) and a context,
 * merged with the static `entities_json`.
 *
 * Deliberate differences from the reference:
 * - A synthesised entity whose uid `entities_json` also defines is MERGED over the static one
 *   (the request's attributes win, the static parents are kept): the reference replaces it,
 *   so an `owner` attribute on `Tool::"weather"` (its own docs' example) silently vanishes.
 * - Record keys `__entity` and `__extn` in claims are dropped: in Cedar's JSON they would be
 *   read as an entity reference or an extension call, not as data.
 * Kept as the reference does, for policy compatibility: every JSON number is a `decimal`
 * (4 fractional digits; the local user's `exp`/`iat`/`nbf` are `Long`s), and any policy
 * evaluation error denies the request even when another policy permits it.
 */
import type { AuthzDecision, AuthzFeature, AuthzRequest, Authorizer } from './authorizer.js';
import type { CedarAuthzConfig } from './config.js';
import {
  type AttributeUse,
  attributeUse,
  type CedarEntity,
  type CedarValue,
  entityKey,
  loadCedar,
  preparsePolicies,
} from './cedar-engine.js';

const ACTION: Record<AuthzFeature, string> = {
  tool: 'call_tool',
  prompt: 'get_prompt',
  resource: 'read_resource',
};
const RESOURCE_TYPE: Record<AuthzFeature, string> = { tool: 'Tool', prompt: 'Prompt', resource: 'Resource' };
const OPERATION: Record<AuthzFeature, string> = { tool: 'call', prompt: 'get', resource: 'read' };

/** When no `group_claim_name` is set, or it is absent from the claims: the first of these present. */
const WELL_KNOWN_GROUP_CLAIMS = ['groups', 'roles', 'cognito:groups'];
/** Nested records deeper than this are dropped (reference). */
const MAX_DEPTH = 10;
/** Cedar decimals hold ±922337203685477.5807. */
const DECIMAL_LIMIT = 922_337_203_685_477;
const LOCAL_USER_LONGS = new Set(['exp', 'iat', 'nbf']);

function decimal(n: number): CedarValue | undefined {
  if (!Number.isFinite(n) || Math.abs(n) >= DECIMAL_LIMIT) return undefined;
  return { __extn: { fn: 'decimal', arg: n.toFixed(4) } };
}

/** A JSON value as Cedar sees it; undefined when Cedar has no such value (null, too deep). */
export function toCedarValue(value: unknown, depth = 0): CedarValue | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return decimal(value);
    case 'object': {
      if (value === null || depth >= MAX_DEPTH) return undefined;
      if (Array.isArray(value)) {
        const set: CedarValue[] = [];
        for (const item of value) {
          const v = toCedarValue(item, depth + 1);
          if (v !== undefined) set.push(v);
        }
        return set;
      }
      const record: Record<string, CedarValue> = {};
      for (const [k, item] of Object.entries(value)) {
        if (k === '__entity' || k === '__extn') continue;
        const v = toCedarValue(item, depth + 1);
        if (v !== undefined) record[k] = v;
      }
      return record;
    }
    default:
      return undefined;
  }
}

/** A claim by name: the exact top-level key first, then a dotted path through nested objects. */
function claimAt(claims: Readonly<Record<string, unknown>>, name: string): unknown {
  if (Object.hasOwn(claims, name)) return claims[name];
  let current: unknown = claims;
  for (const part of name.split('.')) {
    if (typeof current !== 'object' || current === null || Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}

function stringsOf(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

interface Principal {
  /** Every claim as an attribute (what `context` holds when a policy uses it whole). */
  all: Record<string, CedarValue>;
  /** The attributes some policy names (what Cedar is given on the entity). */
  used: Record<string, CedarValue>;
  parents: string[];
  /** Identifies what Cedar sees of this principal, for the decision cache. */
  key: string;
}

/** Most decisions remembered. */
const DECISION_CACHE_SIZE = 4096;

export class CedarAuthorizer implements Authorizer {
  readonly #setId: string;
  readonly #serverName: string;
  readonly #groupType: string;
  readonly #groupClaim: string;
  readonly #roleClaim: string;
  readonly #multiValued: readonly string[];
  readonly #static: ReadonlyMap<string, CedarEntity>;
  readonly #use: AttributeUse;
  /** Claims objects are often reused (the local user, a cached token): convert each once. */
  readonly #principals = { token: new WeakMap<object, Principal>(), local: new WeakMap<object, Principal>() };
  /**
   * Cedar decisions are a pure function of the policies, the static entities (both fixed
   * here) and the request's entities and context, so equal inputs are answered from memory:
   * a decision costs ~0.1 ms in the WebAssembly engine, a lookup ~1 µs.
   */
  readonly #decisions = new Map<string, AuthzDecision>();

  constructor(config: CedarAuthzConfig, serverName: string, field = 'authz_config') {
    this.#setId = preparsePolicies(config.cedar.policies, `${field}.cedar.policies`);
    this.#use = attributeUse(config.cedar.policies);
    this.#serverName = serverName;
    this.#groupType = config.cedar.group_entity_type;
    this.#groupClaim = config.cedar.group_claim_name;
    this.#roleClaim = config.cedar.role_claim_name;
    this.#multiValued = config.cedar.multi_valued_claims;
    this.#static = new Map(config.entities.map((e) => [entityKey(e.uid), e]));
  }

  /** Groups, in the reference's order: the group claim (or the first well-known one), then the role claim. */
  groupsOf(claims: Readonly<Record<string, unknown>>): string[] {
    let primary = this.#groupClaim === '' ? undefined : claimAt(claims, this.#groupClaim);
    if (primary === undefined) {
      const name = WELL_KNOWN_GROUP_CLAIMS.find((n) => claims[n] !== undefined);
      primary = name === undefined ? undefined : claims[name];
    }
    const groups = stringsOf(primary);
    if (this.#roleClaim !== '') groups.push(...stringsOf(claimAt(claims, this.#roleClaim)));
    return [...new Set(groups)];
  }

  /** `claim_<name>` (and `claimset_<name>` for multi-valued claims) attributes of the principal and context. */
  claimAttributes(claims: Readonly<Record<string, unknown>>, localUser: boolean): Record<string, CedarValue> {
    return this.#principal(claims, localUser).all;
  }

  #used(attrs: Record<string, CedarValue>): Record<string, CedarValue> {
    const out: Record<string, CedarValue> = {};
    for (const k in attrs) if (this.#use.names.has(k)) out[k] = attrs[k] as CedarValue;
    return out;
  }

  #principal(claims: Readonly<Record<string, unknown>>, localUser: boolean): Principal {
    const memo = localUser ? this.#principals.local : this.#principals.token;
    const cached = memo.get(claims);
    if (cached !== undefined) return cached;
    const all: Record<string, CedarValue> = {};
    for (const [name, value] of Object.entries(claims)) {
      const v =
        localUser && LOCAL_USER_LONGS.has(name) && Number.isSafeInteger(value)
          ? (value as number)
          : toCedarValue(value);
      if (v !== undefined) all[`claim_${name}`] = v;
    }
    for (const name of this.#multiValued) {
      const value = claims[name];
      const values =
        typeof value === 'string'
          ? value.split(/\s+/).filter((s) => s !== '')
          : Array.isArray(value)
            ? stringsOf(value)
            : undefined;
      if (values === undefined) continue;
      all[`claim_${name}`] = values.join(' ');
      all[`claimset_${name}`] = values;
    }
    const used = this.#used(all);
    const parents = this.groupsOf(claims);
    const key = JSON.stringify([claims['sub'], used, parents, this.#use.wholeContext ? all : 0]);
    const principal = { all, used, parents, key };
    memo.set(claims, principal);
    return principal;
  }

  /** The entity the request synthesises, merged over a static one of the same uid (see the module comment). */
  #merged(entity: CedarEntity): CedarEntity {
    const known = this.#static.get(entityKey(entity.uid));
    if (known === undefined) return entity;
    const parents = [...known.parents];
    for (const p of entity.parents)
      if (!parents.some((q) => q.type === p.type && q.id === p.id)) parents.push(p);
    return Object.assign({}, known, { attrs: Object.assign({}, known.attrs, entity.attrs), parents });
  }

  authorize(request: AuthzRequest): AuthzDecision {
    const sub = request.claims['sub'];
    if (typeof sub !== 'string' || sub === '')
      return { allow: false, reason: 'the claims have no subject (sub)' };
    const principal = this.#principal(request.claims, request.localUser);
    const actionId = ACTION[request.feature];

    const args: Record<string, CedarValue> = {};
    if (request.feature !== 'resource' && request.arguments !== undefined) {
      for (const [k, value] of Object.entries(request.arguments)) {
        const t = typeof value;
        if (t === 'string' || t === 'boolean' || t === 'number') {
          const v = toCedarValue(value);
          if (v !== undefined) args[`arg_${k}`] = v;
        } else if (t === 'object') args[`arg_${k}_present`] = true;
      }
    }
    const resourceAttrs = this.#used(
      request.feature === 'resource'
        ? { name: request.resourceId, uri: request.resourceId, operation: 'read', feature: 'resource' }
        : // Annotations first: the standard attributes win over them (as in ToolHive).
          Object.assign({}, request.feature === 'tool' ? request.annotations : undefined, args, {
            name: request.resourceId,
            operation: OPERATION[request.feature],
            feature: request.feature,
          }),
    );
    const contextArgs = this.#use.wholeContext ? args : this.#used(args);
    const key = `${principal.key}\u0000${request.feature}\u0000${request.resourceId}\u0000${JSON.stringify(resourceAttrs)}\u0000${JSON.stringify(contextArgs)}`;
    const remembered = this.#decisions.get(key);
    if (remembered !== undefined) return remembered;
    const decision = this.#evaluate(sub, principal, actionId, request, resourceAttrs, contextArgs);
    // Bounded: when full, start over (a working set larger than this gains little anyway).
    if (this.#decisions.size >= DECISION_CACHE_SIZE) this.#decisions.clear();
    this.#decisions.set(key, decision);
    return decision;
  }

  #evaluate(
    sub: string,
    principal: Principal,
    actionId: string,
    request: AuthzRequest,
    resourceAttrs: Record<string, CedarValue>,
    contextArgs: Record<string, CedarValue>,
  ): AuthzDecision {
    const principalUid = { type: 'Client', id: sub };
    const actionUid = { type: 'Action', id: actionId };
    const resourceUid = { type: RESOURCE_TYPE[request.feature], id: request.resourceId };
    const actionAttrs = this.#used({ operation: actionId });
    const synthesised: CedarEntity[] = [
      {
        uid: principalUid,
        attrs: principal.used,
        parents: principal.parents.map((g) => ({ type: this.#groupType, id: g })),
      },
      {
        uid: resourceUid,
        attrs: resourceAttrs,
        parents: this.#serverName === '' ? [] : [{ type: 'MCP', id: this.#serverName }],
      },
    ];
    // An entity without attributes or parents is the same to Cedar as an absent one.
    if (Object.keys(actionAttrs).length > 0 || this.#static.size > 0)
      synthesised.push({ uid: actionUid, attrs: actionAttrs, parents: [] });
    let entities: CedarEntity[] = synthesised;
    if (this.#static.size > 0) {
      const own = new Set(synthesised.map((e) => entityKey(e.uid)));
      entities = [
        ...[...this.#static.values()].filter((e) => !own.has(entityKey(e.uid))),
        ...synthesised.map((e) => this.#merged(e)),
      ];
    }

    const answer = loadCedar().statefulIsAuthorized({
      principal: principalUid,
      action: actionUid,
      resource: resourceUid,
      context: Object.assign({}, this.#use.wholeContext ? principal.all : principal.used, contextArgs),
      preparsedPolicySetId: this.#setId,
      entities,
    });
    if (answer.type === 'failure')
      return {
        allow: false,
        reason: `Cedar refused the request: ${answer.errors.map((e) => redact(e.message)).join('; ')}`,
      };
    const { decision, diagnostics } = answer.response;
    if (diagnostics.errors.length > 0)
      return {
        allow: false,
        reason: `policy evaluation error (denies): ${diagnostics.errors
          .map((e) => `${e.policyId}: ${redact(e.error.message)}`)
          .join('; ')}`,
      };
    if (decision === 'allow') return { allow: true, reason: `permitted by ${diagnostics.reason.join(', ')}` };
    return {
      allow: false,
      reason:
        diagnostics.reason.length === 0
          ? 'no policy permits it'
          : `forbidden by ${diagnostics.reason.join(', ')}`,
    };
  }
}

/** Cedar's messages quote entity ids (a subject) and values: keep their shape, not their content. */
function redact(message: string): string {
  return message.replace(/"(?:[^"\\]|\\.)*"/g, '"…"');
}
