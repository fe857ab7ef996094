/**
 * The consent page of the authorization server, and what an approval covers.
 *
 * MCP security best practices (2025-06-18 and 2025-11-25, "Confused Deputy Problem →
 * Consent UI Requirements"): before the upstream login, the page names the client, the
 * scopes and where the code will be sent, is protected against CSRF and cannot be framed.
 * Everything a client registered about itself (its name above all) is chosen by whoever
 * registered it, so every such value is HTML-escaped and the page says the name is the
 * client's own claim. The page loads nothing: no scripts, images or fonts; the CSP allows
 * inline styles and posting the form back to this server only, plus the two places that
 * post's redirect may lead (CSP form-action is enforced on redirects).
 */
import type { ConsentApproval, PendingAuthorization } from './storage.js';

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** How a redirect URI is shown ("where the code goes") and named in a CSP source list. */
export function redirectTarget(uri: string): { shown: string; cspSource: string } {
  const url = new URL(uri);
  if (url.protocol === 'http:' || url.protocol === 'https:') {
    // CSP host-sources cannot spell an IPv6 literal (CSP3 §2.3.1): fall back to the scheme.
    const cspSource = url.hostname.startsWith('[') ? url.protocol : url.origin;
    return { shown: url.host, cspSource };
  }
  // A private-use scheme (RFC 8252 §7.1): an application on the user's device.
  return { shown: `${url.protocol} (an application on this device)`, cspSource: url.protocol };
}

const BASE_CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'";

/** Headers of every HTML page: no framing (clickjacking), no caching, no sniffing. */
export function htmlHeaders(formTargets: string[] | undefined): Record<string, string> {
  const formAction = formTargets ? `form-action 'self' ${formTargets.join(' ')}` : "form-action 'none'";
  return {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': `${BASE_CSP}; ${formAction}`,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store',
    pragma: 'no-cache',
    // Not `no-referrer`: with it a browser sends `Origin: null` on the form POST (Fetch
    // §3.1.4 "append a request Origin header"), and the consent POST checks Origin.
    'referrer-policy': 'same-origin',
  };
}

const SCOPE_TEXT: Record<string, string> = {
  openid: 'confirm who you are',
  profile: 'see your name',
  email: 'see your email address',
  offline_access: 'stay signed in while you are away (refresh tokens)',
};

const STYLE = `
body{font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#1b1b1b;line-height:1.45}
h1{font-size:1.35rem}dt{font-weight:600;margin-top:.75rem}dd{margin:.15rem 0 0 0;overflow-wrap:anywhere}
.note{color:#555;font-size:.9rem}.warn{background:#fff4e5;border-left:4px solid #f0a020;padding:.5rem .75rem}
form{display:flex;gap:.75rem;margin-top:1.5rem}button{font-size:1rem;padding:.5rem 1.25rem;cursor:pointer}
button[value=approve]{background:#1d5fd0;color:#fff;border:1px solid #1d5fd0}code{font-size:.9rem}`;

function ago(seconds: number): string {
  if (seconds < 120) return 'just now';
  if (seconds < 2 * 3600) return `${Math.floor(seconds / 60)} minutes ago`;
  if (seconds < 2 * 86400) return `${Math.floor(seconds / 3600)} hours ago`;
  return `${Math.floor(seconds / 86400)} days ago`;
}

export interface ConsentPage {
  clientId: string;
  clientName: string | undefined;
  /** `client_id_issued_at`, seconds. */
  registeredAt: number;
  nowSec: number;
  redirectUri: string;
  scopes: string[];
  resources: string[];
  /** Host of the upstream login the user goes to next. */
  upstreamHost: string;
  /** Hosts of the other upstreams of a login chain, signed in at after the first. */
  laterUpstreamHosts?: string[];
  flowId: string;
  csrfToken: string;
}

export function renderConsentPage(p: ConsentPage): string {
  const name = p.clientName?.trim() ? p.clientName : undefined;
  const shownName = name === undefined ? 'unnamed client' : name;
  const target = redirectTarget(p.redirectUri);
  const scopes = p.scopes.length
    ? p.scopes
        .map((s) => {
          const what = SCOPE_TEXT[s];
          return `<li><code>${escapeHtml(s)}</code>${what ? ` — ${escapeHtml(what)}` : ''}</li>`;
        })
        .join('')
    : '<li>no scopes</li>';
  const resources = p.resources.map((r) => `<li><code>${escapeHtml(r)}</code></li>`).join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Approve ${escapeHtml(shownName)}? — Skep</title><style>${STYLE}</style></head>
<body><main>
<h1>Allow <strong id="client-name">${escapeHtml(shownName)}</strong> to act as you?</h1>
<p>An application asks to sign you in to the MCP server below and to use it on your behalf.
Approve only if you started this yourself, from an application you trust.</p>
<dl>
<dt>Application</dt><dd><span id="client-name-detail">${escapeHtml(shownName)}</span>
<span class="note">(the name is the application's own claim; client id <code>${escapeHtml(p.clientId)}</code>,
registered ${escapeHtml(ago(p.nowSec - p.registeredAt))})</span></dd>
<dt>Your sign-in will be sent to</dt><dd><strong id="redirect-host">${escapeHtml(target.shown)}</strong>
<span class="note"><code>${escapeHtml(p.redirectUri)}</code></span></dd>
<dt>It asks to</dt><dd><ul id="scopes">${scopes}</ul></dd>
<dt>MCP server</dt><dd><ul id="resources">${resources}</ul></dd>
</dl>
<p class="warn">If you did not just ask an application to connect, choose <em>Deny</em>.
After <em>Approve</em> you sign in at <code>${escapeHtml(p.upstreamHost)}</code>${(p.laterUpstreamHosts ?? [])
    .map((h) => `, then at <code>${escapeHtml(h)}</code>`)
    .join('')}.</p>
<form method="post" action="consent" id="skep-consent">
<input type="hidden" name="flow" value="${escapeHtml(p.flowId)}">
<input type="hidden" name="csrf_token" value="${escapeHtml(p.csrfToken)}">
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>
</main></body></html>
`;
}

/** A plain page for a refused browser request (no code is issued). */
export function renderErrorPage(status: number, error: string, description: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign-in stopped — Skep</title><style>${STYLE}</style></head>
<body><main><h1>Sign-in stopped</h1>
<p id="error-description">${escapeHtml(description)}</p>
<p class="note">HTTP ${status} · <code id="error">${escapeHtml(error)}</code></p>
</main></body></html>
`;
}

/**
 * The resources shown and approved: the requested one, or — when the client named none —
 * every audience the token endpoint could still bind it to.
 */
export function consentResources(pending: PendingAuthorization, allowedAudiences: string[]): string[] {
  return pending.audience.length ? [...pending.audience] : [...allowedAudiences];
}

/** True when a remembered approval covers this request: same redirect URI, no new scope or resource. */
export function approvalCovers(
  approval: ConsentApproval,
  pending: PendingAuthorization,
  resources: string[],
): boolean {
  return (
    approval.redirectUris.includes(pending.redirectUri) &&
    pending.scopes.every((s) => approval.scopes.includes(s)) &&
    resources.every((r) => approval.resources.includes(r))
  );
}

/** The approval after the user approved `pending` (earlier approvals of the client are kept). */
export function mergeApproval(
  previous: ConsentApproval | undefined,
  pending: PendingAuthorization,
  resources: string[],
): ConsentApproval {
  const union = (a: string[] = [], b: string[]) => [...new Set([...a, ...b])].sort();
  return {
    redirectUris: union(previous?.redirectUris, [pending.redirectUri]),
    scopes: union(previous?.scopes, pending.scopes),
    resources: union(previous?.resources, resources),
  };
}
