/** The consent page and what an approval covers (MCP security best practices, "Confused Deputy Problem"). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  approvalCovers,
  escapeHtml,
  mergeApproval,
  redirectTarget,
  renderConsentPage,
} from '../../../src/authserver/consent.js';
import type { PendingAuthorization } from '../../../src/authserver/storage.js';

const pending = (over: Partial<PendingAuthorization> = {}): PendingAuthorization => ({
  clientId: 'c1',
  redirectUri: 'http://127.0.0.1:9/cb',
  clientState: undefined,
  codeChallenge: 'x'.repeat(43),
  scopes: ['openid', 'profile'],
  audience: [],
  upstream: 'idp',
  upstreamVerifier: 'v',
  nonce: 'n',
  sessionId: 's',
  createdAt: 0,
  flowId: 'f',
  browserBinding: 'b',
  ...over,
});

test('redirect targets: host shown; CSP source by origin, by scheme for IPv6 literals and private-use schemes', () => {
  assert.deepEqual(redirectTarget('https://app.example:8443/cb?x=1'), {
    shown: 'app.example:8443',
    cspSource: 'https://app.example:8443',
  });
  assert.deepEqual(redirectTarget('http://[::1]:9/cb'), { shown: '[::1]:9', cspSource: 'http:' });
  const app = redirectTarget('com.example.app:/oauth');
  assert.equal(app.cspSource, 'com.example.app:');
  assert.match(app.shown, /^com\.example\.app: \(an application on this device\)$/);
});

test('every registered value on the page is escaped', () => {
  assert.equal(
    escapeHtml(`<a href="x" onclick='y'>&</a>`),
    '&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;',
  );
  const html = renderConsentPage({
    clientId: '"><img src=x>',
    clientName: '<img src=x onerror=alert(1)>',
    registeredAt: 1000,
    nowSec: 1000 + 3 * 86400,
    redirectUri: 'https://evil.example/cb?<b>',
    scopes: ['openid', '<i>'],
    resources: ['https://mcp.example/mcp'],
    upstreamHost: 'idp.example',
    flowId: 'flow',
    csrfToken: 'token',
  });
  assert.ok(!/<img|<b>|<i>/.test(html), html);
  assert.match(html, /registered 3 days ago/);
  assert.match(html, /name="csrf_token" value="token"/);
  assert.match(html, /id="redirect-host">evil\.example</);
});

test('an approval covers the same redirect URI with no new scope or resource; merging keeps earlier approvals', () => {
  const first = mergeApproval(undefined, pending(), ['https://mcp.example/mcp']);
  assert.deepEqual(first, {
    redirectUris: ['http://127.0.0.1:9/cb'],
    scopes: ['openid', 'profile'],
    resources: ['https://mcp.example/mcp'],
  });
  const res = ['https://mcp.example/mcp'];
  assert.equal(approvalCovers(first, pending({ scopes: ['openid'] }), res), true);
  assert.equal(approvalCovers(first, pending({ scopes: ['openid', 'email'] }), res), false, 'new scope');
  assert.equal(approvalCovers(first, pending({ redirectUri: 'http://127.0.0.1:10/cb' }), res), false);
  assert.equal(approvalCovers(first, pending(), ['https://other.example/mcp']), false, 'new resource');
  const both = mergeApproval(
    first,
    pending({ scopes: ['email'], redirectUri: 'http://127.0.0.1:10/cb' }),
    res,
  );
  assert.deepEqual(both.scopes, ['email', 'openid', 'profile']);
  assert.deepEqual(both.redirectUris, ['http://127.0.0.1:10/cb', 'http://127.0.0.1:9/cb']);
});
