/**
 * Keyless (Sigstore) verification of cosign signatures, on the `@sigstore/verify` library: a
 * signature made with a short-lived Fulcio certificate and logged in Rekor, checked offline
 * against a configured trusted root.
 *
 * Layout read: cosign's `.sig` tag (`oci-signature.ts`), whose simple-signing layer carries, beside
 * the signature annotation, the leaf certificate (`dev.sigstore.cosign/certificate`, PEM), the
 * chain (`dev.sigstore.cosign/chain`, PEM, informative: trust comes from the trusted root only) and
 * the Rekor entry with its signed entry timestamp (`dev.sigstore.cosign/bundle`: `{SignedEntryTimestamp,
 * Payload: {body, integratedTime, logIndex, logID}}`) — what `cosign sign` writes in keyless mode
 * (and `cosign verify --certificate-identity … --certificate-oidc-issuer …` reads). These pieces are
 * turned into a Sigstore bundle (v0.1: a message signature over the payload, the certificate, one
 * hashedrekord tlog entry with its inclusion promise) and verified as one:
 *
 * - the leaf chains to a certificate authority of the trusted root, valid at the log's integrated
 *   time (the signing time must fall inside the leaf's short validity), and at the time of each
 *   RFC 3161 timestamp when there are some (bundles only);
 * - the signature over the payload verifies with the leaf's key;
 * - the signed entry timestamp verifies with the trusted root's key of the log named by `logID`,
 *   and the logged hashedrekord names this signature, the payload's digest and this certificate;
 * - the identity policy: the certificate's subject alternative name (e-mail or URI) equals
 *   `signerIdentity` (or matches the whole of `signerIdentityRegexp`), the OIDC issuer extension
 *   (Fulcio OIDs 1.3.6.1.4.1.57264.1.8, or the older 1.3.6.1.4.1.57264.1.1) equals `certIssuer`,
 *   and, when asked, the source repository URI extension (1.3.6.1.4.1.57264.1.12) equals
 *   `repositoryUri`.
 *
 * The other layout, cosign's `--new-bundle-format`: a Sigstore bundle v0.3 (a DSSE envelope
 * holding an in-toto statement whose subject is the artifact digest, a dsse Rekor entry with its
 * inclusion proof) stored as an OCI artifact beside the signed one (`verifySigstoreBundle`; found
 * by `oci-signature.ts`). The same checks apply, over the envelope instead of the payload.
 *
 * Bundles may also carry what the public-good instance's signing config now gives cosign v3 and
 * the other Sigstore clients: a Rekor v2 entry (dsse or hashedrekord 0.0.2: an inclusion proof
 * under a checkpoint signed by the log's key, C2SP signed-note format; no SET, no integrated
 * time) and RFC 3161 timestamps over the signature (`timestampVerificationData`) from a
 * timestamp authority of the trusted root — with a Rekor v1 entry too. Which time counts as the
 * signing time is said at `withSignedTimes`.
 *
 * Certificate transparency (embedded SCTs) is not required — like `cosign verify
 * --insecure-ignore-sct` — since the Rekor entry already proves the certificate was logged at
 * signing time; an SCT that is present is still checked against the trusted root's ctlogs.
 *
 * Loaded lazily, only when a keyless policy is in force.
 */
import { bundleFromJSON, type Bundle, type TransparencyLogEntry } from '@sigstore/bundle';
import { X509Certificate } from '@sigstore/core';
import { TrustedRoot } from '@sigstore/protobuf-specs';
import { Entry as RekorV2Entry } from '@sigstore/protobuf-specs/rekor/v2';
import { toSignedEntity, toTrustMaterial, type TrustMaterial, Verifier } from '@sigstore/verify';
import { createHash } from 'node:crypto';
import { CERTIFICATE_ANNOTATION, type KeylessCheck, SignatureError } from './oci-signature.js';

export const CHAIN_ANNOTATION = 'dev.sigstore.cosign/chain';
export const REKOR_BUNDLE_ANNOTATION = 'dev.sigstore.cosign/bundle';
const OID_SOURCE_REPOSITORY_URI = '1.3.6.1.4.1.57264.1.12';
const IN_TOTO_TYPE = 'application/vnd.in-toto+json';
/** The media type of a Sigstore bundle stored as an OCI artifact (cosign's bundle spec). */
export const SIGSTORE_BUNDLE_MEDIA_TYPE = 'application/vnd.dev.sigstore.bundle.v0.3+json';

/** Who may have signed: cosign's `--certificate-identity[-regexp]` and `--certificate-oidc-issuer`. */
export interface IdentityPolicy {
  signerIdentity?: string;
  /** Matched against the whole identity (anchored), as cosign's `--certificate-identity-regexp`. */
  signerIdentityRegexp?: string;
  certIssuer: string;
  repositoryUri?: string;
}

/** A trusted root and an identity policy, ready to check signatures. */
export interface KeylessPolicy {
  readonly trust: TrustMaterial;
  readonly identity: IdentityPolicy;
}

/** The certificate identity of a verified keyless signature. */
export interface KeylessSigner {
  identity: string;
  issuer: string;
}

export type KeylessOutcome = { ok: true; signer: KeylessSigner } | { ok: false; reason: string };

/**
 * Reads a Sigstore `trusted_root.json` (the `dev.sigstore.trustedroot` format: certificate
 * authorities, transparency logs, ctlogs, timestamp authorities). Throws `SignatureError` when
 * the text is not one, or when it names no certificate authority or transparency log (nothing
 * keyless could ever verify against it).
 */
export function loadTrustedRoot(text: string): TrustMaterial {
  let root: TrustedRoot;
  try {
    root = TrustedRoot.fromJSON(JSON.parse(text));
  } catch (err) {
    throw new SignatureError('bad_key', `not a Sigstore trusted_root.json: ${(err as Error).message}`);
  }
  if (root.certificateAuthorities.length === 0)
    throw new SignatureError(
      'bad_key',
      'the trusted root names no certificate authority (certificateAuthorities)',
    );
  if (root.tlogs.length === 0)
    throw new SignatureError('bad_key', 'the trusted root names no transparency log (tlogs)');
  try {
    return toTrustMaterial(root);
  } catch (err) {
    throw new SignatureError('bad_key', `unusable trusted root: ${(err as Error).message}`);
  }
}

/** Checks an identity policy's own shape (misuse is refused before anything is fetched). */
export function checkIdentityPolicy(policy: IdentityPolicy): void {
  if ((policy.signerIdentity === undefined) === (policy.signerIdentityRegexp === undefined))
    throw new SignatureError('bad_key', 'give exactly one of signer_identity and signer_identity_regexp');
  if (policy.signerIdentityRegexp !== undefined) {
    try {
      new RegExp(policy.signerIdentityRegexp, 'u');
    } catch (err) {
      throw new SignatureError('bad_key', `signer_identity_regexp: ${(err as Error).message}`);
    }
  }
}

interface RekorBundle {
  SignedEntryTimestamp?: unknown;
  Payload?: { body?: unknown; integratedTime?: unknown; logIndex?: unknown; logID?: unknown };
}

function pemToDer(pem: string): Buffer<ArrayBuffer> {
  const body = /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]+)-----END CERTIFICATE-----/.exec(pem)?.[1];
  if (body === undefined) throw new Error('the certificate annotation holds no PEM certificate');
  return Buffer.from(body.replace(/\s+/g, ''), 'base64');
}

/** cosign's layer annotations and payload as a Sigstore bundle v0.1 (see the module comment). */
function toBundle(payload: Buffer, signature: string, annotations: Record<string, string>): Bundle {
  const cert = annotations[CERTIFICATE_ANNOTATION];
  const rekor = annotations[REKOR_BUNDLE_ANNOTATION];
  if (cert === undefined) throw new Error('no certificate annotation');
  if (rekor === undefined)
    throw new Error(
      'no transparency log entry (dev.sigstore.cosign/bundle): the signature was not logged in Rekor',
    );
  const entry = JSON.parse(rekor) as RekorBundle;
  const p = entry.Payload;
  if (
    typeof entry.SignedEntryTimestamp !== 'string' ||
    typeof p?.body !== 'string' ||
    typeof p.integratedTime !== 'number' ||
    typeof p.logIndex !== 'number' ||
    typeof p.logID !== 'string' ||
    !/^[0-9a-f]{64}$/.test(p.logID)
  )
    throw new Error('the transparency log entry (dev.sigstore.cosign/bundle) is malformed');
  const body = JSON.parse(Buffer.from(p.body, 'base64').toString('utf8')) as {
    kind?: unknown;
    apiVersion?: unknown;
  };
  return bundleFromJSON({
    mediaType: 'application/vnd.dev.sigstore.bundle+json;version=0.1',
    verificationMaterial: {
      x509CertificateChain: { certificates: [{ rawBytes: pemToDer(cert).toString('base64') }] },
      tlogEntries: [
        {
          logIndex: String(p.logIndex),
          logId: { keyId: Buffer.from(p.logID, 'hex').toString('base64') },
          kindVersion: { kind: String(body.kind), version: String(body.apiVersion) },
          integratedTime: String(p.integratedTime),
          inclusionPromise: { signedEntryTimestamp: entry.SignedEntryTimestamp },
          canonicalizedBody: p.body,
        },
      ],
      timestampVerificationData: { rfc3161Timestamps: [] },
    },
    messageSignature: {
      messageDigest: {
        algorithm: 'SHA2_256',
        digest: createHash('sha256').update(payload).digest('base64'),
      },
      signature,
    },
  });
}

/** The entry version Rekor v2 writes (the `rekor/v2` types of Sigstore's protobuf-specs). */
const REKOR_V2 = '0.0.2';

/**
 * The certificate (DER) a log entry names as the signer's: hashedrekord 0.0.1 logs it (PEM,
 * base64) as the signature's public key and dsse 0.0.1 as the signature's verifier; Rekor v2's
 * hashedrekord and dsse 0.0.2 hold it as the verifier's `x509Certificate` (DER, base64).
 */
function loggedCertificate(entry: TransparencyLogEntry): Buffer | undefined {
  const body = JSON.parse(entry.canonicalizedBody.toString('utf8')) as {
    kind?: unknown;
    spec?: {
      signature?: { publicKey?: { content?: unknown } };
      signatures?: { verifier?: unknown }[];
    };
  };
  if (entry.kindVersion.version === REKOR_V2) {
    const spec = RekorV2Entry.fromJSON(body).spec?.spec;
    const verifier =
      spec?.$case === 'hashedRekordV002'
        ? spec.hashedRekordV002.signature?.verifier
        : spec?.$case === 'dsseV002'
          ? spec.dsseV002.signatures[0]?.verifier
          : undefined;
    return verifier?.verifier?.$case === 'x509Certificate'
      ? verifier.verifier.x509Certificate.rawBytes
      : undefined;
  }
  const logged =
    body.kind === 'dsse' ? body.spec?.signatures?.[0]?.verifier : body.spec?.signature?.publicKey?.content;
  return typeof logged === 'string' ? pemToDer(Buffer.from(logged, 'base64').toString('utf8')) : undefined;
}

/** True when every log entry names this certificate as the signer's. */
function loggedCertificateIs(bundle: Bundle, cert: X509Certificate): boolean {
  const entries: TransparencyLogEntry[] = bundle.verificationMaterial.tlogEntries;
  return (
    entries.length > 0 &&
    entries.every((entry) => {
      try {
        return loggedCertificate(entry)?.equals(cert.root.toDER()) === true;
      } catch {
        return false;
      }
    })
  );
}

/**
 * Sigstore's rules for the signing time (the Sigstore client specification, on establishing a
 * time for the signature), checked before the library runs, which counts every non-zero
 * integrated time and every RFC 3161 timestamp: at least one verified time source, and the leaf
 * valid at each.
 *
 * - An integrated time counts only under a signed entry timestamp (SET), the only thing that
 *   signs it: a checkpoint signs the tree, not the time. A Rekor v2 entry has neither (the log
 *   does not timestamp), so its time must come from an RFC 3161 timestamp authority.
 * - An RFC 3161 timestamp (over the signature bytes) counts once the library has verified it
 *   against a timestamp authority of the trusted root, beside a Rekor v1 entry or a v2 one.
 * - A timestamp alone, with no log entry, is refused: the log is what makes the certificate's
 *   use visible to its owner.
 *
 * Returns the bundle the library is to verify (integrated times no SET covers set to 0), or why
 * not.
 */
function withSignedTimes(bundle: Bundle): { bundle: Bundle } | { reason: string } {
  const material = bundle.verificationMaterial;
  const entries: TransparencyLogEntry[] = material.tlogEntries;
  if (entries.length === 0)
    return {
      reason:
        'the signature is in no transparency log (verificationMaterial.tlogEntries is empty); a timestamp alone is not accepted',
    };
  for (const { kindVersion } of entries) {
    const { kind, version } = kindVersion;
    if (version !== '0.0.1' && !(version === REKOR_V2 && (kind === 'hashedrekord' || kind === 'dsse')))
      return {
        reason: `a Rekor ${kind} ${version} entry is not supported (0.0.1 from Rekor v1, or hashedrekord and dsse 0.0.2 from Rekor v2)`,
      };
  }
  const stamps = material.timestampVerificationData?.rfc3161Timestamps.length ?? 0;
  if (stamps === 0 && entries.some((entry) => entry.kindVersion.version === REKOR_V2))
    return {
      reason:
        'a Rekor v2 entry records no signing time, and the bundle has no RFC 3161 timestamp (verificationMaterial.timestampVerificationData.rfc3161Timestamps)',
    };
  const signed = entries.map((entry): TransparencyLogEntry =>
    entry.inclusionPromise !== undefined && entry.kindVersion.version !== REKOR_V2
      ? entry
      : { ...entry, integratedTime: '0' },
  );
  if (stamps === 0 && !signed.some((entry) => entry.integratedTime !== '' && entry.integratedTime !== '0'))
    return {
      reason:
        'no signed signing time: the log entry has no signed entry timestamp over its integrated time, and the bundle has no RFC 3161 timestamp',
    };
  return { bundle: { ...bundle, verificationMaterial: { ...material, tlogEntries: signed } } };
}

function extensionText(cert: X509Certificate, oid: string): string | undefined {
  const ext = cert.extension(oid);
  if (ext === undefined) return undefined;
  // Fulcio's newer extensions hold a DER UTF8String inside the extension's OCTET STRING.
  return (ext.valueObj.subs[0] ?? ext.valueObj).value.toString('utf8');
}

function identityMismatch(
  signer: KeylessSigner,
  cert: X509Certificate,
  policy: IdentityPolicy,
): string | undefined {
  if (policy.signerIdentity !== undefined && signer.identity !== policy.signerIdentity)
    return `the certificate identity is ${signer.identity}, not ${policy.signerIdentity}`;
  if (
    policy.signerIdentityRegexp !== undefined &&
    !new RegExp(`^(?:${policy.signerIdentityRegexp})$`, 'u').test(signer.identity)
  )
    return `the certificate identity ${signer.identity} does not match ${policy.signerIdentityRegexp}`;
  if (signer.issuer !== policy.certIssuer)
    return `the certificate issuer is ${signer.issuer === '' ? '(none)' : signer.issuer}, not ${policy.certIssuer}`;
  if (policy.repositoryUri !== undefined) {
    const repo = extensionText(cert, OID_SOURCE_REPOSITORY_URI);
    if (repo !== policy.repositoryUri)
      return `the certificate's source repository is ${repo ?? '(none)'}, not ${policy.repositoryUri}`;
  }
  return undefined;
}

/** The checks common to both layouts: library verification, logged certificate, identity. */
function verifyEntity(
  policy: KeylessPolicy,
  bundle: Bundle,
  cert: X509Certificate,
  payload: Buffer | undefined,
): KeylessOutcome {
  const timed = withSignedTimes(bundle);
  if ('reason' in timed) return { ok: false, reason: timed.reason };
  let verified;
  try {
    // One log entry and one verified time at least (the library's defaults, said here); SCTs
    // are not required (see the module comment).
    verified = new Verifier(policy.trust, {
      ctlogThreshold: 0,
      tlogThreshold: 1,
      timestampThreshold: 1,
    }).verify(toSignedEntity(timed.bundle, payload));
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause;
    const detail = cause instanceof Error ? ` (${cause.message})` : '';
    return { ok: false, reason: `keyless signature does not verify: ${(err as Error).message}${detail}` };
  }
  // The library compares the logged signature and digest; the logged certificate is compared
  // here, as cosign does, so the identity checked is the one the log vouches for.
  if (!loggedCertificateIs(bundle, cert))
    return { ok: false, reason: 'the certificate is not the one in the transparency log entry' };
  const signer: KeylessSigner = {
    identity: verified.identity?.subjectAlternativeName ?? '',
    issuer: verified.identity?.extensions?.issuer ?? '',
  };
  const mismatch = identityMismatch(signer, cert, policy.identity);
  return mismatch === undefined ? { ok: true, signer } : { ok: false, reason: mismatch };
}

/**
 * Verifies one keyless cosign signature (`signature`, base64, over `payload`, with the layer's
 * `annotations`) against the policy's trusted root and identity. Never throws for bad input: the
 * outcome says why it does not verify.
 */
export function verifyKeyless(
  policy: KeylessPolicy,
  payload: Buffer,
  signature: string,
  annotations: Record<string, string>,
): KeylessOutcome {
  let bundle: Bundle;
  let cert: X509Certificate;
  try {
    bundle = toBundle(payload, signature, annotations);
    cert = X509Certificate.parse(pemToDer(annotations[CERTIFICATE_ANNOTATION]!));
  } catch (err) {
    return { ok: false, reason: `unreadable keyless signature: ${(err as Error).message}` };
  }
  return verifyEntity(policy, bundle, cert, payload);
}

interface InTotoStatement {
  _type?: unknown;
  subject?: { digest?: { sha256?: unknown } }[];
}

/**
 * Verifies a Sigstore bundle stored beside `digest` (`cosign sign --new-bundle-format`: a v0.3
 * bundle whose DSSE envelope holds an in-toto statement naming the image digest as its subject,
 * signed with a Fulcio certificate and logged in Rekor with an inclusion proof). Never throws for
 * bad input.
 */
export function verifySigstoreBundle(policy: KeylessPolicy, json: Buffer, digest: string): KeylessOutcome {
  let bundle: Bundle;
  let cert: X509Certificate;
  let statement: InTotoStatement;
  try {
    bundle = bundleFromJSON(JSON.parse(json.toString('utf8')));
    const material = bundle.verificationMaterial.content;
    const der =
      material.$case === 'certificate'
        ? material.certificate.rawBytes
        : material.$case === 'x509CertificateChain'
          ? material.x509CertificateChain.certificates[0]?.rawBytes
          : undefined;
    if (der === undefined) throw new Error('the bundle is signed with a key, not a certificate');
    cert = X509Certificate.parse(Buffer.from(der));
    if (bundle.content.$case !== 'dsseEnvelope' || bundle.content.dsseEnvelope.payloadType !== IN_TOTO_TYPE)
      throw new Error('the bundle holds no in-toto statement (DSSE envelope)');
    statement = JSON.parse(bundle.content.dsseEnvelope.payload.toString('utf8')) as InTotoStatement;
  } catch (err) {
    return { ok: false, reason: `unreadable Sigstore bundle: ${(err as Error).message}` };
  }
  const outcome = verifyEntity(policy, bundle, cert, undefined);
  if (!outcome.ok) return outcome;
  const hex = digest.replace(/^sha256:/, '');
  if (!(statement.subject ?? []).some((s) => s.digest?.sha256 === hex))
    return {
      ok: false,
      reason: 'a signed statement names another digest (the content was replaced after signing)',
    };
  return outcome;
}

/**
 * The keyless check `verifyArtifact` takes: both layouts against `trust`; a signature passes
 * when its certificate matches one of `identities` (the reasons of all are given otherwise).
 */
export function keylessCheck(trust: TrustMaterial, identities: readonly IdentityPolicy[]): KeylessCheck {
  const first = (verify: (policy: KeylessPolicy) => KeylessOutcome): KeylessOutcome => {
    const reasons: string[] = [];
    for (const identity of identities) {
      const outcome = verify({ trust, identity });
      if (outcome.ok) return outcome;
      reasons.push(outcome.reason);
    }
    return { ok: false, reason: [...new Set(reasons)].join('; ') };
  };
  return {
    layer: (payload, signature, annotations) =>
      first((policy) => verifyKeyless(policy, payload, signature, annotations)),
    bundle: (json, digest) => first((policy) => verifySigstoreBundle(policy, json, digest)),
  };
}
