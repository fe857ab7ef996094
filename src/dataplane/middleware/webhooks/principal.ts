/**
 * The caller as a webhook sees it (ToolHive's `principal`): the credential-free projection of the
 * identity — subject, name, email, every claim, and the RFC 8693 `act` chain — never the bearer
 * token. Keys and omissions follow the reference's `PrincipalInfo` JSON (`sub`, `platform_user_id`,
 * `name`, `email`, `groups`, `claims`, `delegation`; empty ones left out).
 */
import { type DelegationChain, delegationChainOf } from '../../../shared/index.js';

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
  const delegation = delegationChainOf(claims['act'], MAX_DELEGATION_DEPTH);
  const principal: WebhookPrincipal = {};
  if (sub !== undefined) principal.sub = sub;
  if (verified && sub !== undefined) principal.platform_user_id = sub;
  if (name !== undefined) principal.name = name;
  if (email !== undefined) principal.email = email;
  if (Object.keys(claims).length > 0) principal.claims = claims;
  if (delegation !== undefined) principal.delegation = delegation;
  return principal;
}

/** The last principal built from a claims object, with what else it was built from. */
interface CachedPrincipal {
  readonly subject: string | undefined;
  readonly verified: boolean;
  readonly principal: Readonly<WebhookPrincipal>;
}
const built = new WeakMap<object, CachedPrincipal>();

/**
 * `principalOf`, reusing the principal built last time from the same claims object (the local
 * user's frozen claims, or a verified token's, are the same object from call to call), so that
 * its JSON is written once (`principalJson`) rather than on every webhook call. The result is
 * frozen: it is shared by every request with these claims.
 */
export function sharedPrincipalOf(
  claims: Record<string, unknown>,
  subject: string | undefined,
  verified: boolean,
): Readonly<WebhookPrincipal> {
  const hit = built.get(claims);
  if (hit !== undefined && hit.subject === subject && hit.verified === verified) return hit.principal;
  const principal = Object.freeze(principalOf(claims, subject, verified));
  built.set(claims, { subject, verified, principal });
  return principal;
}

const texts = new WeakMap<object, string>();

/** `JSON.stringify(principal)`, once per frozen principal (`sharedPrincipalOf`). */
export function principalJson(principal: Readonly<WebhookPrincipal> | null): string {
  if (principal === null) return 'null';
  if (!Object.isFrozen(principal)) return JSON.stringify(principal);
  let text = texts.get(principal);
  if (text === undefined) {
    text = JSON.stringify(principal);
    texts.set(principal, text);
  }
  return text;
}
