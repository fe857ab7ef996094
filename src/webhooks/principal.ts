/**
 * The caller as a webhook sees it (reference middleware.md §3.2 `principal`): the
 * credential-free projection of the identity — subject, name, email, every claim, and the
 * RFC 8693 `act` chain — never the bearer token. Keys and omissions follow the reference's
 * `PrincipalInfo` JSON (`sub`, `platform_user_id`, `name`, `email`, `groups`, `claims`,
 * `delegation`; empty ones left out).
 */

export interface DelegationActor {
  iss?: string;
  sub?: string;
}

/** The `act` chain, outermost (current actor) first, as the audit log records it (§2.5). */
export interface DelegationChain {
  chain: DelegationActor[];
  truncated: boolean;
  omitted: number;
  malformed: boolean;
  malformedReason?: 'act_not_object' | 'nested_act_not_object' | 'iss_not_string' | 'sub_not_string';
}

export interface WebhookPrincipal {
  sub?: string;
  platform_user_id?: string;
  name?: string;
  email?: string;
  groups?: string[];
  claims?: Record<string, unknown>;
  delegation?: DelegationChain;
}

/** The reference's default cap on recorded `act` hops (`maxDelegationDepth`). */
const MAX_DELEGATION_DEPTH = 10;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Walks nested `act` claims (RFC 8693 §4.1); undefined when there is none. */
export function delegationOf(claims: Record<string, unknown>): DelegationChain | undefined {
  let act = claims['act'];
  if (act === undefined || act === null) return undefined;
  const out: DelegationChain = { chain: [], truncated: false, omitted: 0, malformed: false };
  for (let depth = 0; act !== undefined && act !== null; depth++) {
    if (!isObject(act)) {
      out.malformed = true;
      out.malformedReason = depth === 0 ? 'act_not_object' : 'nested_act_not_object';
      break;
    }
    const { iss, sub } = act;
    if (iss !== undefined && typeof iss !== 'string') {
      out.malformed = true;
      out.malformedReason = 'iss_not_string';
      break;
    }
    if (sub !== undefined && typeof sub !== 'string') {
      out.malformed = true;
      out.malformedReason = 'sub_not_string';
      break;
    }
    if (out.chain.length < MAX_DELEGATION_DEPTH) {
      out.chain.push({ ...(iss === undefined ? {} : { iss }), ...(sub === undefined ? {} : { sub }) });
    } else {
      out.truncated = true;
      out.omitted++;
    }
    act = act['act'];
  }
  return out;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * The principal of a request. `claims` are the verified token's, or the local user's when no
 * inbound authentication is configured (`verified` false): like the reference, only a
 * token-derived identity carries `platform_user_id` (its default is `sub`). `groups` stays
 * absent as in the reference, whose auth layer never fills it: receivers read group claims
 * from `claims`.
 */
export function principalOf(
  claims: Record<string, unknown>,
  subject: string | undefined,
  verified: boolean,
): WebhookPrincipal {
  const sub = text(claims['sub']) ?? text(subject);
  const name = text(claims['name']);
  const email = text(claims['email']);
  const delegation = delegationOf(claims);
  const principal: WebhookPrincipal = {};
  if (sub !== undefined) principal.sub = sub;
  if (verified && sub !== undefined) principal.platform_user_id = sub;
  if (name !== undefined) principal.name = name;
  if (email !== undefined) principal.email = email;
  if (Object.keys(claims).length > 0) principal.claims = claims;
  if (delegation !== undefined) principal.delegation = delegation;
  return principal;
}
