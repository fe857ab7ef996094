import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EnvironmentProvider, environmentVariableFor } from '../../../src/secrets/environment-provider.js';
import { OnePasswordProvider } from '../../../src/secrets/onepassword-provider.js';
import { SkepError } from '../../../src/shared/index.js';
import { fakeOp } from './fakes.js';

const code = (c: string) => (err: unknown) => err instanceof SkepError && err.code === c;

test('environment provider reads SKEP_SECRET_<name>, exact or normalised; empty counts as missing', async () => {
  const provider = new EnvironmentProvider({
    SKEP_SECRET_GITHUB_TOKEN: 'from-normalised',
    'SKEP_SECRET_exact-name': 'from-exact',
    SKEP_SECRET_EMPTY: '',
  });
  assert.equal(environmentVariableFor('github-token'), 'SKEP_SECRET_GITHUB_TOKEN');
  assert.equal(await provider.get('github-token'), 'from-normalised');
  assert.equal(await provider.get('exact-name'), 'from-exact');
  assert.equal(await provider.get('empty'), undefined);
  assert.equal(await provider.get('absent'), undefined);
});

test('environment provider is read-only and refuses to list (secrets_read_only → 405)', async () => {
  const provider = new EnvironmentProvider({});
  assert.deepEqual(provider.capabilities, {
    can_read: true,
    can_write: false,
    can_delete: false,
    can_list: false,
    can_cleanup: false,
  });
  await assert.rejects(provider.list(), code('secrets_read_only'));
  await assert.rejects(provider.create(), code('secrets_read_only'));
  await assert.rejects(provider.update(), code('secrets_read_only'));
  await assert.rejects(provider.delete(), code('secrets_read_only'));
});

test('1password provider without the op CLI: a clear error that says to install it', async () => {
  const provider = new OnePasswordProvider({ PATH: '/nonexistent-dir' });
  await assert.rejects(provider.get('op://vault/item/field'), (err: unknown) => {
    assert.ok(err instanceof SkepError);
    assert.equal(err.code, 'unavailable');
    assert.match(err.message, /1Password CLI \(`op`\) is not installed/);
    return true;
  });
  await assert.rejects(provider.verify(), code('unavailable'));
});

test('1password provider through op (a fake op script on PATH stands in for the real CLI)', async (t) => {
  const dir = fakeOp(t);
  const provider = new OnePasswordProvider({ PATH: dir, OP_SERVICE_ACCOUNT_TOKEN: 'fake-token' });
  await provider.verify();
  assert.equal(await provider.get('op://vlt1/itm1/fld1'), 'ghp_from_1password');
  assert.equal(await provider.get('op://Private/GitHub/user'), 'octocat');
  assert.equal(await provider.get('op://vlt1/itm1/nope'), undefined);
  assert.deepEqual(await provider.list(), [
    { key: 'op://vlt1/itm1/fld1', description: 'Private :: GitHub :: token' },
    { key: 'op://vlt1/itm1/fld2', description: 'Private :: GitHub :: user' },
  ]);
  await assert.rejects(provider.get('plain-name'), code('bad_request'));
  await assert.rejects(provider.create(), code('secrets_read_only'));
  await assert.rejects(provider.delete(), code('secrets_read_only'));
  // Signed out: op's own error line is passed on (it never holds a value).
  const signedOut = new OnePasswordProvider({ PATH: dir });
  await assert.rejects(signedOut.verify(), (err: unknown) => {
    assert.ok(err instanceof SkepError);
    assert.match(err.message, /not currently signed in/);
    return true;
  });
});
