/**
 * Cosign-compatible signatures of OCI artifacts (container images and skill artifacts), key-based,
 * with node:crypto only. The format is cosign's "simple signing" tag scheme, which every OCI
 * registry stores (no referrers API needed) and which `cosign verify --key` reads:
 *
 * - the signed payload is the JSON document `{critical: {identity: {docker-reference}, image:
 *   {docker-manifest-digest}, type: "cosign container image signature"}, optional}` (the
 *   containers/image "simple signing" format, as cosign writes it);
 * - the signature is ECDSA P-256 with SHA-256 over the payload bytes, ASN.1 DER, base64, in the
 *   layer annotation `dev.cosignproject.cosign/signature`;
 * - the payload is one layer (media type `application/vnd.dev.cosign.simplesigning.v1+json`) of an
 *   OCI image manifest stored in the signed artifact's repository under the tag
 *   `sha256-<hex of the signed digest>.sig`. Several signatures are several layers.
 *
 * Keys: a private key is PKCS#8 or SEC1 PEM (optionally PKCS#8-encrypted with a passphrase);
 * a public key is SPKI PEM (what `cosign public-key` prints). cosign's own encrypted key file
 * (`ENCRYPTED SIGSTORE PRIVATE KEY`, scrypt + NaCl secretbox) is refused with how to convert it.
 * A signer is named by its key's fingerprint: `sha256:` + hex SHA-256 of the SPKI DER.
 *
 * Lazily loaded by the skills service and by the container runtime's image check; nothing here
 * talks to a registry: the caller passes a `SignatureStore` (its own registry session).
 */
import { createHash, createPrivateKey, createPublicKey, type KeyObject, sign, verify } from 'node:crypto';

export const SIMPLE_SIGNING_MEDIA_TYPE = 'application/vnd.dev.cosign.simplesigning.v1+json';
export const SIGNATURE_ANNOTATION = 'dev.cosignproject.cosign/signature';
const PAYLOAD_TYPE = 'cosign container image signature';
const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const OCI_CONFIG = 'application/vnd.oci.image.config.v1+json';
/** A signature manifest or payload larger than this is not one of ours (cosign's are < 10 KiB). */
const MAX_SIGNATURE_BYTES = 1024 * 1024;

/** Why a key or signature cannot be used; the caller maps it to its own error. */
export class SignatureError extends Error {
  constructor(
    readonly kind: 'bad_key' | 'bad_signature_manifest',
    message: string,
  ) {
    super(message);
    this.name = 'SignatureError';
  }
}

export interface StoredManifest {
  bytes: Buffer;
  digest: string;
}

/** What signing and verification need from a registry session for one repository. */
export interface SignatureStore {
  /** The manifest under a tag, or undefined when the registry has no such tag (404). */
  findManifest(tag: string): Promise<StoredManifest | undefined>;
  getBlob(digest: string, maxBytes: number): Promise<Buffer>;
  putBlob(data: Buffer, digest: string): Promise<void>;
  putManifest(tag: string, bytes: Buffer, mediaType: string): Promise<void>;
  /**
   * The OCI referrers API's index of the artifacts whose subject is `digest`, or undefined when the
   * registry has no such API (404); a store without it uses the referrers tag scheme only.
   */
  referrers?(digest: string): Promise<Buffer | undefined>;
}

export function sha256(data: Uint8Array): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/** `sha256-<hex>.sig`: the tag cosign stores the signatures of `digest` under. */
export function signatureTag(digest: string): string {
  if (!/^sha256:[0-9a-f]{64}$/.test(digest))
    throw new SignatureError('bad_signature_manifest', `not a sha256 digest: ${digest}`);
  return `${digest.replace(':', '-')}.sig`;
}

function isP256(key: KeyObject): boolean {
  return key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1';
}

/** Reads a private key PEM (PKCS#8, SEC1, or encrypted PKCS#8 with `passphrase`); only ECDSA P-256. */
export function loadPrivateKey(pem: string, passphrase?: string): KeyObject {
  if (pem.includes('ENCRYPTED SIGSTORE PRIVATE KEY') || pem.includes('ENCRYPTED COSIGN PRIVATE KEY')) {
    throw new SignatureError(
      'bad_key',
      "cosign's encrypted key file is not read; use a PKCS#8 PEM key (e.g. `openssl ecparam -name prime256v1 -genkey | openssl pkcs8 -topk8 -nocrypt`), which `cosign import-key-pair` also accepts",
    );
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(passphrase === undefined ? { key: pem } : { key: pem, passphrase });
  } catch (err) {
    throw new SignatureError('bad_key', `not a usable private key PEM: ${(err as Error).message}`);
  }
  if (!isP256(key)) throw new SignatureError('bad_key', 'the signing key must be an ECDSA P-256 key');
  return key;
}

/** Reads a public key PEM (SPKI); only ECDSA P-256. */
export function loadPublicKey(pem: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPublicKey({ key: pem });
  } catch (err) {
    throw new SignatureError('bad_key', `not a public key PEM: ${(err as Error).message}`);
  }
  if (!isP256(key)) throw new SignatureError('bad_key', 'the public key must be an ECDSA P-256 key');
  return key;
}

/** The signer name of a key (public, or the public half of a private key): sha256 of its SPKI DER. */
export function keyFingerprint(key: KeyObject): string {
  const pub = key.type === 'private' ? createPublicKey(key) : key;
  return sha256(pub.export({ type: 'spki', format: 'der' }));
}

/** The simple-signing payload for `digest` in `dockerReference` (`registry/repository`). */
export function simpleSigningPayload(dockerReference: string, digest: string): Buffer {
  return Buffer.from(
    JSON.stringify({
      critical: {
        identity: { 'docker-reference': dockerReference },
        image: { 'docker-manifest-digest': digest },
        type: PAYLOAD_TYPE,
      },
      optional: null,
    }),
  );
}

function json(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}

interface SignatureLayer {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

/**
 * Signs `digest` (the manifest or index digest of an artifact in `dockerReference`) and stores the
 * signature under its `.sig` tag, keeping signatures already there (a signature by the same key
 * over the same digest is replaced). Returns the signer's fingerprint.
 *
 * `annotate` adds annotations to the signature layer once the signature exists: a keyless
 * signer puts the Fulcio certificate and the Rekor entry of the signature there
 * (`sigstore-verify.ts` reads them).
 */
export async function signArtifact(
  store: SignatureStore,
  dockerReference: string,
  digest: string,
  key: KeyObject,
  annotate?: (payload: Buffer, signature: string) => Promise<Record<string, string>>,
): Promise<{ signer: string; tag: string }> {
  const tag = signatureTag(digest);
  const payload = simpleSigningPayload(dockerReference, digest);
  const signature = sign('sha256', payload, key).toString('base64');
  const extra = annotate === undefined ? {} : await annotate(payload, signature);
  const payloadDigest = sha256(payload);
  const layers: SignatureLayer[] = [];
  const existing = await store.findManifest(tag);
  if (existing !== undefined) {
    // Other signatures stay (another key signs the very same payload); this key's own is replaced.
    const pub = createPublicKey(key);
    const ownOld = (layer: SignatureLayer): boolean => {
      const old = layer.annotations?.[SIGNATURE_ANNOTATION];
      if (layer.digest !== payloadDigest || old === undefined) return false;
      try {
        return verify('sha256', payload, pub, Buffer.from(old, 'base64'));
      } catch {
        return false;
      }
    };
    for (const layer of parseSignatureManifest(existing.bytes)) if (!ownOld(layer)) layers.push(layer);
  }
  layers.push({
    mediaType: SIMPLE_SIGNING_MEDIA_TYPE,
    digest: payloadDigest,
    size: payload.length,
    annotations: { ...extra, [SIGNATURE_ANNOTATION]: signature },
  });
  // cosign's config: an image config whose diff_ids are the layers' digests.
  const config = json({
    architecture: '',
    created: '0001-01-01T00:00:00Z',
    history: [{ created: '0001-01-01T00:00:00Z' }],
    os: '',
    rootfs: { type: 'layers', diff_ids: layers.map((l) => l.digest) },
    config: {},
  });
  const manifest = json({
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    config: { mediaType: OCI_CONFIG, size: config.length, digest: sha256(config) },
    layers,
  });
  await store.putBlob(payload, payloadDigest);
  await store.putBlob(config, sha256(config));
  await store.putManifest(tag, manifest, OCI_MANIFEST);
  return { signer: keyFingerprint(key), tag };
}

function parseSignatureManifest(bytes: Buffer): SignatureLayer[] {
  let doc: { layers?: unknown };
  try {
    doc = JSON.parse(bytes.toString('utf8')) as { layers?: unknown };
  } catch {
    throw new SignatureError('bad_signature_manifest', 'the signature manifest is not JSON');
  }
  if (!Array.isArray(doc.layers))
    throw new SignatureError('bad_signature_manifest', 'the signature manifest has no layers');
  return (doc.layers as SignatureLayer[]).filter(
    (l) => typeof l === 'object' && l !== null && typeof l.digest === 'string',
  );
}

/** cosign's media type of a Sigstore bundle stored as an OCI artifact. */
const BUNDLE_MEDIA_TYPE = 'application/vnd.dev.sigstore.bundle.v0.3+json';
const MAX_REFERRERS = 32;

/**
 * The Sigstore bundles stored beside `digest`, found as OCI distribution-spec 1.1 says: the
 * referrers API's index when the registry has it, else the referrers tag scheme (an image index
 * tagged `sha256-<hex>` lists the artifacts whose subject is `digest`): each listed manifest whose layer is a
 * bundle (`application/vnd.dev.sigstore.bundle.v0.3+json`, as `cosign sign --new-bundle-format`
 * stores it). The index's own `artifactType` is not trusted to say which ones are bundles (some
 * cosign versions wrote the empty type), the manifest's layer is.
 */
async function sigstoreBundles(store: SignatureStore, digest: string): Promise<Buffer[]> {
  const index =
    (await store.referrers?.(digest)) ?? (await store.findManifest(digest.replace(':', '-')))?.bytes;
  if (index === undefined || index.length > MAX_SIGNATURE_BYTES) return [];
  let manifests: unknown;
  try {
    manifests = (JSON.parse(index.toString('utf8')) as { manifests?: unknown }).manifests;
  } catch {
    return [];
  }
  if (!Array.isArray(manifests)) return [];
  const out: Buffer[] = [];
  for (const desc of manifests.slice(0, MAX_REFERRERS) as { digest?: unknown }[]) {
    if (typeof desc?.digest !== 'string' || !/^sha256:[0-9a-f]{64}$/.test(desc.digest)) continue;
    const manifest = await store.findManifest(desc.digest);
    if (manifest === undefined || manifest.bytes.length > MAX_SIGNATURE_BYTES) continue;
    let doc: { subject?: { digest?: unknown }; layers?: SignatureLayer[] };
    try {
      doc = JSON.parse(manifest.bytes.toString('utf8')) as typeof doc;
    } catch {
      continue;
    }
    const layer = doc.layers?.find((l) => l.mediaType === BUNDLE_MEDIA_TYPE);
    if (doc.subject?.digest !== digest || layer === undefined) continue;
    out.push(await store.getBlob(layer.digest, MAX_SIGNATURE_BYTES));
  }
  return out;
}

/** What verifying an artifact's signatures found. */
export type VerifyOutcome =
  /**
   * A signature by a trusted key (`signer` is its fingerprint) or a keyless one (`signer` is the
   * certificate identity, `issuer` its OIDC issuer) over this digest.
   */
  | { status: 'verified'; signer: string; issuer?: string; dockerReference: string }
  /** No `.sig` tag, or no simple-signing layer in it. */
  | { status: 'unsigned' }
  /** Signatures exist but none verifies with a trusted key; `reason` says why (no key names a secret). */
  | { status: 'invalid'; reason: string; signers: string[] };

/** The annotation cosign puts the Fulcio certificate of a keyless signature in. */
export const CERTIFICATE_ANNOTATION = 'dev.sigstore.cosign/certificate';

/** What a keyless check found: the certificate identity, or why it does not verify. */
export type KeylessResult =
  { ok: true; signer: { identity: string; issuer: string } } | { ok: false; reason: string };

/**
 * The keyless checks (`sigstore-verify.ts`, bound to a trusted root and an identity policy): one
 * for a `.sig` layer carrying a Fulcio certificate, one for a Sigstore bundle stored beside the
 * artifact (the OCI referrers tag scheme, `sha256-<hex>`).
 */
export interface KeylessCheck {
  layer(payload: Buffer, signature: string, annotations: Record<string, string>): KeylessResult;
  bundle(bundle: Buffer, digest: string): KeylessResult;
}

/** Who may have signed: public keys, and/or a keyless check (trusted root + identity policy). */
interface Trust {
  keys: readonly KeyObject[];
  keyless?: KeylessCheck | undefined;
}

/** The signer of one layer by `trust`, or why there is none. */
function layerSigner(
  payload: Buffer,
  layer: SignatureLayer,
  trust: Trust,
): { signer: string; issuer?: string } | { reason: string } {
  const annotations = layer.annotations!;
  const signatureB64 = annotations[SIGNATURE_ANNOTATION]!;
  if (annotations[CERTIFICATE_ANNOTATION] !== undefined) {
    // A keyless signature: its key is in the certificate, trusted only through the trusted root.
    if (trust.keyless === undefined)
      return {
        reason: 'a keyless signature (Fulcio certificate) is present but no trusted root is configured',
      };
    const outcome = trust.keyless.layer(payload, signatureB64, annotations);
    return outcome.ok ? { signer: outcome.signer.identity, issuer: outcome.signer.issuer } : outcome;
  }
  const signature = Buffer.from(signatureB64, 'base64');
  const key = trust.keys.find((k) => {
    try {
      return verify('sha256', payload, k, signature);
    } catch {
      return false;
    }
  });
  if (key !== undefined) return { signer: keyFingerprint(key) };
  return {
    reason:
      trust.keys.length === 0
        ? 'no trusted public key is configured'
        : 'no signature verifies with a trusted public key',
  };
}

/**
 * Looks up the signatures of `digest` and checks them against `trusted` public keys and the
 * `keyless` check: a signature counts when it verifies over its payload (with one of the keys,
 * or keyless through the trusted root and identity policy) and the payload names exactly
 * `digest` (cosign's check; the payload's docker-reference is reported, not enforced, so an
 * artifact copied to another registry with its signature still verifies, as with cosign).
 */
export async function verifyArtifact(
  store: SignatureStore,
  digest: string,
  trusted: readonly KeyObject[],
  keyless?: KeylessCheck,
): Promise<VerifyOutcome> {
  const reasons = new Set<string>();
  const signers = new Set<string>();
  const found = await store.findManifest(signatureTag(digest));
  const layers =
    found === undefined || found.bytes.length > MAX_SIGNATURE_BYTES
      ? []
      : parseSignatureManifest(found.bytes).filter(
          (l) =>
            l.mediaType === SIMPLE_SIGNING_MEDIA_TYPE && l.annotations?.[SIGNATURE_ANNOTATION] !== undefined,
        );
  const bundles = keyless === undefined ? [] : await sigstoreBundles(store, digest);
  if (layers.length === 0 && bundles.length === 0) return { status: 'unsigned' };
  for (const bundle of bundles) {
    const outcome = keyless!.bundle(bundle, digest);
    if (outcome.ok)
      return {
        status: 'verified',
        signer: outcome.signer.identity,
        issuer: outcome.signer.issuer,
        dockerReference: '',
      };
    reasons.add(outcome.reason);
  }
  for (const layer of layers) {
    const payload = await store.getBlob(layer.digest, MAX_SIGNATURE_BYTES);
    let claimed: {
      critical?: {
        image?: { 'docker-manifest-digest'?: unknown };
        identity?: { 'docker-reference'?: unknown };
        type?: unknown;
      };
    };
    try {
      claimed = JSON.parse(payload.toString('utf8')) as typeof claimed;
    } catch {
      reasons.add('a signature payload is not JSON');
      continue;
    }
    const signed = layerSigner(payload, layer, { keys: trusted, keyless });
    if ('reason' in signed) {
      reasons.add(signed.reason);
      continue;
    }
    signers.add(signed.signer);
    if (claimed.critical?.type !== PAYLOAD_TYPE) {
      reasons.add(`a signature payload has type ${JSON.stringify(claimed.critical?.type)}`);
      continue;
    }
    if (claimed.critical?.image?.['docker-manifest-digest'] !== digest) {
      reasons.add('a signature names another digest (the content was replaced after signing)');
      continue;
    }
    const ref = claimed.critical?.identity?.['docker-reference'];
    return {
      status: 'verified',
      signer: signed.signer,
      ...(signed.issuer === undefined ? {} : { issuer: signed.issuer }),
      dockerReference: typeof ref === 'string' ? ref : '',
    };
  }
  return { status: 'invalid', reason: [...reasons].join('; '), signers: [...signers] };
}
