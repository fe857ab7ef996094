import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseSecretReference, resolveSecretReferences } from '../../../src/secrets/index.js';
import { SkepError } from '../../../src/shared/index.js';

test('"<name>,target=<ENV>" parses; the name cannot hold a comma', () => {
  assert.deepEqual(parseSecretReference('github-token,target=GITHUB_PERSONAL_ACCESS_TOKEN'), {
    name: 'github-token',
    target: 'GITHUB_PERSONAL_ACCESS_TOKEN',
  });
  assert.deepEqual(parseSecretReference('op://v/i/f,target=X'), { name: 'op://v/i/f', target: 'X' });
  for (const bad of [
    'no-target',
    'a,b,target=X',
    ',target=X',
    'a,target=',
    'a,target=1BAD',
    'a,target=A-B',
  ]) {
    assert.throws(
      () => parseSecretReference(bad),
      (e: unknown) => e instanceof SkepError && e.code === 'invalid_reference',
      bad,
    );
  }
});

test('resolution maps targets to values; missing secrets are named (not valued) in one error', async () => {
  const values: Record<string, string> = { a: 'value-a', b: 'value-b' };
  const lookup = async (name: string) => values[name];
  assert.deepEqual(await resolveSecretReferences(['a,target=A', { name: 'b', target: 'B' }], lookup), {
    A: 'value-a',
    B: 'value-b',
  });
  await assert.rejects(
    resolveSecretReferences(['a,target=A', 'x,target=X', 'y,target=Y'], lookup),
    (err: unknown) => {
      assert.ok(err instanceof SkepError);
      assert.equal(err.code, 'secret_not_found');
      assert.match(err.message, /x, y/);
      assert.ok(!err.message.includes('value-a'));
      return true;
    },
  );
});
