/**
 * Who the caller is, for the stages that judge or record requests (authorization, audit, webhooks).
 * With inbound authentication the verified token's claims; without it, the reference's synthetic
 * local user (what ToolHive uses when no OIDC is configured): `sub` is the OS user running the
 * proxy, so Cedar policies can name `Client::"<user>"` on a workstation with no identity provider.
 */
import { userInfo } from 'node:os';
import type { ProxyIdentity, ProxyRequestContext } from '../proxy/index.js';

export const LOCAL_ISSUER = 'toolhive-local';
const LOCAL_AUDIENCE = 'toolhive';

function osUser(): string {
  try {
    const name = userInfo().username;
    return name === '' ? 'local' : name;
  } catch {
    return 'local';
  }
}

/**
 * The local user's claims, as the reference builds them: `exp`/`iat`/`nbf` are integers
 * (Cedar `Long`s, unlike every other number, which arrives as a JSON float).
 */
export function localUserClaims(nowMs = Date.now()): Record<string, unknown> {
  const user = osUser();
  const now = Math.floor(nowMs / 1000);
  return {
    sub: user,
    iss: LOCAL_ISSUER,
    aud: LOCAL_AUDIENCE,
    exp: now + 24 * 3600,
    iat: now,
    nbf: now,
    email: `${user}@localhost`,
    name: `Local User: ${user}`,
  };
}

let local: ProxyIdentity | undefined;

/** The local user identity (claims refreshed daily so `exp` never lies). */
export function localUserIdentity(nowMs = Date.now()): ProxyIdentity {
  const claims = local?.claims;
  if (local === undefined || typeof claims?.['iat'] !== 'number' || nowMs / 1000 - claims['iat'] > 3600) {
    const fresh = localUserClaims(nowMs);
    local = Object.freeze({ subject: fresh['sub'] as string, claims: Object.freeze(fresh) });
  }
  return local;
}

/** The caller's claims: the verified token's, or the local user's when nothing authenticated. */
export function callerClaims(ctx: Pick<ProxyRequestContext, 'identity'>): Record<string, unknown> {
  return ctx.identity.claims ?? localUserIdentity().claims ?? {};
}
