import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { EncryptedProvider } from '../../../src/secrets/index.js';
import { SkepError } from '../../../src/shared/index.js';

function tempStore(t: TestContext, password = 'correct horse battery') {
  const dir = mkdtempSync(join(tmpdir(), 'skep-secrets-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'secrets.enc');
  const open = (pw: string) => {
    const provider = new EncryptedProvider({ file, password: async () => pw });
    t.after(() => provider.close());
    return provider;
  };
  return { dir, file, provider: open(password), open };
}

const code = (c: string) => (err: unknown) => err instanceof SkepError && err.code === c;

test('round trip: create, get, list, update, delete; file is 0600 and holds no plaintext', async (t) => {
  const { file, provider, open } = tempStore(t);
  assert.equal(await provider.get('missing'), undefined);
  await provider.create('github-token', 'ghp_plain_value_1');
  await provider.create('api key', 'välue with ünïcode ✓');
  assert.equal(await provider.get('github-token'), 'ghp_plain_value_1');
  assert.deepEqual(await provider.list(), [{ key: 'api key' }, { key: 'github-token' }]);
  await provider.update('github-token', 'ghp_plain_value_2');
  // A second instance (fresh key derivation) reads what the first wrote.
  const other = open('correct horse battery');
  assert.equal(await other.get('github-token'), 'ghp_plain_value_2');
  assert.equal(await other.get('api key'), 'välue with ünïcode ✓');
  await other.delete('api key');
  assert.deepEqual(await provider.list(), [{ key: 'github-token' }]);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  const raw = readFileSync(file, 'utf8');
  assert.ok(!raw.includes('ghp_plain_value'), 'no plaintext value in the file');
  assert.ok(!raw.includes('github-token'), 'no plaintext name in the file');
  const envelope = JSON.parse(raw) as { kdf: { name: string; N: number } };
  assert.equal(envelope.kdf.name, 'scrypt');
});

test('create of an existing key is secret_exists; update/delete of a missing key is secret_not_found', async (t) => {
  const { provider } = tempStore(t);
  await provider.create('a', '1');
  await assert.rejects(provider.create('a', '2'), code('secret_exists'));
  await assert.rejects(provider.update('b', '2'), code('secret_not_found'));
  await assert.rejects(provider.delete('b'), code('secret_not_found'));
  assert.equal(await provider.get('a'), '1');
});

test('wrong password: a clear secrets_locked error, and the file is not changed', async (t) => {
  const { file, provider, open } = tempStore(t);
  await provider.create('token', 'value-1');
  const before = readFileSync(file);
  const wrong = open('not the password');
  await assert.rejects(wrong.get('token'), (err: unknown) => {
    assert.ok(err instanceof SkepError);
    assert.equal(err.code, 'secrets_locked');
    assert.equal(err.status, 400);
    assert.match(err.message, /wrong password/);
    assert.ok(!err.message.includes('value-1'));
    return true;
  });
  await assert.rejects(wrong.create('x', 'y'), code('secrets_locked'));
  await assert.rejects(wrong.delete('token'), code('secrets_locked'));
  await assert.rejects(wrong.changePassword('a whole new password'), code('secrets_locked'));
  assert.deepEqual(readFileSync(file), before);
  assert.equal(await provider.get('token'), 'value-1');
});

test('tampered ciphertext: GCM authentication failure is reported as secrets_corrupt, nothing is overwritten', async (t) => {
  const { file, provider } = tempStore(t);
  await provider.create('token', 'value-1');
  const envelope = JSON.parse(readFileSync(file, 'utf8')) as { ciphertext: string };
  const bytes = Buffer.from(envelope.ciphertext, 'base64');
  bytes[0] = (bytes[0] ?? 0) ^ 0x01;
  envelope.ciphertext = bytes.toString('base64');
  writeFileSync(file, JSON.stringify(envelope));
  const tampered = readFileSync(file);
  await assert.rejects(provider.get('token'), (err: unknown) => {
    assert.ok(err instanceof SkepError);
    assert.equal(err.code, 'secrets_corrupt');
    assert.match(err.message, /integrity check \(AES-GCM authentication\)/);
    return true;
  });
  await assert.rejects(provider.create('new', 'v'), code('secrets_corrupt'));
  await assert.rejects(provider.update('token', 'v2'), code('secrets_corrupt'));
  await assert.rejects(provider.initialize(), code('secrets_corrupt'));
  await assert.rejects(provider.changePassword('another password'), code('secrets_corrupt'));
  assert.deepEqual(readFileSync(file), tampered, 'the tampered file is left as it was');
});

test('tampered header (KDF cost lowered) or tag is detected; garbage is not a secrets file', async (t) => {
  const { file, provider } = tempStore(t);
  await provider.create('token', 'value-1');
  const good = readFileSync(file, 'utf8');
  const env = JSON.parse(good) as { kdf: { N: number }; tag: string };
  // Lowering the cost changes the derived key: reported as a failed open, never decrypted.
  writeFileSync(file, JSON.stringify({ ...env, kdf: { ...env.kdf, N: 1024 } }));
  await assert.rejects(provider.get('token'), code('secrets_locked'));
  // A crafted, absurd cost is refused before any key derivation.
  writeFileSync(file, JSON.stringify({ ...env, kdf: { ...env.kdf, N: 2 ** 30 } }));
  await assert.rejects(provider.get('token'), code('secrets_corrupt'));
  writeFileSync(file, JSON.stringify({ ...env, tag: Buffer.alloc(16).toString('base64') }));
  await assert.rejects(provider.get('token'), code('secrets_corrupt'));
  writeFileSync(file, 'not json at all');
  await assert.rejects(provider.get('token'), code('secrets_corrupt'));
  writeFileSync(file, good);
  assert.equal(await provider.get('token'), 'value-1');
});

test('changing the password re-encrypts everything under a new salt; the old password stops working', async (t) => {
  const { file, provider, open } = tempStore(t);
  for (let i = 0; i < 5; i++) await provider.create(`k${i}`, `v${i}`);
  const saltBefore = (JSON.parse(readFileSync(file, 'utf8')) as { kdf: { salt: string } }).kdf.salt;
  assert.deepEqual(await provider.changePassword('the new password'), { count: 5 });
  const saltAfter = (JSON.parse(readFileSync(file, 'utf8')) as { kdf: { salt: string } }).kdf.salt;
  assert.notEqual(saltAfter, saltBefore);
  await assert.rejects(open('correct horse battery').get('k0'), code('secrets_locked'));
  const reopened = open('the new password');
  for (let i = 0; i < 5; i++) assert.equal(await reopened.get(`k${i}`), `v${i}`);
});

test('an empty file is an empty store; initialize creates it bound to the password', async (t) => {
  const { file, provider, open } = tempStore(t);
  writeFileSync(file, '');
  assert.deepEqual(await provider.list(), []);
  assert.deepEqual(await provider.initialize(), { created: true, count: 0 });
  assert.deepEqual(await provider.initialize(), { created: false, count: 0 });
  await assert.rejects(open('some other password').initialize(), code('secrets_locked'));
});

test('temp files left by a killed writer are swept by the next write', async (t) => {
  const { dir, provider } = tempStore(t);
  await provider.create('a', '1');
  writeFileSync(join(dir, '.secrets.enc.tmp-0123456789ab'), 'partial');
  await provider.create('b', '2');
  assert.deepEqual(
    readdirSync(dir).filter((f) => f.includes('.tmp-')),
    [],
  );
});

test('concurrent writers in one process never lose an update', async (t) => {
  const { provider, open } = tempStore(t);
  const second = open('correct horse battery');
  await Promise.all(
    Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? provider : second).create(`key-${i}`, `value-${i}`)),
  );
  const keys = await provider.list();
  assert.equal(keys.length, 40);
});
