/**
 * The API token. `SKEP_API_TOKEN` wins; otherwise the first `skep serve`
 * generates the `api-token` file (0600, atomic, exclusive) and everyone reads it back; a
 * file others could read, or that holds no token, is refused, never silently replaced. Several
 * processes creating it at once: test/integration/config/api-token.test.ts.
 */
import assert from 'node:assert/strict';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { resolveApiToken } from '../../../src/config/index.js';
import { isSkepError } from '../../../src/shared/index.js';

function paths(t: TestContext): { apiTokenFile: string } {
  const dir = mkdtempSync(join(tmpdir(), 'skep-token-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return { apiTokenFile: join(dir, 'state', 'api-token') };
}

test('SKEP_API_TOKEN wins over the file and creates nothing', (t) => {
  const p = paths(t);
  const token = 'x'.repeat(40);
  assert.deepEqual(resolveApiToken(p, { SKEP_API_TOKEN: token }, { create: true }), { token, source: 'env' });
  assert.equal(existsSync(p.apiTokenFile), false);
  assert.throws(
    () => resolveApiToken(p, { SKEP_API_TOKEN: 'short' }),
    (err: unknown) =>
      isSkepError(err) &&
      err.code === 'invalid_config' &&
      /SKEP_API_TOKEN must be at least 32 characters/.test(err.message),
  );
  assert.throws(() => resolveApiToken(p, { SKEP_API_TOKEN: `${'x'.repeat(40)} y` }), /SKEP_API_TOKEN/);
});

test('first start generates 32 random bytes (base64url) in a 0600 file in a 0700 directory; later reads agree', (t) => {
  const p = paths(t);
  assert.equal(resolveApiToken(p, {}), undefined, 'the CLI does not create it');
  const created = resolveApiToken(p, {}, { create: true });
  assert.equal(created.source, 'file');
  assert.equal(created.file, p.apiTokenFile);
  assert.match(created.token, /^[A-Za-z0-9_-]{43}$/);
  assert.equal(Buffer.from(created.token, 'base64url').length, 32);
  assert.equal(statSync(p.apiTokenFile).mode & 0o777, 0o600);
  assert.equal(statSync(dirname(p.apiTokenFile)).mode & 0o777, 0o700);
  assert.equal(readFileSync(p.apiTokenFile, 'utf8'), `${created.token}\n`);
  assert.deepEqual(resolveApiToken(p, {}), created);
  assert.deepEqual(resolveApiToken(p, {}, { create: true }), created);
  assert.deepEqual(readdirSync(dirname(p.apiTokenFile)), ['api-token'], 'no temp file left behind');
  const other = resolveApiToken(paths(t), {}, { create: true });
  assert.notEqual(other.token, created.token);
});

test('a token file others can read, a symlink, or one without a token is a clear error and stays as it is', (t) => {
  const p = paths(t);
  const { token } = resolveApiToken(p, {}, { create: true });
  chmodSync(p.apiTokenFile, 0o644);
  assert.throws(
    () => resolveApiToken(p, {}, { create: true }),
    /can be read by other users \(mode 644\).*delete/,
  );
  assert.equal(readFileSync(p.apiTokenFile, 'utf8'), `${token}\n`, 'not replaced');

  chmodSync(p.apiTokenFile, 0o600);
  writeFileSync(p.apiTokenFile, 'not a token\n');
  assert.throws(() => resolveApiToken(p, {}, { create: true }), /does not hold an API token/);
  assert.equal(readFileSync(p.apiTokenFile, 'utf8'), 'not a token\n');

  // A user's own token (at least 32 characters) is accepted, trailing newline or not.
  writeFileSync(p.apiTokenFile, 'my-own-long-token-0123456789-abcdefgh');
  assert.equal(resolveApiToken(p, {})?.token, 'my-own-long-token-0123456789-abcdefgh');

  rmSync(p.apiTokenFile);
  const elsewhere = join(dirname(p.apiTokenFile), 'elsewhere');
  writeFileSync(elsewhere, `${'y'.repeat(43)}\n`, { mode: 0o600 });
  symlinkSync(elsewhere, p.apiTokenFile);
  assert.throws(
    () => resolveApiToken(p, {}, { create: true }),
    (err: unknown) => isSkepError(err) && err.code === 'invalid_path' && /symbolic link/.test(err.message),
  );
});
