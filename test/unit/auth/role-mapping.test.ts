import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createRoleMapper, type RoleMapping } from '../../../src/dataplane/middleware/auth/role-mapping.js';
import { definedOnly } from '../../../src/shared/index.js';

const arn = (name: string) => `arn:aws:iam::123456789012:role/${name}`;

const cases: Array<{
  title: string;
  mappings: RoleMapping[];
  fallback?: string;
  claims: Record<string, unknown>;
  expect: string | undefined;
}> = [
  {
    title: 'the lowest priority among matches wins',
    mappings: [
      { claim: 'eng', roleArn: arn('low'), priority: 10 },
      { claim: 'admins', roleArn: arn('high'), priority: 1 },
    ],
    claims: { groups: ['eng', 'admins'] },
    expect: arn('high'),
  },
  {
    title: 'ties keep configuration order (stable)',
    mappings: [
      { claim: 'eng', roleArn: arn('first'), priority: 3 },
      { claim: 'eng', roleArn: arn('second'), priority: 3 },
    ],
    claims: { groups: ['eng'] },
    expect: arn('first'),
  },
  {
    title: 'an omitted priority ranks after every explicit one',
    mappings: [
      { claim: 'eng', roleArn: arn('none') },
      { claim: 'eng', roleArn: arn('explicit'), priority: 1000 },
    ],
    claims: { groups: ['eng'] },
    expect: arn('explicit'),
  },
  {
    title: 'omitted priorities tie: configuration order',
    mappings: [
      { claim: 'x', roleArn: arn('a') },
      { claim: 'eng', roleArn: arn('b') },
      { claim: 'eng', roleArn: arn('c') },
    ],
    claims: { groups: ['eng'] },
    expect: arn('b'),
  },
  {
    title: 'CEL matcher over the claims',
    mappings: [
      { matcher: 'claims.email.endsWith("@example.com") && claims.level >= 3', roleArn: arn('cel') },
    ],
    claims: { email: 'a@example.com', level: 3 },
    expect: arn('cel'),
  },
  {
    title: 'CEL error (missing claim) is no match; the next mapping is used',
    mappings: [
      { matcher: 'claims.department == "ops"', roleArn: arn('broken'), priority: 0 },
      { claim: 'eng', roleArn: arn('ok'), priority: 1 },
    ],
    claims: { groups: ['eng'] },
    expect: arn('ok'),
  },
  {
    title: 'CEL type error (string compared to int) is no match',
    mappings: [{ matcher: 'claims.level > 2', roleArn: arn('typed') }],
    fallback: arn('fallback'),
    claims: { level: 'high' },
    expect: arn('fallback'),
  },
  {
    title: 'claim membership needs a list claim; a string claim is no match',
    mappings: [{ claim: 'eng', roleArn: arn('list') }],
    claims: { groups: 'eng' },
    expect: undefined,
  },
  {
    title: 'no match: fallbackRoleArn',
    mappings: [{ claim: 'admins', roleArn: arn('admin') }],
    fallback: arn('fallback'),
    claims: { groups: ['eng'] },
    expect: arn('fallback'),
  },
  {
    title: 'no match and no fallback: undefined (the middleware answers 403)',
    mappings: [{ claim: 'admins', roleArn: arn('admin') }],
    claims: { groups: ['eng'] },
    expect: undefined,
  },
  {
    title: 'only a fallback: always the fallback',
    mappings: [],
    fallback: arn('only'),
    claims: {},
    expect: arn('only'),
  },
];

for (const c of cases) {
  test(`role mapping: ${c.title}`, () => {
    const mapper = createRoleMapper({
      roleMappings: c.mappings,
      ...definedOnly({ fallbackRoleArn: c.fallback }),
    });
    assert.equal(mapper.select(c.claims), c.expect);
  });
}

test('role mapping: role_claim selects the list claim', () => {
  const mapper = createRoleMapper({ roleClaim: 'roles', roleMappings: [{ claim: 'x', roleArn: arn('r') }] });
  assert.equal(mapper.select({ roles: ['x'] }), arn('r'));
  assert.equal(mapper.select({ groups: ['x'] }), undefined);
});

test('role mapping: configuration errors are invalid_config at build time', () => {
  const bad: Array<[Parameters<typeof createRoleMapper>[0], RegExp]> = [
    [{}, /fallback_role_arn or role_mappings/],
    [{ fallbackRoleArn: 'arn:aws:iam::1:role/x' }, /not an IAM role ARN/],
    [{ roleMappings: [{ roleArn: arn('a') }] }, /exactly one of claim or matcher/],
    [
      { roleMappings: [{ claim: 'a', matcher: 'true', roleArn: arn('a') }] },
      /exactly one of claim or matcher/,
    ],
    [{ roleMappings: [{ matcher: 'claims.(', roleArn: arn('a') }] }, /does not compile/],
    [{ roleMappings: [{ matcher: '"text"', roleArn: arn('a') }] }, /must yield a bool/],
    [{ roleMappings: [{ claim: 'a', roleArn: arn('a'), priority: -1 }] }, /at least 0/],
  ];
  for (const [options, message] of bad) {
    assert.throws(
      () => createRoleMapper(options),
      (err: Error & { code?: string }) => err.code === 'invalid_config' && message.test(err.message),
    );
  }
});
