/**
 * A registry entry's provenance becomes the workload's `image_verification` (policy `warn`, the
 * reference's default): its public key (a Skep extension of the provenance) and its keyless
 * identity are carried; package entries (npx://) and entries without provenance get none.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { configFromCreate } from '../../../src/workloads/config-builder.js';

const PEM = '-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n';

test('registry provenance → image_verification (warn) for container images only', () => {
  const signed = configFromCreate(
    { server: 'fetch' },
    {
      image: 'ghcr.io/example/fetch:1.0',
      provenance: {
        public_key: PEM,
        signer_identity: '/.github/workflows/release.yml',
        cert_issuer: 'https://token.actions.githubusercontent.com',
        repository_uri: 'https://github.com/example/fetch',
      },
    },
  );
  assert.deepEqual(signed.image_verification, {
    policy: 'warn',
    public_keys: [PEM],
    signer_identity: '/.github/workflows/release.yml',
    cert_issuer: 'https://token.actions.githubusercontent.com',
    repository_uri: 'https://github.com/example/fetch',
  });
  const keyless = configFromCreate(
    { server: 'k' },
    { image: 'ghcr.io/example/k:1', provenance: { signer_identity: 'x', cert_issuer: 'y' } },
  );
  assert.deepEqual(keyless.image_verification, { policy: 'warn', signer_identity: 'x', cert_issuer: 'y' });
  const pkg = configFromCreate({ server: 'p' }, { image: 'npx://pkg@1', provenance: { public_key: PEM } });
  assert.equal(pkg.image_verification, undefined);
  const plain = configFromCreate({ server: 'q' }, { image: 'ghcr.io/example/q:1' });
  assert.equal(plain.image_verification, undefined);
});
