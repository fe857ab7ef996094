/**
 * A private Sigstore as today's public-good instance signs with: besides the Fulcio double of
 * `sigstore-fixture.ts` (its CA and leaf certificates), a Rekor v2 log (an Ed25519 checkpoint
 * key, entries `dsse` 0.0.2 with an inclusion proof under a signed checkpoint, no SET and no
 * integrated time), a Rekor v1 log (ECDSA P-256, entries `dsse` 0.0.1 with a SET) and an RFC 3161
 * timestamp authority (openssl `ts -reply` with a key whose certificate has the timeStamping
 * extended key usage), all named by the trusted root it writes. A second TSA, not in the root,
 * stands in for an untrusted one.
 *
 * Logs (C2SP tlog-checkpoint and signed-note; RFC 6962 §2.1 hashes): each entry is the second
 * leaf of a two-leaf tree, so its proof is one sibling hash. No network: everything a verifier
 * checks offline is made here.
 */
import { dsse, json } from '@sigstore/core';
import { execFileSync } from 'node:child_process';
import { createHash, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type SignatureStore } from '../../src/protocol/oci-signature.js';
import {
  createSigstoreFixture,
  type Leaf,
  type SigstoreFixture,
  storeBundleReferrer,
} from './sigstore-fixture.js';

const IN_TOTO = 'application/vnd.in-toto+json';
const BUNDLE_TYPE = 'application/vnd.dev.sigstore.bundle.v0.3+json';

export interface V2BundleOptions {
  /** The Rekor entry: `v2` (dsse 0.0.2, proof only, the default) or `v1` (dsse 0.0.1 with a SET and a proof). */
  log?: 'v2' | 'v1';
  /** RFC 3161 timestamps over the signature: from the trusted TSA (default), another one, or none. */
  tsa?: 'trusted' | 'untrusted' | 'none';
  /** An integrated time written on the entry (a v2 entry has none; nothing signs it there). */
  integratedTime?: number;
  /** Leave the v1 entry's SET out (a proof alone does not sign the integrated time). */
  noSet?: boolean;
  /** `checkpoint`: the signed checkpoint's root hash altered after signing; `proof`: a wrong sibling hash. */
  tamper?: 'checkpoint' | 'proof';
  /** The digest the in-toto statement names (default: the one signed). */
  subjectDigest?: string;
  /** The certificate the bundle carries, when not the leaf's (the log entry still names the leaf's). */
  certificatePem?: string;
}

export interface SigstoreV2Fixture {
  /** The Fulcio double: `leaf(...)` makes short-lived certificates. */
  base: SigstoreFixture;
  trustedRootJson: string;
  trustedRootPath: string;
  /** A v0.3 Sigstore bundle (cosign v3's image signature: DSSE in-toto statement) for `digest`. */
  bundle(leaf: Leaf, digest: string, options?: V2BundleOptions): Buffer;
  /** Stores `bundle` beside `digest` as cosign does: an OCI artifact under the referrers tag scheme. */
  storeBundle(store: SignatureStore, digest: string, bundle: Buffer): Promise<void>;
  close(): void;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

function derOfPem(pem: string): Buffer {
  return Buffer.from(pem.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, ''), 'base64');
}

const b64 = (b: Buffer) => b.toString('base64');
const leafHash = (b: Buffer) =>
  createHash('sha256')
    .update(Buffer.concat([Buffer.from([0]), b]))
    .digest();
const nodeHash = (l: Buffer, r: Buffer) =>
  createHash('sha256')
    .update(Buffer.concat([Buffer.from([1]), l, r]))
    .digest();

interface Log {
  origin: string;
  logId: Buffer;
  key: KeyObject;
  /** The trusted root's `tlogs` item. */
  instance: object;
}

/**
 * A Rekor v1 log (ECDSA P-256, log ID = SHA-256 of the SPKI) or a Rekor v2 log (Ed25519, log ID
 * = the signed-note key ID, SHA-256(origin || 0x0A || 0x01 || key): what the public-good root
 * lists for `log2025-1`, so that a checkpoint signature's 4-byte key hint finds it).
 */
function createLog(origin: string, version: 'v1' | 'v2'): Log {
  const pair =
    version === 'v1'
      ? generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
      : generateKeyPairSync('ed25519');
  const spki = pair.publicKey.export({ type: 'spki', format: 'der' });
  const logId =
    version === 'v1'
      ? createHash('sha256').update(spki).digest()
      : createHash('sha256')
          .update(Buffer.concat([Buffer.from(`${origin}\n`), Buffer.from([1]), spki.subarray(-32)]))
          .digest();
  return {
    origin,
    logId,
    key: pair.privateKey,
    instance: {
      baseUrl: `https://${origin}`,
      hashAlgorithm: 'SHA2_256',
      publicKey: {
        rawBytes: b64(spki),
        keyDetails: version === 'v1' ? 'PKIX_ECDSA_P256_SHA_256' : 'PKIX_ED25519',
        validFor: { start: '2020-01-01T00:00:00Z' },
      },
      logId: { keyId: b64(logId) },
    },
  };
}

/** A timestamp authority: a CA and a signing certificate with the timeStamping EKU (RFC 3161 §2.3). */
function createTsa(dir: string, name: string): { chain: Buffer[]; stamp(data: Buffer): Buffer } {
  const d = join(dir, name);
  mkdirSync(d);
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ca.key'], d);
  openssl(
    [
      'req',
      '-x509',
      '-new',
      '-key',
      'ca.key',
      '-subj',
      `/O=skep-test/CN=${name}-root`,
      '-days',
      '3650',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
      '-out',
      'ca.pem',
    ],
    d,
  );
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'tsa.key'], d);
  openssl(['req', '-new', '-key', 'tsa.key', '-subj', `/O=skep-test/CN=${name}`, '-out', 'tsa.csr'], d);
  writeFileSync(
    join(d, 'tsa.ext'),
    'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=critical,timeStamping\n',
  );
  // Backdated a minute by the CA's clock is not possible with `x509 -req`; the stamp is made
  // after this, so its time is inside the certificate anyway.
  openssl(
    [
      'x509',
      '-req',
      '-in',
      'tsa.csr',
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-extfile',
      'tsa.ext',
      '-days',
      '365',
      '-out',
      'tsa.pem',
    ],
    d,
  );
  writeFileSync(join(d, 'serial'), '01\n');
  writeFileSync(
    join(d, 'tsa.cnf'),
    [
      '[tsa]',
      'default_tsa=skep',
      '[skep]',
      `serial=${join(d, 'serial')}`,
      `signer_cert=${join(d, 'tsa.pem')}`,
      `signer_key=${join(d, 'tsa.key')}`,
      'signer_digest=sha256',
      'default_policy=1.3.6.1.4.1.57264.2',
      'digests=sha256',
      'accuracy=secs:1',
      'ess_cert_id_alg=sha256',
    ].join('\n'),
  );
  let n = 0;
  return {
    chain: [
      derOfPem(readFileSync(join(d, 'tsa.pem'), 'utf8')),
      derOfPem(readFileSync(join(d, 'ca.pem'), 'utf8')),
    ],
    stamp(data) {
      n += 1;
      writeFileSync(join(d, `data${n}`), data);
      openssl(['ts', '-query', '-data', `data${n}`, '-sha256', '-cert', '-out', `q${n}.tsq`], d);
      openssl(['ts', '-reply', '-config', 'tsa.cnf', '-queryfile', `q${n}.tsq`, '-out', `r${n}.tsr`], d);
      return readFileSync(join(d, `r${n}.tsr`));
    },
  };
}

/** The C2SP signed note of a checkpoint for a tree of `size` with `root`, signed by `log`. */
function checkpoint(log: Log, size: number, root: Buffer): string {
  const note = `${log.origin}\n${size}\n${b64(root)}\n`;
  // Ed25519 signs the note itself; ECDSA signs its SHA-256 (Rekor v1's checkpoints).
  const sig =
    log.key.asymmetricKeyType === 'ed25519'
      ? sign(null, Buffer.from(note), log.key)
      : sign('sha256', Buffer.from(note), log.key);
  return `${note}\n\u2014 ${log.origin} ${b64(Buffer.concat([log.logId.subarray(0, 4), sig]))}\n`;
}

export function createSigstoreV2Fixture(): SigstoreV2Fixture {
  const base = createSigstoreFixture();
  const v1 = createLog('rekor-v1.test.invalid', 'v1');
  const v2 = createLog('log2025-1.rekor-v2.test.invalid', 'v2');
  const tsa = createTsa(base.dir, 'test-tsa');
  const untrusted = createTsa(base.dir, 'other-tsa');
  const root = JSON.parse(base.trustedRootJson) as Record<string, unknown>;
  root['tlogs'] = [v1.instance, v2.instance];
  root['timestampAuthorities'] = [
    {
      subject: { organization: 'skep-test', commonName: 'test-tsa' },
      uri: 'https://tsa.test.invalid',
      certChain: { certificates: tsa.chain.map((c) => ({ rawBytes: b64(c) })) },
      validFor: { start: '2020-01-01T00:00:00Z' },
    },
  ];
  const trustedRootJson = JSON.stringify(root, null, 2);
  const trustedRootPath = join(base.dir, 'trusted_root_v2.json');
  writeFileSync(trustedRootPath, trustedRootJson);
  const sibling = leafHash(Buffer.from('an earlier entry'));

  /** The tlog entry for `body` in a two-leaf tree (index 1), as the bundle lists it. */
  const tlogEntry = (body: Buffer, options: V2BundleOptions) => {
    const v = options.log ?? 'v2';
    const log = v === 'v1' ? v1 : v2;
    const root = nodeHash(sibling, leafHash(body));
    let envelope = checkpoint(log, 2, root);
    if (options.tamper === 'checkpoint')
      envelope = envelope.replace(b64(root), b64(createHash('sha256').update('another tree').digest()));
    const integratedTime = options.integratedTime ?? (v === 'v1' ? Math.floor(Date.now() / 1000) : 0);
    const set =
      v === 'v1' && options.noSet !== true
        ? sign(
            'sha256',
            Buffer.from(
              json.canonicalize({
                body: b64(body),
                integratedTime,
                logIndex: 1,
                logID: log.logId.toString('hex'),
              }),
            ),
            log.key,
          )
        : undefined;
    return {
      logIndex: '1',
      logId: { keyId: b64(log.logId) },
      kindVersion: { kind: 'dsse', version: v === 'v1' ? '0.0.1' : '0.0.2' },
      integratedTime: String(integratedTime),
      ...(set === undefined ? {} : { inclusionPromise: { signedEntryTimestamp: b64(set) } }),
      inclusionProof: {
        logIndex: '1',
        rootHash: b64(root),
        treeSize: '2',
        hashes: [b64(options.tamper === 'proof' ? leafHash(Buffer.from('not the sibling')) : sibling)],
        checkpoint: { envelope },
      },
      canonicalizedBody: b64(body),
    };
  };

  const bundle: SigstoreV2Fixture['bundle'] = (leaf, digest, options = {}) => {
    const statement = Buffer.from(
      JSON.stringify({
        _type: 'https://in-toto.io/Statement/v1',
        subject: [
          { name: 'image', digest: { sha256: (options.subjectDigest ?? digest).replace('sha256:', '') } },
        ],
        predicateType: 'https://sigstore.dev/cosign/sign/v1',
        predicate: {},
      }),
    );
    const sig = sign('sha256', dsse.preAuthEncoding(IN_TOTO, statement), leaf.key);
    const envelope = {
      payload: b64(statement),
      payloadType: IN_TOTO,
      signatures: [{ sig: b64(sig), keyid: '' }],
    };
    const certDer = derOfPem(leaf.certPem);
    const digestOf = (b: Buffer | string) => createHash('sha256').update(b).digest();
    // Rekor v1 dsse 0.0.1 (hex hashes, PEM verifier) and Rekor v2 dsse 0.0.2 (the protobuf-specs
    // rekor/v2 `Entry` as JSON: base64 digests, the DER certificate as the verifier).
    const body = Buffer.from(
      json.canonicalize(
        (options.log ?? 'v2') === 'v1'
          ? {
              apiVersion: '0.0.1',
              kind: 'dsse',
              spec: {
                envelopeHash: {
                  algorithm: 'sha256',
                  value: digestOf(JSON.stringify(envelope)).toString('hex'),
                },
                payloadHash: { algorithm: 'sha256', value: digestOf(statement).toString('hex') },
                signatures: [{ signature: b64(sig), verifier: b64(Buffer.from(leaf.certPem)) }],
              },
            }
          : {
              apiVersion: '0.0.2',
              kind: 'dsse',
              spec: {
                dsseV002: {
                  payloadHash: { algorithm: 'SHA2_256', digest: b64(digestOf(statement)) },
                  signatures: [
                    {
                      content: b64(sig),
                      verifier: {
                        keyDetails: 'PKIX_ECDSA_P256_SHA_256',
                        x509Certificate: { rawBytes: b64(certDer) },
                      },
                    },
                  ],
                },
              },
            },
      ),
    );
    const tsaOption = options.tsa ?? 'trusted';
    // The timestamp's message imprint is over the signature bytes (Sigstore client spec).
    const timestamps =
      tsaOption === 'none'
        ? []
        : [{ signedTimestamp: b64((tsaOption === 'trusted' ? tsa : untrusted).stamp(sig)) }];
    return Buffer.from(
      JSON.stringify({
        mediaType: BUNDLE_TYPE,
        verificationMaterial: {
          certificate: { rawBytes: b64(derOfPem(options.certificatePem ?? leaf.certPem)) },
          tlogEntries: [tlogEntry(body, options)],
          timestampVerificationData: { rfc3161Timestamps: timestamps },
        },
        dsseEnvelope: envelope,
      }),
    );
  };

  const storeBundle: SigstoreV2Fixture['storeBundle'] = storeBundleReferrer;

  return { base, trustedRootJson, trustedRootPath, bundle, storeBundle, close: () => base.close() };
}
