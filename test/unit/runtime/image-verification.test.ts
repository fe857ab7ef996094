/**
 * The image check's outcomes that need no registry: keyless-only provenance without a trusted
 * root is `unverifiable` (refused under enforce, reported under warn, never passed), a bad public
 * key or trusted root, or a trusted root without an identity policy, is refused naming the field,
 * and an image reference that cannot be read is `unverifiable`.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'node:test';
import { verifyImage } from '../../../src/dataplane/runtime/docker/image-verification.js';
import { parseImageRef } from '../../../src/protocol/oci-signature-registry.js';
import { isSkepError } from '../../../src/shared/index.js';

const keyless = {
  signer_identity: '/.github/workflows/release.yml',
  cert_issuer: 'https://token.actions.githubusercontent.com',
};

test('keyless-only provenance: enforce refuses, warn runs with the reason', async () => {
  await assert.rejects(
    verifyImage('ghcr.io/acme/app:1', { policy: 'enforce', ...keyless }),
    (err: unknown) =>
      isSkepError(err) &&
      err.code === 'image_verification_failed' &&
      /keyless signatures .* need a Sigstore trusted root: give image_verification\.trusted_root/.test(
        err.message,
      ),
  );
  const warned = await verifyImage('ghcr.io/acme/app:1', { policy: 'warn', ...keyless });
  assert.equal(warned.result.status, 'unverifiable');
  assert.equal(warned.image, 'ghcr.io/acme/app:1', 'an unverified image is not pinned');
  const noKey = await verifyImage('ghcr.io/acme/app:1', { policy: 'warn' });
  assert.match(noKey.result.message, /no public key or trusted root to verify against/);
});

test('a bad public key is invalid_config naming it; an unreadable reference is unverifiable', async () => {
  await assert.rejects(
    verifyImage('ghcr.io/acme/app:1', { policy: 'warn', public_keys: ['not a key'] }),
    (err: unknown) =>
      isSkepError(err) && err.code === 'invalid_config' && /public_keys\[0\]/.test(err.message),
  );
  const pub = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({
    type: 'spki',
    format: 'pem',
  }) as string;
  const bad = await verifyImage('Bad/Name:1', { policy: 'warn', public_keys: [pub] });
  assert.equal(bad.result.status, 'unverifiable');
  assert.match(bad.result.message, /cannot read it from its registry: .*bad repository name/);
});

test('keyless: an unreadable trusted root, or one without an identity policy, is invalid_config naming the field', async () => {
  await assert.rejects(
    verifyImage('ghcr.io/acme/app:1', {
      policy: 'warn',
      ...keyless,
      trusted_root: '/nonexistent/trusted_root.json',
    }),
    (err: unknown) =>
      isSkepError(err) &&
      err.code === 'invalid_config' &&
      /image_verification\.trusted_root: cannot read "\/nonexistent\/trusted_root\.json": ENOENT/.test(
        err.message,
      ),
  );
  await assert.rejects(
    verifyImage('ghcr.io/acme/app:1', {
      policy: 'warn',
      signer_identity: keyless.signer_identity,
      signer_identity_regexp: '.*',
      cert_issuer: keyless.cert_issuer,
      trusted_root: '/nonexistent/trusted_root.json',
    }),
    (err: unknown) =>
      isSkepError(err) &&
      err.code === 'invalid_config' &&
      /exactly one of signer_identity and signer_identity_regexp/.test(err.message),
  );
});

test('image references normalize as docker does', () => {
  assert.deepEqual(parseImageRef('nginx'), {
    registry: 'docker.io',
    repository: 'library/nginx',
    tag: 'latest',
  });
  assert.deepEqual(parseImageRef('localhost:5000/a/b:2'), {
    registry: 'localhost:5000',
    repository: 'a/b',
    tag: '2',
  });
  const digest = `sha256:${'c'.repeat(64)}`;
  assert.deepEqual(parseImageRef(`ghcr.io/x/y:1@${digest}`), {
    registry: 'ghcr.io',
    repository: 'x/y',
    digest,
  });
});
