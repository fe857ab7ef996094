/**
 * Keyless cosign signatures (Fulcio certificate + Rekor SET in the `.sig` layer's annotations)
 * verified against a trusted root (integration tier: the CA is made with the openssl CLI), on an in-memory signature store and a CA, log key and
 * trusted root made by the test (`test/helpers/sigstore-fixture.ts`). Each check of the module
 * comment has a case that fails it: identity, regexp, issuer, source repository, untrusted CA,
 * forged log entry, signing time outside the certificate, another digest, no trusted root.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sha256, type SignatureStore, verifyArtifact } from '../../../src/protocol/oci-signature.js';
import {
  checkIdentityPolicy,
  type IdentityPolicy,
  keylessCheck,
  loadTrustedRoot,
  verifyKeyless,
} from '../../../src/protocol/sigstore-verify.js';
import { createSigstoreFixture, type SigstoreFixture } from '../../helpers/sigstore-fixture.js';

function memoryStore(): SignatureStore {
  const blobs = new Map<string, Buffer>();
  const manifests = new Map<string, Buffer>();
  return {
    findManifest: async (tag) => {
      const bytes = manifests.get(tag);
      return bytes === undefined ? undefined : { bytes, digest: sha256(bytes) };
    },
    getBlob: async (digest) => blobs.get(digest)!,
    putBlob: async (data, digest) => void blobs.set(digest, data),
    putManifest: async (tag, bytes) => void manifests.set(tag, bytes),
  };
}

const DIGEST = `sha256:${'a'.repeat(64)}`;
const OTHER = `sha256:${'b'.repeat(64)}`;
const ISSUER = 'https://token.actions.example';
const ALICE = 'alice@example.com';
let fx: SigstoreFixture;
let other: SigstoreFixture;
before(() => {
  fx = createSigstoreFixture();
  other = createSigstoreFixture();
});
after(() => {
  fx.close();
  other.close();
});

const check = (identity: IdentityPolicy, root = fx.trustedRootJson) =>
  keylessCheck(loadTrustedRoot(root), [identity]);

async function signed(
  options: Parameters<SigstoreFixture['sign']>[4] = {},
  leaf = fx.leaf({ identity: ALICE, issuer: ISSUER }),
) {
  const store = memoryStore();
  await fx.sign(store, 'reg.example/acme/app', DIGEST, leaf, options);
  return store;
}

test('Sigstore keyless: a Fulcio-style certificate chained to the trusted root, logged with a valid SET, verifies', async () => {
  const store = await signed();
  const outcome = await verifyArtifact(
    store,
    DIGEST,
    [],
    check({ signerIdentity: ALICE, certIssuer: ISSUER }),
  );
  assert.deepEqual(outcome, {
    status: 'verified',
    signer: ALICE,
    issuer: ISSUER,
    dockerReference: 'reg.example/acme/app',
  });
});

test('cosign --certificate-identity-regexp: matched against the whole identity', async () => {
  const leaf = fx.leaf({
    identity: 'https://github.com/acme/app/.github/workflows/release.yml@refs/tags/v1',
    issuer: ISSUER,
  });
  const store = await signed({}, leaf);
  const ok = await verifyArtifact(
    store,
    DIGEST,
    [],
    check({ signerIdentityRegexp: 'https://github\\.com/acme/.*', certIssuer: ISSUER }),
  );
  assert.equal(ok.status, 'verified');
  // Unanchored, "acme/app" would be found inside the identity; anchored, it is not the identity.
  const partial = await verifyArtifact(
    store,
    DIGEST,
    [],
    check({ signerIdentityRegexp: 'acme/app', certIssuer: ISSUER }),
  );
  assert.equal(partial.status, 'invalid');
  assert.match(partial.status === 'invalid' ? partial.reason : '', /does not match acme\/app/);
});

test('policy: another identity, another issuer or another source repository is refused', async () => {
  const leaf = fx.leaf({ identity: ALICE, issuer: ISSUER, repositoryUri: 'https://github.com/acme/app' });
  const store = await signed({}, leaf);
  const cases: [IdentityPolicy, RegExp][] = [
    [
      { signerIdentity: 'mallory@example.com', certIssuer: ISSUER },
      /identity is alice@example\.com, not mallory@example\.com/,
    ],
    [
      { signerIdentity: ALICE, certIssuer: 'https://accounts.example' },
      /issuer is https:\/\/token\.actions\.example, not https:\/\/accounts\.example/,
    ],
    [
      { signerIdentity: ALICE, certIssuer: ISSUER, repositoryUri: 'https://github.com/evil/app' },
      /source repository is https:\/\/github\.com\/acme\/app, not https:\/\/github\.com\/evil\/app/,
    ],
  ];
  for (const [identity, reason] of cases) {
    const outcome = await verifyArtifact(store, DIGEST, [], check(identity));
    assert.equal(outcome.status, 'invalid');
    assert.match(outcome.status === 'invalid' ? outcome.reason : '', reason);
  }
  const repoOk = await verifyArtifact(
    store,
    DIGEST,
    [],
    check({ signerIdentity: ALICE, certIssuer: ISSUER, repositoryUri: 'https://github.com/acme/app' }),
  );
  assert.equal(repoOk.status, 'verified');
});

test('trusted root: a certificate from a CA the root does not name is refused', async () => {
  const store = memoryStore();
  // Signed by the other fixture's CA, logged in this fixture's log.
  const foreign = other.leaf({ identity: ALICE, issuer: ISSUER });
  await fx.sign(store, 'reg.example/acme/app', DIGEST, foreign);
  const outcome = await verifyArtifact(
    store,
    DIGEST,
    [],
    check({ signerIdentity: ALICE, certIssuer: ISSUER }),
  );
  assert.equal(outcome.status, 'invalid');
  assert.match(outcome.status === 'invalid' ? outcome.reason : '', /certificate chain/i);
});

test("transparency log: a SET not signed by the trusted root's log key is refused", async () => {
  const forger = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey;
  const store = await signed({ logKey: forger });
  const outcome = await verifyArtifact(
    store,
    DIGEST,
    [],
    check({ signerIdentity: ALICE, certIssuer: ISSUER }),
  );
  assert.equal(outcome.status, 'invalid');
  assert.match(outcome.status === 'invalid' ? outcome.reason : '', /inclusion promise/);
});

test('signing time: a log entry outside the certificate validity is refused', async () => {
  const store = await signed({ integratedTime: Math.floor(Date.now() / 1000) + 3600 });
  const outcome = await verifyArtifact(
    store,
    DIGEST,
    [],
    check({ signerIdentity: ALICE, certIssuer: ISSUER }),
  );
  assert.equal(outcome.status, 'invalid');
  assert.match(outcome.status === 'invalid' ? outcome.reason : '', /not valid or expired|certificate/i);
});

test('tampered: a keyless signature copied to another digest names the other digest', async () => {
  const store = await signed();
  const sig = await store.findManifest(`sha256-${'a'.repeat(64)}.sig`);
  await store.putManifest(`sha256-${'b'.repeat(64)}.sig`, sig!.bytes, '');
  const outcome = await verifyArtifact(
    store,
    OTHER,
    [],
    check({ signerIdentity: ALICE, certIssuer: ISSUER }),
  );
  assert.equal(outcome.status, 'invalid');
  assert.match(outcome.status === 'invalid' ? outcome.reason : '', /names another digest/);
});

test('tampered: a signature that is not the logged one is refused', async () => {
  const leaf = fx.leaf({ identity: ALICE, issuer: ISSUER });
  const annotate = fx.annotate(leaf);
  const payload = Buffer.from('{"critical":{}}');
  const annotations = await annotate(payload, Buffer.from('not the signature').toString('base64'));
  const outcome = verifyKeyless(
    { trust: loadTrustedRoot(fx.trustedRootJson), identity: { signerIdentity: ALICE, certIssuer: ISSUER } },
    payload,
    Buffer.from('not the signature').toString('base64'),
    annotations,
  );
  assert.equal(outcome.ok, false);
  assert.match(outcome.ok ? '' : outcome.reason, /does not verify/);
});

test('transparency log: a certificate other than the logged one (same key, other identity) is refused', async () => {
  const leaf = fx.leaf({ identity: 'mallory@example.com', issuer: ISSUER });
  // A second certificate for the same key, naming alice: signature and SET stay valid.
  const { createPublicKey } = await import('node:crypto');
  const swapped = fx.certify(
    createPublicKey(leaf.key).export({ type: 'spki', format: 'pem' }) as string,
    ALICE,
    ISSUER,
  );
  const annotate = fx.annotate(leaf);
  const store = memoryStore();
  const { signArtifact } = await import('../../../src/protocol/oci-signature.js');
  await signArtifact(store, 'reg.example/acme/app', DIGEST, leaf.key, async (payload, signature) => ({
    ...(await annotate(payload, signature)),
    'dev.sigstore.cosign/certificate': swapped,
  }));
  const outcome = await verifyArtifact(
    store,
    DIGEST,
    [],
    check({ signerIdentity: ALICE, certIssuer: ISSUER }),
  );
  assert.equal(outcome.status, 'invalid');
  assert.match(
    outcome.status === 'invalid' ? outcome.reason : '',
    /the certificate is not the one in the transparency log entry/,
  );
});

test('Sigstore bundle v0.3 (cosign --new-bundle-format, referrers tag scheme): DSSE statement, inclusion proof and SET verify', async () => {
  const store = memoryStore();
  await fx.signBundle(store, 'reg.example/acme/app', DIGEST, fx.leaf({ identity: ALICE, issuer: ISSUER }));
  const outcome = await verifyArtifact(
    store,
    DIGEST,
    [],
    check({ signerIdentity: ALICE, certIssuer: ISSUER }),
  );
  assert.equal(outcome.status, 'verified', JSON.stringify(outcome));
  assert.equal(outcome.status === 'verified' ? outcome.issuer : '', ISSUER);
  const other = await verifyArtifact(
    store,
    DIGEST,
    [],
    check({ signerIdentity: 'bob@example.com', certIssuer: ISSUER }),
  );
  assert.match(
    other.status === 'invalid' ? other.reason : '',
    /identity is alice@example\.com, not bob@example\.com/,
  );
  // Without a keyless policy the bundle is not looked at: nothing trusted can be found.
  assert.equal((await verifyArtifact(store, DIGEST, [])).status, 'unsigned');
});

test('OCI 1.1 referrers API: a registry that has it is asked first; the tag scheme is not needed', async () => {
  const tagged = memoryStore();
  await fx.signBundle(tagged, 'reg.example/acme/app', DIGEST, fx.leaf({ identity: ALICE, issuer: ISSUER }));
  const tag = `sha256-${'a'.repeat(64)}`;
  const index = (await tagged.findManifest(tag))!.bytes;
  // The same store, answering the referrers API and without the fallback tag.
  const asked: string[] = [];
  const api: SignatureStore = {
    ...tagged,
    findManifest: (t) => (t === tag ? Promise.resolve(undefined) : tagged.findManifest(t)),
    referrers: (d) => {
      asked.push(d);
      return Promise.resolve(index);
    },
  };
  const outcome = await verifyArtifact(api, DIGEST, [], check({ signerIdentity: ALICE, certIssuer: ISSUER }));
  assert.equal(outcome.status, 'verified', JSON.stringify(outcome));
  assert.deepEqual(asked, [DIGEST]);
});

test('Sigstore bundle: a statement naming another digest is refused', async () => {
  const store = memoryStore();
  await fx.signBundle(store, 'reg.example/acme/app', DIGEST, fx.leaf({ identity: ALICE, issuer: ISSUER }), {
    subjectDigest: OTHER,
  });
  const outcome = await verifyArtifact(
    store,
    DIGEST,
    [],
    check({ signerIdentity: ALICE, certIssuer: ISSUER }),
  );
  assert.equal(outcome.status, 'invalid');
  assert.match(outcome.status === 'invalid' ? outcome.reason : '', /statement names another digest/);
});

test('no trusted root: a keyless signature is not trusted, and says so', async () => {
  const store = await signed();
  const outcome = await verifyArtifact(store, DIGEST, []);
  assert.equal(outcome.status, 'invalid');
  assert.match(outcome.status === 'invalid' ? outcome.reason : '', /no trusted root is configured/);
});

test('trusted root and identity policy: bad input is refused by name', () => {
  assert.throws(() => loadTrustedRoot('{'), /not a Sigstore trusted_root\.json/);
  assert.throws(
    () => loadTrustedRoot('{"tlogs":[],"certificateAuthorities":[]}'),
    /no certificate authority/,
  );
  assert.throws(
    () => checkIdentityPolicy({ certIssuer: ISSUER }),
    /exactly one of signer_identity and signer_identity_regexp/,
  );
  assert.throws(
    () => checkIdentityPolicy({ signerIdentityRegexp: '(', certIssuer: ISSUER }),
    /signer_identity_regexp/,
  );
});
