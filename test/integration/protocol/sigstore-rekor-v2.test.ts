/**
 * Keyless signatures as the public-good instance makes them today (cosign v3, Sigstore clients
 * on its signing config): a v0.3 bundle whose log entry is Rekor v2's (dsse 0.0.2, an inclusion
 * proof under a signed checkpoint, no SET, no integrated time) and whose signing time comes from
 * an RFC 3161 timestamp authority of the trusted root. Integration tier: the CA and the TSA are
 * made with the openssl CLI (`test/helpers/sigstore-v2-fixture.ts`); the logs' keys, entries,
 * Merkle trees and checkpoints are made by the test. No network.
 *
 * Each rule of `withSignedTimes` and each check of the module comment has a case that fails it.
 */
import assert from 'node:assert/strict';
import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { sha256, type SignatureStore, verifyArtifact } from '../../../src/protocol/oci-signature.js';
import {
  type IdentityPolicy,
  keylessCheck,
  type KeylessOutcome,
  loadTrustedRoot,
  verifySigstoreBundle,
} from '../../../src/protocol/sigstore-verify.js';
import { createSigstoreV2Fixture, type SigstoreV2Fixture } from '../../helpers/sigstore-v2-fixture.js';

const DIGEST = `sha256:${'a'.repeat(64)}`;
const OTHER = `sha256:${'b'.repeat(64)}`;
const ISSUER = 'https://token.actions.example';
const ALICE = 'alice@example.com';
const POLICY: IdentityPolicy = { signerIdentity: ALICE, certIssuer: ISSUER };

let fx: SigstoreV2Fixture;
before(() => {
  fx = createSigstoreV2Fixture();
});
after(() => fx.close());

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

const alice = () => fx.base.leaf({ identity: ALICE, issuer: ISSUER });

function verify(bundle: Buffer, identity: IdentityPolicy = POLICY, digest = DIGEST): KeylessOutcome {
  return verifySigstoreBundle({ trust: loadTrustedRoot(fx.trustedRootJson), identity }, bundle, digest);
}

function refused(outcome: KeylessOutcome, reason: RegExp): void {
  assert.equal(outcome.ok, false, JSON.stringify(outcome));
  assert.match(outcome.ok ? '' : outcome.reason, reason);
}

/** The bundle with its JSON changed by `edit` (what a hand-made or tampered bundle holds). */
function edited(
  bundle: Buffer,
  edit: (doc: { verificationMaterial: Record<string, unknown> }) => void,
): Buffer {
  const doc = JSON.parse(bundle.toString('utf8')) as { verificationMaterial: Record<string, unknown> };
  edit(doc);
  return Buffer.from(JSON.stringify(doc));
}

test('Rekor v2 + RFC 3161: a dsse 0.0.2 entry with a checkpoint-signed inclusion proof and a trusted TSA timestamp verifies, through the referrers tag scheme', async () => {
  const store = memoryStore();
  await fx.storeBundle(store, DIGEST, fx.bundle(alice(), DIGEST));
  // The trusted root as a user gives it: the file the fixture wrote.
  const trust = loadTrustedRoot(readFileSync(fx.trustedRootPath, 'utf8'));
  const outcome = await verifyArtifact(store, DIGEST, [], keylessCheck(trust, [POLICY]));
  assert.equal(outcome.status, 'verified', JSON.stringify(outcome));
  assert.equal(outcome.status === 'verified' ? outcome.signer : '', ALICE);
  assert.equal(outcome.status === 'verified' ? outcome.issuer : '', ISSUER);
});

test('Rekor v2: without an RFC 3161 timestamp there is no signing time, and the bundle is refused', () => {
  refused(
    verify(fx.bundle(alice(), DIGEST, { tsa: 'none' })),
    /a Rekor v2 entry records no signing time, and the bundle has no RFC 3161 timestamp/,
  );
});

test('Rekor v2: an integrated time written on the entry is signed by nothing and does not stand in for a timestamp', () => {
  refused(
    verify(fx.bundle(alice(), DIGEST, { tsa: 'none', integratedTime: Math.floor(Date.now() / 1000) })),
    /a Rekor v2 entry records no signing time/,
  );
});

test('RFC 3161: a timestamp from a TSA the trusted root does not name is refused', () => {
  refused(
    verify(fx.bundle(alice(), DIGEST, { tsa: 'untrusted' })),
    /does not verify: timestamp could not be verified/,
  );
});

test('RFC 3161: a timestamp outside the certificate validity (the leaf expired before it) is refused', () => {
  // Valid for ten minutes from an hour ago: the TSA's time (now) is after its end.
  const expired = fx.base.leaf({ identity: ALICE, issuer: ISSUER, validFromSeconds: -3600 });
  refused(verify(fx.bundle(expired, DIGEST)), /certificate is not valid or expired at the specified date/);
});

test('C2SP checkpoint: a checkpoint whose root hash was altered after signing is refused', () => {
  refused(verify(fx.bundle(alice(), DIGEST, { tamper: 'checkpoint' })), /invalid checkpoint signature/);
});

test('RFC 6962 §2.1.1: an inclusion proof that does not lead to the checkpoint root is refused', () => {
  refused(
    verify(fx.bundle(alice(), DIGEST, { tamper: 'proof' })),
    /calculated root hash does not match inclusion proof/,
  );
});

test('Rekor v2: a checkpoint signed by a log the trusted root does not name is refused', () => {
  const bundle = fx.bundle(alice(), DIGEST);
  // The same bundle against a root whose only logs are other keys.
  const root = JSON.parse(fx.trustedRootJson) as { tlogs: { baseUrl: string }[] };
  root.tlogs = root.tlogs.filter((log) => !log.baseUrl.includes('rekor-v2'));
  const outcome = verifySigstoreBundle(
    { trust: loadTrustedRoot(JSON.stringify(root)), identity: POLICY },
    bundle,
    DIGEST,
  );
  refused(outcome, /invalid checkpoint signature/);
});

test('policy: another identity or another issuer is refused for a Rekor v2 bundle', () => {
  const bundle = fx.bundle(alice(), DIGEST);
  refused(
    verify(bundle, { signerIdentity: 'mallory@example.com', certIssuer: ISSUER }),
    /identity is alice@example\.com, not mallory@example\.com/,
  );
  refused(
    verify(bundle, { signerIdentity: ALICE, certIssuer: 'https://accounts.example' }),
    /issuer is https:\/\/token\.actions\.example, not https:\/\/accounts\.example/,
  );
  assert.equal(verify(bundle).ok, true);
});

test('Rekor v2: a certificate other than the one the 0.0.2 entry logs (same key, other identity) is refused', () => {
  const mallory = fx.base.leaf({ identity: 'mallory@example.com', issuer: ISSUER });
  const swapped = fx.base.certify(
    createPublicKey(mallory.key).export({ type: 'spki', format: 'pem' }) as string,
    ALICE,
    ISSUER,
  );
  refused(
    verify(fx.bundle(mallory, DIGEST, { certificatePem: swapped })),
    /the certificate is not the one in the transparency log entry/,
  );
});

test('Rekor v2: a statement naming another digest is refused', () => {
  refused(verify(fx.bundle(alice(), DIGEST, { subjectDigest: OTHER })), /statement names another digest/);
});

test('Rekor v1 + RFC 3161: a timestamp beside a v1 entry with its SET verifies; beside a proof-only entry it is the signing time', () => {
  assert.equal(verify(fx.bundle(alice(), DIGEST, { log: 'v1' })).ok, true);
  assert.equal(verify(fx.bundle(alice(), DIGEST, { log: 'v1', tsa: 'none' })).ok, true);
  assert.equal(verify(fx.bundle(alice(), DIGEST, { log: 'v1', noSet: true })).ok, true);
  // An untrusted timestamp is not ignored because the SET alone would do.
  refused(
    verify(fx.bundle(alice(), DIGEST, { log: 'v1', tsa: 'untrusted' })),
    /timestamp could not be verified/,
  );
});

test('Rekor v1: an integrated time without a SET is signed by nothing; with no timestamp either, refused', () => {
  refused(
    verify(fx.bundle(alice(), DIGEST, { log: 'v1', noSet: true, tsa: 'none' })),
    /no signed signing time: the log entry has no signed entry timestamp/,
  );
});

test('refused by name: a timestamp with no log entry, and an entry version neither Rekor writes', () => {
  refused(
    verify(
      edited(fx.bundle(alice(), DIGEST), (doc) => {
        doc.verificationMaterial['tlogEntries'] = [];
      }),
    ),
    /in no transparency log \(verificationMaterial\.tlogEntries is empty\); a timestamp alone is not accepted/,
  );
  refused(
    verify(
      edited(fx.bundle(alice(), DIGEST), (doc) => {
        const [entry] = doc.verificationMaterial['tlogEntries'] as { kindVersion: object }[];
        entry!.kindVersion = { kind: 'dsse', version: '0.0.3' };
      }),
    ),
    /a Rekor dsse 0\.0\.3 entry is not supported/,
  );
});
