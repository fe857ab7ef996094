/**
 * A private Sigstore made by the test: a certificate authority standing in for Fulcio (openssl
 * CLI, ECDSA P-256), a transparency-log key standing in for Rekor, the `trusted_root.json` that
 * names both, and keyless cosign signatures made with them — a short-lived leaf certificate with
 * Fulcio's identity extensions, and a hashedrekord entry with its signed entry timestamp (SET),
 * stored as cosign stores them in the `.sig` layer's annotations.
 *
 * No network: the "log" is a signature over the entry, exactly what a verifier checks offline.
 */
import { dsse, json } from '@sigstore/core';
import { execFileSync } from 'node:child_process';
import { createHash, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CERTIFICATE_ANNOTATION,
  sha256,
  signArtifact,
  type SignatureStore,
} from '../../src/protocol/oci-signature.js';

export interface Leaf {
  key: KeyObject;
  certPem: string;
}

export interface SigstoreFixture {
  dir: string;
  /** The CA certificate (PEM), the chain a Fulcio double sends after the leaf. */
  caPem: string;
  trustedRootJson: string;
  trustedRootPath: string;
  /** A leaf certificate for `identity` (e-mail or URI) from `issuer`, valid from now for 10 minutes. */
  leaf(options: {
    identity: string;
    issuer: string;
    repositoryUri?: string;
    validFromSeconds?: number;
  }): Leaf;
  /**
   * A certificate for someone else's `publicKeyPem` (what a Fulcio double issues), valid from a
   * minute ago for a day.
   */
  certify(publicKeyPem: string, identity: string, issuer: string): string;
  /** A Rekor entry for the (base64, canonical JSON) `body`, with its SET (what a Rekor double answers). */
  logEntry(
    body: string,
    options?: { integratedTime?: number; logKey?: KeyObject },
  ): {
    SignedEntryTimestamp: string;
    Payload: { body: string; integratedTime: number; logIndex: number; logID: string };
  };
  /** Annotations of a keyless signature layer: the certificate, chain and Rekor entry. */
  annotate(
    leaf: Leaf,
    options?: { integratedTime?: number; logKey?: KeyObject },
  ): (payload: Buffer, signature: string) => Promise<Record<string, string>>;
  /**
   * Signs `digest` keyless as `cosign sign --new-bundle-format` does: a v0.3 Sigstore bundle (DSSE
   * envelope with an in-toto statement naming `subjectDigest`, default `digest`; a dsse Rekor entry
   * with SET and a one-leaf inclusion proof under a signed checkpoint), stored as an OCI artifact
   * whose subject is `digest`, listed under the referrers tag scheme (`sha256-<hex>`).
   */
  signBundle(
    store: SignatureStore,
    dockerReference: string,
    digest: string,
    leaf: Leaf,
    options?: { subjectDigest?: string },
  ): Promise<void>;
  /** Signs `digest` keyless and stores it in cosign's `.sig` layout. */
  sign(
    store: SignatureStore,
    dockerReference: string,
    digest: string,
    leaf: Leaf,
    options?: { integratedTime?: number; logKey?: KeyObject },
  ): Promise<void>;
  close(): void;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

function spkiDer(key: KeyObject): Buffer {
  return key.export({ type: 'spki', format: 'der' });
}

function derOfPem(pem: string): Buffer {
  return Buffer.from(pem.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, ''), 'base64');
}

/** Fulcio's extensions for an `openssl -extfile`: SAN, code signing, issuer (v1 and v2), repository. */
function fulcioExtensions(identity: string, issuer: string, repositoryUri?: string): string {
  const san = identity.includes('@') && !identity.includes('://') ? `email:${identity}` : `URI:${identity}`;
  return [
    `subjectAltName=critical,${san}`,
    'keyUsage=critical,digitalSignature',
    'extendedKeyUsage=codeSigning',
    `1.3.6.1.4.1.57264.1.1=DER:${Buffer.from(issuer)
      .toString('hex')
      .replace(/(..)(?!$)/g, '$1:')}`,
    `1.3.6.1.4.1.57264.1.8=ASN1:UTF8String:${issuer}`,
    ...(repositoryUri === undefined ? [] : [`1.3.6.1.4.1.57264.1.12=ASN1:UTF8String:${repositoryUri}`]),
  ].join('\n');
}

/** A CA, a log key and the trusted root naming them (validity from 2020 on). */
export function createSigstoreFixture(): SigstoreFixture {
  const dir = mkdtempSync(join(tmpdir(), 'skep-sigstore-'));
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ca.key'], dir);
  openssl(
    [
      'req',
      '-x509',
      '-new',
      '-key',
      'ca.key',
      '-subj',
      '/O=skep-test/CN=test-fulcio',
      '-days',
      '3650',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
      '-out',
      'ca.pem',
    ],
    dir,
  );
  const caPem = readFileSync(join(dir, 'ca.pem'), 'utf8');
  const log = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const logId = createHash('sha256').update(spkiDer(log.publicKey)).digest();
  const root = {
    mediaType: 'application/vnd.dev.sigstore.trustedroot+json;version=0.1',
    tlogs: [
      {
        baseUrl: 'https://rekor.test.invalid',
        hashAlgorithm: 'SHA2_256',
        publicKey: {
          rawBytes: spkiDer(log.publicKey).toString('base64'),
          keyDetails: 'PKIX_ECDSA_P256_SHA_256',
          validFor: { start: '2020-01-01T00:00:00Z' },
        },
        logId: { keyId: logId.toString('base64') },
      },
    ],
    certificateAuthorities: [
      {
        subject: { organization: 'skep-test', commonName: 'test-fulcio' },
        uri: 'https://fulcio.test.invalid',
        certChain: { certificates: [{ rawBytes: derOfPem(caPem).toString('base64') }] },
        validFor: { start: '2020-01-01T00:00:00Z' },
      },
    ],
    ctlogs: [],
    timestampAuthorities: [],
  };
  const trustedRootJson = JSON.stringify(root, null, 2);
  const trustedRootPath = join(dir, 'trusted_root.json');
  writeFileSync(trustedRootPath, trustedRootJson);
  let serial = 0;

  const leaf: SigstoreFixture['leaf'] = ({ identity, issuer, repositoryUri, validFromSeconds = -60 }) => {
    serial += 1;
    const pair = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const name = `leaf${serial}`;
    writeFileSync(join(dir, `${name}.key`), pair.privateKey.export({ type: 'pkcs8', format: 'pem' }));
    // Fulcio's short validity (10 minutes) from `validFromSeconds` on; `openssl ca` would do
    // dates too, but `x509 -req` with a `-days` window is enough when the start is now.
    const san = identity.includes('@') && !identity.includes('://') ? `email:${identity}` : `URI:${identity}`;
    const ext = [
      `subjectAltName=critical,${san}`,
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=codeSigning',
      `1.3.6.1.4.1.57264.1.1=DER:${Buffer.from(issuer)
        .toString('hex')
        .replace(/(..)(?!$)/g, '$1:')}`,
      `1.3.6.1.4.1.57264.1.8=ASN1:UTF8String:${issuer}`,
      ...(repositoryUri === undefined ? [] : [`1.3.6.1.4.1.57264.1.12=ASN1:UTF8String:${repositoryUri}`]),
    ].join('\n');
    writeFileSync(join(dir, `${name}.ext`), ext);
    openssl(['req', '-new', '-key', `${name}.key`, '-subj', '/O=sigstore.dev', '-out', `${name}.csr`], dir);
    const start = new Date(Date.now() + validFromSeconds * 1000);
    const end = new Date(start.getTime() + 10 * 60 * 1000);
    const asn1Time = (d: Date) => `${d.toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`;
    // `openssl ca` is the OpenSSL 3.0 tool that sets exact start and end dates.
    writeFileSync(join(dir, `${name}.index`), '');
    writeFileSync(
      join(dir, `${name}.cnf`),
      [
        '[ca]',
        'default_ca=test',
        '[test]',
        `database=${name}.index`,
        `new_certs_dir=.`,
        'certificate=ca.pem',
        'private_key=ca.key',
        'default_md=sha256',
        'policy=any',
        `serial=${name}.serial`,
        'copy_extensions=none',
        'unique_subject=no',
        '[any]',
        'organizationName=optional',
      ].join('\n'),
    );
    writeFileSync(join(dir, `${name}.serial`), `${(1000 + serial).toString(16).padStart(4, '0')}\n`);
    openssl(
      [
        'ca',
        '-batch',
        '-config',
        `${name}.cnf`,
        '-in',
        `${name}.csr`,
        '-out',
        `${name}.pem`,
        '-extfile',
        `${name}.ext`,
        '-startdate',
        asn1Time(start),
        '-enddate',
        asn1Time(end),
        '-notext',
      ],
      dir,
    );
    return { key: pair.privateKey, certPem: readFileSync(join(dir, `${name}.pem`), 'utf8') };
  };

  const certify: SigstoreFixture['certify'] = (publicKeyPem, identity, issuer) => {
    serial += 1;
    const name = `cert${serial}`;
    writeFileSync(join(dir, `${name}.pub`), publicKeyPem);
    writeFileSync(join(dir, `${name}.ext`), fulcioExtensions(identity, issuer));
    // `x509 -req` wants a CSR; the certified key is the forced one, not the CSR's.
    openssl(['req', '-new', '-key', 'ca.key', '-subj', '/O=sigstore.dev', '-out', `${name}.csr`], dir);
    openssl(
      [
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        'ca.pem',
        '-CAkey',
        'ca.key',
        '-CAcreateserial',
        '-force_pubkey',
        `${name}.pub`,
        '-extfile',
        `${name}.ext`,
        '-days',
        '1',
        '-out',
        `${name}.pem`,
      ],
      dir,
    );
    return readFileSync(join(dir, `${name}.pem`), 'utf8');
  };

  const logEntry: SigstoreFixture['logEntry'] = (body, options = {}) => {
    serial += 1;
    const entry = {
      body,
      integratedTime: options.integratedTime ?? Math.floor(Date.now() / 1000),
      logIndex: serial,
      logID: logId.toString('hex'),
    };
    const set = sign('sha256', Buffer.from(json.canonicalize(entry)), options.logKey ?? log.privateKey);
    return { SignedEntryTimestamp: set.toString('base64'), Payload: entry };
  };

  const annotate: SigstoreFixture['annotate'] =
    (l, options = {}) =>
    async (payload, signature) => {
      const body = Buffer.from(
        json.canonicalize({
          apiVersion: '0.0.1',
          kind: 'hashedrekord',
          spec: {
            data: {
              hash: { algorithm: 'sha256', value: createHash('sha256').update(payload).digest('hex') },
            },
            signature: {
              content: signature,
              publicKey: { content: Buffer.from(l.certPem).toString('base64') },
            },
          },
        }),
      ).toString('base64');
      return {
        [CERTIFICATE_ANNOTATION]: l.certPem,
        'dev.sigstore.cosign/chain': caPem,
        'dev.sigstore.cosign/bundle': JSON.stringify(logEntry(body, options)),
      };
    };

  const signBundle: SigstoreFixture['signBundle'] = async (
    store,
    dockerReference,
    digest,
    l,
    options = {},
  ) => {
    const statement = Buffer.from(
      JSON.stringify({
        _type: 'https://in-toto.io/Statement/v1',
        subject: [
          {
            name: dockerReference,
            digest: { sha256: (options.subjectDigest ?? digest).replace('sha256:', '') },
          },
        ],
        predicateType: 'https://sigstore.dev/cosign/sign/v1',
        predicate: {},
      }),
    );
    const payloadType = 'application/vnd.in-toto+json';
    const sig = sign('sha256', dsse.preAuthEncoding(payloadType, statement), l.key).toString('base64');
    const envelope = { payload: statement.toString('base64'), payloadType, signatures: [{ sig, keyid: '' }] };
    const hex = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
    const body = Buffer.from(
      json.canonicalize({
        apiVersion: '0.0.1',
        kind: 'dsse',
        spec: {
          envelopeHash: { algorithm: 'sha256', value: hex(JSON.stringify(envelope)) },
          payloadHash: { algorithm: 'sha256', value: hex(statement) },
          signatures: [{ signature: sig, verifier: Buffer.from(l.certPem).toString('base64') }],
        },
      }),
    );
    const entry = logEntry(body.toString('base64'));
    // A one-leaf tree: the root is the RFC 6962 leaf hash, under a checkpoint the log key signs.
    const root = createHash('sha256')
      .update(Buffer.concat([Buffer.from([0]), body]))
      .digest();
    const note = `rekor.test.invalid - 1\n1\n${root.toString('base64')}\n`;
    const noteSig = Buffer.concat([logId.subarray(0, 4), sign('sha256', Buffer.from(note), log.privateKey)]);
    const bundle = Buffer.from(
      JSON.stringify({
        mediaType: 'application/vnd.dev.sigstore.bundle.v0.3+json',
        verificationMaterial: {
          certificate: { rawBytes: derOfPem(l.certPem).toString('base64') },
          tlogEntries: [
            {
              logIndex: String(entry.Payload.logIndex),
              logId: { keyId: logId.toString('base64') },
              kindVersion: { kind: 'dsse', version: '0.0.1' },
              integratedTime: String(entry.Payload.integratedTime),
              inclusionPromise: { signedEntryTimestamp: entry.SignedEntryTimestamp },
              inclusionProof: {
                logIndex: '0',
                rootHash: root.toString('base64'),
                treeSize: '1',
                hashes: [],
                checkpoint: {
                  envelope: `${note}\n\u2014 rekor.test.invalid ${noteSig.toString('base64')}\n`,
                },
              },
              canonicalizedBody: body.toString('base64'),
            },
          ],
          timestampVerificationData: {},
        },
        dsseEnvelope: envelope,
      }),
    );
    await storeBundleReferrer(store, digest, bundle);
  };

  return {
    dir,
    caPem,
    trustedRootJson,
    trustedRootPath,
    leaf,
    certify,
    logEntry,
    annotate,
    signBundle,
    async sign(store, dockerReference, digest, l, options) {
      await signArtifact(store, dockerReference, digest, l.key, annotate(l, options));
    },
    close() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const BUNDLE_TYPE = 'application/vnd.dev.sigstore.bundle.v0.3+json';

/**
 * Stores a Sigstore bundle beside `digest` as `cosign sign --new-bundle-format` does: an OCI 1.1
 * artifact manifest whose subject is the image, listed in the referrers tag scheme's index
 * (`sha256-<hex>`), so that registries without the referrers API serve it too.
 */
export async function storeBundleReferrer(
  store: SignatureStore,
  digest: string,
  bundle: Buffer,
): Promise<void> {
  const empty = Buffer.from('{}');
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      artifactType: BUNDLE_TYPE,
      config: { mediaType: 'application/vnd.oci.empty.v1+json', digest: sha256(empty), size: 2 },
      layers: [{ mediaType: BUNDLE_TYPE, digest: sha256(bundle), size: bundle.length }],
      subject: { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest, size: 0 },
    }),
  );
  await store.putBlob(empty, sha256(empty));
  await store.putBlob(bundle, sha256(bundle));
  await store.putManifest(sha256(manifest), manifest, 'application/vnd.oci.image.manifest.v1+json');
  const index = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.index.v1+json',
      manifests: [
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          digest: sha256(manifest),
          size: manifest.length,
          artifactType: BUNDLE_TYPE,
        },
      ],
    }),
  );
  await store.putManifest(digest.replace(':', '-'), index, 'application/vnd.oci.image.index.v1+json');
}
