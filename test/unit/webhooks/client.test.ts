import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  principalOf,
  readWebhookResponse,
  sharedPrincipalOf,
  signPayload,
  webhookRequestBody,
} from '../../../src/dataplane/middleware/webhooks/runtime.js';

test('HMAC: sha256=<hex> of HMAC-SHA256(secret, "<ts>." + body), a vector computed with openssl', () => {
  // printf '%s' '1700000000.{"a":1}' | openssl dgst -sha256 -hmac topsecret
  assert.equal(
    signPayload(Buffer.from('topsecret'), 1_700_000_000, '{"a":1}'),
    'sha256=6a939b0c71853d606167625a15168ee9188c6a511c773ef4f42d307f3849e50f',
  );
  assert.notEqual(
    signPayload(Buffer.from('topsecret'), 1_700_000_001, '{"a":1}'),
    signPayload(Buffer.from('topsecret'), 1_700_000_000, '{"a":1}'),
    'the timestamp is signed',
  );
});

test('request body: the reference keys in order, mcp_request embedded verbatim', () => {
  const raw = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}';
  const text = webhookRequestBody({
    uid: 'u-1',
    timestamp: new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6)),
    principal: { sub: 'alice', claims: { sub: 'alice' } },
    mcpRequest: raw,
    context: { server_name: 'github', source_ip: '127.0.0.1', transport: 'stdio' },
  });
  assert.ok(text.includes(`"mcp_request":${raw}`));
  const body = JSON.parse(text) as Record<string, unknown>;
  assert.deepEqual(Object.keys(body), ['version', 'uid', 'timestamp', 'principal', 'mcp_request', 'context']);
  assert.equal(body['version'], 'v0.1.0');
  assert.equal(body['uid'], 'u-1');
  assert.equal(body['timestamp'], '2026-01-02T03:04:05.006Z');
  assert.deepEqual(body['context'], { server_name: 'github', source_ip: '127.0.0.1', transport: 'stdio' });
  const anonymous = JSON.parse(
    webhookRequestBody({
      uid: 'u',
      timestamp: new Date(0),
      principal: null,
      mcpRequest: '{}',
      context: { server_name: 's', source_ip: '', transport: 'sse' },
    }),
  ) as Record<string, unknown>;
  assert.equal(anonymous['principal'], null);
});

test('principal: credential-free, all claims, platform_user_id only for a verified token', () => {
  const claims = { sub: 'alice', name: 'Alice', email: 'a@example.com', groups: ['eng'], iss: 'https://idp' };
  assert.deepEqual(principalOf(claims, 'alice', true), {
    sub: 'alice',
    platform_user_id: 'alice',
    name: 'Alice',
    email: 'a@example.com',
    claims,
  });
  const local = { sub: 'me', iss: 'toolhive-local', name: 'Local User: me', email: 'me@localhost' };
  const p = principalOf(local, 'me', false);
  assert.equal(p.platform_user_id, undefined);
  assert.equal(p.sub, 'me');
  assert.deepEqual(principalOf({}, 'from-subject', true), {
    sub: 'from-subject',
    platform_user_id: 'from-subject',
  });
  assert.ok(!JSON.stringify(principalOf(claims, 'alice', true)).includes('token'));
});

test('shared principal: one per claims object, rebuilt when the subject or verification differs', () => {
  const claims = Object.freeze({ sub: 'me', name: 'Local User: me' });
  const first = sharedPrincipalOf(claims, 'me', false);
  assert.equal(sharedPrincipalOf(claims, 'me', false), first, 'the same claims reuse the principal');
  assert.ok(Object.isFrozen(first), 'a shared principal cannot be changed by one request');
  assert.deepEqual(first, principalOf(claims, 'me', false));
  const verified = sharedPrincipalOf(claims, 'me', true);
  assert.notEqual(verified, first);
  assert.equal(verified.platform_user_id, 'me');
  assert.equal(sharedPrincipalOf({ sub: 'me', name: 'Local User: me' }, 'me', false) === first, false);
  const body = (principal: Parameters<typeof webhookRequestBody>[0]['principal']) =>
    JSON.parse(
      webhookRequestBody({
        uid: 'u',
        timestamp: new Date(0),
        principal,
        mcpRequest: '{}',
        context: { server_name: 's', source_ip: '', transport: 'stdio' },
      }),
    ) as Record<string, unknown>;
  // The serialized principal is written once per shared principal and stays right on reuse.
  assert.deepEqual(body(first)['principal'], { sub: 'me', name: 'Local User: me', claims });
  assert.deepEqual(body(first)['principal'], { sub: 'me', name: 'Local User: me', claims });
  assert.deepEqual(body(verified)['principal'], {
    sub: 'me',
    platform_user_id: 'me',
    name: 'Local User: me',
    claims,
  });
});

test('RFC 8693 §4.1 act chain: outermost actor first, capped at 10, malformed links flagged', () => {
  const delegationOf = (claims: Record<string, unknown>) => principalOf(claims, undefined, true).delegation;
  assert.equal(delegationOf({ sub: 'u' }), undefined);
  assert.deepEqual(delegationOf({ act: { sub: 'agent', iss: 'https://as', act: { sub: 'tool' } } }), {
    chain: [{ iss: 'https://as', sub: 'agent' }, { sub: 'tool' }],
    truncated: false,
    omitted: 0,
    malformed: false,
  });
  let deep: Record<string, unknown> = { sub: 'a12' };
  for (let i = 11; i >= 0; i--) deep = { sub: `a${i}`, act: deep };
  const capped = delegationOf({ act: deep });
  assert.equal(capped?.chain.length, 10);
  assert.equal(capped?.truncated, true);
  assert.equal(capped?.omitted, 3);
  assert.equal(delegationOf({ act: 'x' })?.malformedReason, 'act_not_object');
  assert.equal(delegationOf({ act: { sub: 'a', act: 5 } })?.malformedReason, 'nested_act_not_object');
  assert.equal(delegationOf({ act: { iss: 1 } })?.malformedReason, 'iss_not_string');
  assert.equal(delegationOf({ act: { sub: true } })?.malformedReason, 'sub_not_string');
  assert.deepEqual(principalOf({ sub: 'u', act: { sub: 'agent' } }, undefined, true).delegation?.chain, [
    { sub: 'agent' },
  ]);
});

test('answer shape: allowed absent is a denial; wrong types make the answer unusable', () => {
  assert.deepEqual(readWebhookResponse({ allowed: true, version: 'v0.1.0', uid: 'x' }), { allowed: true });
  assert.deepEqual(readWebhookResponse({}), { allowed: false });
  assert.deepEqual(
    readWebhookResponse({ allowed: false, reason: 'r', message: 'm', code: 403, details: { a: 'b' } }),
    { allowed: false, reason: 'r', message: 'm' },
  );
  assert.deepEqual(readWebhookResponse({ allowed: true, patch_type: 'json_patch', patch: [] }), {
    allowed: true,
    patchType: 'json_patch',
    patch: [],
  });
  for (const bad of [
    [],
    'yes',
    null,
    { allowed: 'true' },
    { allowed: true, code: 'x' },
    { allowed: true, reason: 1 },
  ])
    assert.equal(typeof readWebhookResponse(bad), 'string', JSON.stringify(bad));
  assert.equal(readWebhookResponse({ allowed: true, details: { a: 1 } }), '"details" values must be strings');
  assert.equal(readWebhookResponse({ allowed: true, patch_type: 5 }), '"patch_type" is not a string');
});
