/**
 * The cosign simple-signing format on an in-memory signature store: the payload and manifest
 * shapes cosign writes, a second signer added as a layer, the same signer replacing its own,
 * and each way verification fails (no key, wrong key, another digest, tampered payload).
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { test } from 'node:test';
import {
  keyFingerprint,
  loadPrivateKey,
  loadPublicKey,
  sha256,
  signArtifact,
  signatureTag,
  type SignatureStore,
  verifyArtifact,
} from '../../../src/protocol/oci-signature.js';

function memoryStore(): SignatureStore & { blobs: Map<string, Buffer>; manifests: Map<string, Buffer> } {
  const blobs = new Map<string, Buffer>();
  const manifests = new Map<string, Buffer>();
  return {
    blobs,
    manifests,
    findManifest: async (tag) => {
      const bytes = manifests.get(tag);
      return bytes === undefined ? undefined : { bytes, digest: sha256(bytes) };
    },
    getBlob: async (digest) => {
      const data = blobs.get(digest);
      if (data === undefined) throw new Error(`no blob ${digest}`);
      return data;
    },
    putBlob: async (data, digest) => {
      assert.equal(sha256(data), digest);
      blobs.set(digest, data);
    },
    putManifest: async (tag, bytes) => {
      manifests.set(tag, bytes);
    },
  };
}

const pair = (): { priv: KeyObject; pub: KeyObject } => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return { priv: privateKey, pub: publicKey };
};
const DIGEST = `sha256:${'a'.repeat(64)}`;
const OTHER = `sha256:${'b'.repeat(64)}`;

test('sign then verify: cosign layout, signer fingerprint, several signers', async () => {
  const store = memoryStore();
  const alice = pair();
  const bob = pair();
  const signed = await signArtifact(store, 'reg.example/acme/app', DIGEST, alice.priv);
  assert.equal(signed.tag, `sha256-${'a'.repeat(64)}.sig`);
  assert.equal(signed.signer, keyFingerprint(alice.pub));
  const manifest = JSON.parse(store.manifests.get(signed.tag)!.toString()) as {
    mediaType: string;
    layers: { mediaType: string; digest: string; annotations: Record<string, string> }[];
  };
  assert.equal(manifest.mediaType, 'application/vnd.oci.image.manifest.v1+json');
  assert.equal(manifest.layers[0]!.mediaType, 'application/vnd.dev.cosign.simplesigning.v1+json');
  const payload = JSON.parse(store.blobs.get(manifest.layers[0]!.digest)!.toString()) as unknown;
  assert.deepEqual(payload, {
    critical: {
      identity: { 'docker-reference': 'reg.example/acme/app' },
      image: { 'docker-manifest-digest': DIGEST },
      type: 'cosign container image signature',
    },
    optional: null,
  });

  const verified = await verifyArtifact(store, DIGEST, [alice.pub]);
  assert.deepEqual(verified, {
    status: 'verified',
    signer: keyFingerprint(alice.pub),
    dockerReference: 'reg.example/acme/app',
  });
  // Bob signs too (the same payload, another layer); alice re-signing replaces her own layer.
  await signArtifact(store, 'reg.example/acme/app', DIGEST, bob.priv);
  await signArtifact(store, 'reg.example/acme/app', DIGEST, alice.priv);
  const after = JSON.parse(store.manifests.get(signed.tag)!.toString()) as { layers: unknown[] };
  assert.equal(after.layers.length, 2, 'one layer per signer: bob kept, alice replaced');
  const byBob = await verifyArtifact(store, DIGEST, [bob.pub]);
  assert.equal(byBob.status === 'verified' && byBob.signer, keyFingerprint(bob.pub));
  assert.equal((await verifyArtifact(store, DIGEST, [alice.pub])).status, 'verified');
  assert.equal((await verifyArtifact(store, DIGEST, [pair().pub])).status, 'invalid');
});

test('verification failures are named, never passed', async () => {
  const store = memoryStore();
  const alice = pair();
  assert.deepEqual(await verifyArtifact(store, DIGEST, [alice.pub]), { status: 'unsigned' });
  await signArtifact(store, 'r/x', DIGEST, alice.priv);
  const none = await verifyArtifact(store, DIGEST, []);
  assert.equal(none.status, 'invalid');
  assert.match((none as { reason: string }).reason, /no trusted public key is configured/);
  const wrong = await verifyArtifact(store, DIGEST, [pair().pub]);
  assert.match((wrong as { reason: string }).reason, /no signature verifies with a trusted public key/);
  // The signature manifest copied beside another digest.
  store.manifests.set(signatureTag(OTHER), store.manifests.get(signatureTag(DIGEST))!);
  const copied = await verifyArtifact(store, OTHER, [alice.pub]);
  assert.match((copied as { reason: string }).reason, /names another digest/);
  // A payload changed after signing does not verify.
  for (const [digest, data] of store.blobs) {
    if (data.toString().includes('docker-manifest-digest'))
      store.blobs.set(digest, Buffer.from(data.toString().replace('r/x', 'r/y')));
  }
  assert.equal((await verifyArtifact(store, DIGEST, [alice.pub])).status, 'invalid');
});

test('keys: P-256 only, cosign encrypted key files refused with how to convert', () => {
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  assert.throws(
    () => loadPrivateKey(rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string),
    /ECDSA P-256/,
  );
  assert.throws(
    () => loadPublicKey(rsa.publicKey.export({ type: 'spki', format: 'pem' }) as string),
    /P-256/,
  );
  assert.throws(
    () =>
      loadPrivateKey(
        '-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nx\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----',
      ),
    /cosign import-key-pair/,
  );
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const encrypted = privateKey.export({
    type: 'pkcs8',
    format: 'pem',
    cipher: 'aes-256-cbc',
    passphrase: 'pw',
  }) as string;
  assert.equal(loadPrivateKey(encrypted, 'pw').asymmetricKeyType, 'ec');
  assert.throws(() => loadPrivateKey(encrypted, 'wrong'), /not a usable private key/);
});
