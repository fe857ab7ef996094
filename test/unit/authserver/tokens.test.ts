/** Opaque HMAC tokens, field mapping helpers and the memory storage's single-use rules. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { MemoryStorage } from '../../../src/authserver/index.js';
import { OpaqueTokens } from '../../../src/authserver/opaque-token.js';
import { firstField, readPath, syntheticSubject } from '../../../src/authserver/upstream.js';

test('opaque tokens: signature verifies with current and older secrets; not after removal or tampering', () => {
  const oldSecret = randomBytes(32);
  const newSecret = randomBytes(32);
  const before = new OpaqueTokens([oldSecret]);
  const { token, signature } = before.mint('skr');
  assert.equal(before.verify('skr', token), signature);
  assert.equal(
    new OpaqueTokens([newSecret, oldSecret]).verify('skr', token),
    signature,
    'older secret verifies',
  );
  assert.equal(
    new OpaqueTokens([newSecret]).verify('skr', token),
    undefined,
    'removed secret no longer verifies',
  );
  assert.equal(before.verify('skc', token), undefined, 'a refresh token is not a code');
  assert.equal(before.verify('skr', `${token.slice(0, -2)}xx`), undefined);
});

test('field_mapping: dot paths, first non-empty field wins; synthesis subject is tk- + 32 hex', () => {
  const doc = { data: { id: 42, login: '' }, name: 'N', emails: [{ value: 'a@b' }] };
  assert.equal(readPath(doc, 'data.id'), 42);
  assert.equal(readPath(doc, 'emails.0.value'), 'a@b');
  assert.equal(firstField(doc, ['data.login', 'data.id']), '42');
  assert.equal(firstField(doc, ['missing', 'name']), 'N');
  assert.equal(firstField(doc, ['missing']), undefined);
  assert.match(syntheticSubject('token'), /^tk-[0-9a-f]{32}$/);
  assert.equal(syntheticSubject('token'), syntheticSubject('token'));
});

test('memory storage: codes and refresh tokens are single-use and expire with their TTL', async (t) => {
  let now = 1_000_000;
  const s = new MemoryStorage(() => now);
  t.after(() => s.close());
  const grant = { clientId: 'c', scopes: ['openid'], audience: ['https://r'], sessionId: 's1', subject: 'u' };
  await s.saveAuthCode('sig', { ...grant, redirectUri: 'https://cb', codeChallenge: 'x' }, 600);
  assert.equal((await s.consumeAuthCode('sig', 1800))?.reused, false);
  assert.equal((await s.consumeAuthCode('sig', 1800))?.reused, true);
  await s.saveRefreshToken('r1', grant, 60);
  assert.equal((await s.consumeRefreshToken('r1'))?.reused, false);
  assert.equal((await s.consumeRefreshToken('r1'))?.reused, true);
  await s.savePending('st', { ...grant, clientId: 'c' } as never, 600);
  assert.ok(await s.takePending('st'));
  assert.equal(await s.takePending('st'), undefined, 'pending entries are single use');
  now += 61_000;
  assert.equal(await s.getRefreshToken('r1'), undefined, 'expired');
  assert.equal(await s.resolveUser('idp', 'alice'), await s.resolveUser('idp', 'alice'));
  assert.notEqual(await s.resolveUser('idp', 'alice'), await s.resolveUser('idp2', 'alice'));
});
