import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type AuthzRequest,
  type CedarAuthzConfig,
  parseAuthzConfig,
} from '../../../src/dataplane/middleware/authz/index.js';
import { CedarAuthorizer } from '../../../src/dataplane/middleware/authz/runtime.js';
import { localUserClaims } from '../../../src/dataplane/pipeline/identity.js';

function authorizer(
  policies: string[],
  cedar: Record<string, unknown> = {},
  serverName = 'github',
): CedarAuthorizer {
  const config = parseAuthzConfig({ version: '1.0', type: 'cedarv1', cedar: { policies, ...cedar } });
  return new CedarAuthorizer(config as CedarAuthzConfig, serverName);
}

const ALICE = { sub: 'alice', email: 'alice@example.com', groups: ['eng', 'ops'], level: 3 };

function call(
  tool: string,
  args?: Record<string, unknown>,
  claims: Record<string, unknown> = ALICE,
): AuthzRequest {
  return { claims, localUser: false, feature: 'tool', resourceId: tool, arguments: args };
}

test('claims become claim_* attributes on the principal and in the context', () => {
  const a = authorizer([
    'permit(principal == Client::"alice", action == Action::"call_tool", resource) when { principal.claim_email == "alice@example.com" && context.claim_email == "alice@example.com" };',
  ]);
  assert.equal(a.authorize(call('echo')).allow, true);
  assert.equal(a.authorize(call('echo', {}, { ...ALICE, email: 'eve@example.com' })).allow, false);
  assert.equal(a.authorize(call('echo', {}, { ...ALICE, sub: 'bob' })).allow, false);
});

test('a missing or empty sub denies', () => {
  const a = authorizer(['permit(principal, action, resource);']);
  assert.equal(a.authorize(call('echo', {}, { email: 'x' })).allow, false);
  assert.match(a.authorize(call('echo', {}, { sub: '' })).reason, /no subject/);
});

test('every JSON number is a Cedar decimal (4 digits); == against a Long is false', () => {
  const a = authorizer([
    'permit(principal, action, resource) when { principal.claim_level == decimal("3.0") };',
  ]);
  assert.equal(a.authorize(call('echo')).allow, true);
  const attrs = a.claimAttributes(ALICE, false);
  assert.deepEqual(attrs['claim_level'], { __extn: { fn: 'decimal', arg: '3.0000' } });
  const longCompare = authorizer([
    'permit(principal, action, resource) when { principal.claim_level == 3 };',
  ]);
  assert.equal(longCompare.authorize(call('echo')).allow, false);
});

test('the local user is Client::"<os user>"; its exp/iat/nbf are Longs', () => {
  const claims = localUserClaims(Date.UTC(2026, 0, 1));
  const a = authorizer([
    `permit(principal == Client::"${String(claims['sub'])}", action, resource) when { principal.claim_exp > principal.claim_iat && principal.claim_iss == "toolhive-local" };`,
  ]);
  assert.equal(a.authorize({ ...call('echo'), claims, localUser: true }).allow, true);
  assert.equal(typeof a.claimAttributes(claims, true)['claim_exp'], 'number');
  // The same numbers from a token are decimals, and ordering decimals errors → deny.
  assert.equal(a.authorize({ ...call('echo'), claims: { ...claims }, localUser: false }).allow, false);
});

test('groups come from group_claim_name (dotted path), else groups/roles/cognito:groups, plus role_claim_name', () => {
  assert.deepEqual(authorizer(['permit(principal, action, resource);']).groupsOf(ALICE), ['eng', 'ops']);
  assert.deepEqual(
    authorizer(['permit(principal, action, resource);']).groupsOf({ roles: ['r'], 'cognito:groups': ['c'] }),
    ['r'],
  );
  const nested = authorizer(['permit(principal, action, resource);'], {
    group_claim_name: 'realm_access.roles',
    role_claim_name: 'app_roles',
  });
  assert.deepEqual(
    nested.groupsOf({
      realm_access: { roles: ['admin', 7, 'dev'] },
      app_roles: ['dev', 'audit'],
      groups: ['ignored'],
    }),
    ['admin', 'dev', 'audit'],
  );
  // The exact top-level key wins over the dotted traversal.
  assert.deepEqual(nested.groupsOf({ 'realm_access.roles': ['flat'], realm_access: { roles: ['deep'] } }), [
    'flat',
  ]);
  // Absent group claim: fall back to the well-known ones.
  assert.deepEqual(nested.groupsOf({ groups: ['g'] }), ['g']);
});

test('`principal in THVGroup::"x"` works from the parent link (custom group_entity_type too)', () => {
  const a = authorizer(['permit(principal in THVGroup::"ops", action, resource);']);
  assert.equal(a.authorize(call('echo')).allow, true);
  assert.equal(a.authorize(call('echo', {}, { sub: 'bob', groups: ['eng'] })).allow, false);
  const custom = authorizer(['permit(principal in Team::"ops", action, resource);'], {
    group_entity_type: 'Team',
  });
  assert.equal(custom.authorize(call('echo')).allow, true);
});

test('multi_valued_claims give a space-joined claim_<n> and a Set claimset_<n>', () => {
  const a = authorizer(
    [
      'permit(principal, action, resource) when { principal.claimset_scope.contains("mcp:write") && principal.claim_scope like "*mcp:read*" };',
    ],
    { multi_valued_claims: ['scope', 'aud'] },
  );
  assert.equal(a.authorize(call('echo', {}, { sub: 'a', scope: 'mcp:read  mcp:write' })).allow, true);
  assert.equal(a.authorize(call('echo', {}, { sub: 'a', scope: 'mcp:read' })).allow, false);
  const attrs = a.claimAttributes({ sub: 'a', aud: ['x', 'y'] }, false);
  assert.equal(attrs['claim_aud'], 'x y');
  assert.deepEqual(attrs['claimset_aud'], ['x', 'y']);
});

test('a policy on an argument (arg_*), with has; objects/arrays/null become arg_<k>_present', () => {
  const a = authorizer([
    'permit(principal, action == Action::"call_tool", resource == Tool::"add") when { resource has arg_a && resource.arg_a.lessThan(decimal("10.0")) && context.arg_mode == "safe" };',
    'permit(principal, action, resource == Tool::"structured") when { resource.arg_opts_present && !(resource has arg_opts) };',
  ]);
  assert.equal(a.authorize(call('add', { a: 5, mode: 'safe' })).allow, true);
  assert.equal(a.authorize(call('add', { a: 50, mode: 'safe' })).allow, false);
  assert.equal(a.authorize(call('add', { a: 5, mode: 'rm' })).allow, false);
  assert.equal(a.authorize(call('add', { mode: 'safe' })).allow, false);
  assert.equal(a.authorize(call('structured', { opts: { x: 1 } })).allow, true);
  assert.equal(a.authorize(call('structured', { opts: null })).allow, true);
});

test('an evaluation error in any policy denies, even when another permits', () => {
  const a = authorizer([
    'permit(principal, action, resource);',
    'forbid(principal, action, resource) when { resource.arg_x == "boom" };',
  ]);
  const d = a.authorize(call('echo'));
  assert.equal(d.allow, false);
  assert.match(d.reason, /policy evaluation error/);
  assert.match(d.reason, /policy1/);
  assert.equal(a.authorize(call('echo', { x: 'fine' })).allow, true);
});

test('Cedar: forbid overrides permit', () => {
  const a = authorizer([
    'permit(principal, action, resource);',
    'forbid(principal, action, resource == Tool::"delete_repo");',
  ]);
  assert.equal(a.authorize(call('echo')).allow, true);
  const d = a.authorize(call('delete_repo'));
  assert.equal(d.allow, false);
  assert.match(d.reason, /forbidden by policy1/);
  assert.match(
    authorizer(['permit(principal, action, resource == Tool::"x");']).authorize(call('y')).reason,
    /no policy permits/,
  );
});

test('actions, resource types and attributes for tools, prompts and resources; parent MCP::"<server>"', () => {
  const a = authorizer([
    'permit(principal, action == Action::"call_tool", resource in MCP::"github") when { resource.name == "echo" && resource.operation == "call" && resource.feature == "tool" && action.operation == "call_tool" };',
    'permit(principal, action == Action::"get_prompt", resource is Prompt) when { resource.operation == "get" && resource.feature == "prompt" && resource.arg_topic == "x" };',
    'permit(principal, action == Action::"read_resource", resource == Resource::"file:///a b.txt") when { resource.uri == "file:///a b.txt" && resource.name == resource.uri && resource.operation == "read" };',
  ]);
  assert.equal(a.authorize(call('echo')).allow, true);
  assert.equal(
    a.authorize({
      claims: ALICE,
      localUser: false,
      feature: 'prompt',
      resourceId: 'p',
      arguments: { topic: 'x' },
    }).allow,
    true,
  );
  assert.equal(
    a.authorize({ claims: ALICE, localUser: false, feature: 'resource', resourceId: 'file:///a b.txt' })
      .allow,
    true,
  );
  const other = authorizer(['permit(principal, action, resource in MCP::"github");'], {}, 'gitlab');
  assert.equal(other.authorize(call('echo')).allow, false);
});

test('tool annotations are resource attributes; the standard attributes win over them', () => {
  const a = authorizer([
    'permit(principal, action, resource) when { resource has readOnlyHint && resource.readOnlyHint };',
  ]);
  assert.equal(a.authorize({ ...call('get'), annotations: { readOnlyHint: true } }).allow, true);
  assert.equal(
    a.authorize({ ...call('rm'), annotations: { readOnlyHint: false, destructiveHint: true } }).allow,
    false,
  );
  assert.equal(a.authorize(call('unknown')).allow, false);
});

test('better than the reference: entities_json attributes and parents of a Tool are kept (merged under the request’s)', () => {
  const entities = JSON.stringify([
    {
      uid: { type: 'Tool', id: 'weather' },
      attrs: { owner: 'ops', name: 'static' },
      parents: [{ type: 'Team', id: 'ops' }],
    },
    {
      uid: { type: 'Client', id: 'alice' },
      attrs: { clearance: 'high' },
      parents: [{ type: 'Role', id: 'admin' }],
    },
    { uid: { type: 'Role', id: 'admin' }, attrs: {}, parents: [] },
  ]);
  const a = authorizer(
    [
      'permit(principal, action, resource == Tool::"weather") when { resource.owner == "ops" && resource in Team::"ops" && resource in MCP::"github" && resource.name == "weather" };',
      'permit(principal in Role::"admin", action, resource == Tool::"admin_only") when { principal.clearance == "high" && principal.claim_email like "*@example.com" };',
    ],
    { entities_json: entities },
  );
  assert.equal(a.authorize(call('weather')).allow, true);
  assert.equal(a.authorize(call('admin_only')).allow, true);
  assert.equal(a.authorize(call('admin_only', {}, { sub: 'bob', email: 'bob@example.com' })).allow, false);
});

test('claims: null is dropped, arrays are Sets, nested objects are records, __entity keys are not entity references', () => {
  const a = authorizer([
    'permit(principal, action, resource) when { principal.claim_org.team == "core" && principal.claim_tags.contains("a") && !(principal has claim_gone) };',
    'forbid(principal, action, resource) when { principal.claim_trick has __entity };',
  ]);
  const claims = {
    sub: 'a',
    org: { team: 'core' },
    tags: ['a', null, 'b'],
    gone: null,
    trick: { __entity: { type: 'Role', id: 'admin' } },
  };
  assert.equal(a.authorize(call('echo', {}, claims)).allow, true);
});

test('the denial reason carries policy ids, not claim values', () => {
  const a = authorizer(['permit(principal, action, resource) when { principal.claim_secret_thing == "x" };']);
  const d = a.authorize(call('echo', {}, { sub: 'alice-the-subject' }));
  assert.equal(d.allow, false);
  assert.doesNotMatch(d.reason, /alice-the-subject/);
});

test('only attributes a policy names reach Cedar, except when a policy uses context as a whole record', () => {
  const whole = authorizer([
    'permit(principal, action, resource) when { context == {"claim_sub": "alice", "arg_n": "1"} };',
  ]);
  assert.equal(whole.authorize(call('echo', { n: '1' }, { sub: 'alice' })).allow, true);
  assert.equal(whole.authorize(call('echo', { n: '1' }, { sub: 'alice', email: 'x' })).allow, false);
  const named = authorizer([
    'permit(principal, action, resource) when { context["arg_n"] == "1" && resource["arg_n"] == "1" && !(principal has claim_email) };',
  ]);
  assert.equal(named.authorize(call('echo', { n: '1' }, { sub: 'alice' })).allow, true);
  assert.equal(named.authorize(call('echo', { n: '1' }, { sub: 'alice', email: 'x' })).allow, false);
  assert.equal(named.authorize(call('echo', { n: '2' }, { sub: 'alice' })).allow, false);
});

test('decisions are remembered per exact input: a changed claim, argument or annotation is decided afresh', () => {
  const a = authorizer([
    'permit(principal, action, resource) when { principal.claim_email == "a@x" && resource.arg_n == "1" && !(resource has destructiveHint && resource.destructiveHint) };',
  ]);
  for (let i = 0; i < 3; i++) {
    assert.equal(a.authorize(call('echo', { n: '1' }, { sub: 'a', email: 'a@x' })).allow, true);
    assert.equal(a.authorize(call('echo', { n: '1' }, { sub: 'a', email: 'b@x' })).allow, false);
    assert.equal(a.authorize(call('echo', { n: '2' }, { sub: 'a', email: 'a@x' })).allow, false);
    assert.equal(
      a.authorize({
        ...call('echo', { n: '1' }, { sub: 'a', email: 'a@x' }),
        annotations: { destructiveHint: true },
      }).allow,
      false,
    );
  }
});

test('Node 20 V8: tens of thousands of distinct decisions (optimized caller deoptimized around the Wasm call) do not crash the process', () => {
  const a = authorizer([
    'permit(principal, action == Action::"call_tool", resource == Tool::"echo");',
    ...Array.from(
      { length: 8 },
      (_, i) =>
        `permit(principal in THVGroup::"g${i}", action, resource == Tool::"t${i}") when { resource has arg_x && resource.arg_x == "v" && principal.claim_email like "*@example.com" };`,
    ),
  ]);
  let allowed = 0;
  for (let i = 0; i < 40_000; i++)
    if (a.authorize(call('echo', { message: 'hello', x: `v${i}` })).allow) allowed++;
  assert.equal(allowed, 40_000);
});
