/**
 * Keyless signing, as `cosign sign` does it without a key: an ephemeral ECDSA P-256 key, a
 * short-lived certificate for it from Fulcio bound to an OIDC identity token, and the signature
 * logged in Rekor. The result is what `sigstore-verify.ts` reads from cosign's `.sig` layer: the
 * leaf certificate, the chain, and the Rekor entry with its signed entry timestamp.
 *
 * - Fulcio API v2 (`POST /api/v2/signingCert`): the token as the credential, the public key as
 *   PEM, and the proof of possession — a signature with the key over the token's subject (the
 *   `email` claim for Google and the public-good Dex issuer, else `sub`, as the Sigstore clients
 *   do). The answer is a PEM chain, leaf first.
 * - Rekor API v1 (`POST /api/v1/log/entries`): a `hashedrekord` 0.0.1 entry (the payload's SHA-256,
 *   the signature, the leaf certificate). The answer maps the entry's UUID to its body, integrated
 *   time, log ID, log index and `verification.signedEntryTimestamp`.
 *
 * The token is sent to Fulcio only and never logged or put in an error. Loaded lazily, only by
 * a keyless push.
 */
import { createHash, generateKeyPairSync, type KeyObject, sign, X509Certificate } from 'node:crypto';

export const PUBLIC_FULCIO_URL = 'https://fulcio.sigstore.dev';
export const PUBLIC_REKOR_URL = 'https://rekor.sigstore.dev';
const DEFAULT_TIMEOUT_MS = 30_000;

/** Why keyless signing failed; `kind` lets the caller pick the status (bad token vs. service). */
export class KeylessSigningError extends Error {
  constructor(
    readonly kind: 'bad_token' | 'service',
    message: string,
  ) {
    super(message);
    this.name = 'KeylessSigningError';
  }
}

export interface KeylessSigningOptions {
  identityToken: string;
  fulcioUrl: string;
  rekorUrl: string;
  fetch?: typeof fetch;
  timeoutMs?: number;
}

/** A key and certificate ready to sign, and the annotations to store beside each signature. */
export interface KeylessSigner {
  key: KeyObject;
  /** The certificate's identity (its e-mail or URI subject alternative name). */
  identity: string;
  certificatePem: string;
  chainPem: string;
  /** Logs `signature` (base64, over `payload`) in Rekor; returns cosign's layer annotations. */
  annotate(payload: Buffer, signature: string): Promise<Record<string, string>>;
}

/** The subject Fulcio expects the proof of possession over (see the module comment). */
export function tokenSubject(token: string): string {
  const part = token.split('.')[1];
  let claims: { iss?: unknown; sub?: unknown; email?: unknown };
  try {
    claims = JSON.parse(Buffer.from(part ?? '', 'base64url').toString('utf8')) as typeof claims;
  } catch {
    throw new KeylessSigningError('bad_token', 'the identity token is not a JWT (header.payload.signature)');
  }
  const emailIssuers = ['https://accounts.google.com', 'https://oauth2.sigstore.dev/auth'];
  const subject =
    typeof claims.iss === 'string' && emailIssuers.includes(claims.iss) ? claims.email : claims.sub;
  if (typeof subject !== 'string' || subject === '')
    throw new KeylessSigningError('bad_token', 'the identity token names no subject (sub or email claim)');
  return subject;
}

async function postJson(
  options: KeylessSigningOptions,
  url: string,
  body: unknown,
  what: string,
): Promise<unknown> {
  const doFetch = options.fetch ?? fetch;
  let res: Response;
  try {
    res = await doFetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(options.timeoutMs ?? DEFAULT_TIMEOUT_MS),
    });
  } catch (err) {
    throw new KeylessSigningError('service', `${what} at ${url} is unreachable: ${(err as Error).message}`);
  }
  const text = await res.text();
  if (!res.ok) {
    // Fulcio answers a refused token with 401/403 and a short reason; pass the reason on.
    const reason = text.slice(0, 300).replace(/\s+/g, ' ');
    throw new KeylessSigningError(
      res.status === 401 || res.status === 403 ? 'bad_token' : 'service',
      `${what} at ${url} answered HTTP ${res.status}${reason === '' ? '' : `: ${reason}`}`,
    );
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new KeylessSigningError('service', `${what} at ${url} answered with something that is not JSON`);
  }
}

interface FulcioAnswer {
  signedCertificateEmbeddedSct?: { chain?: { certificates?: unknown } };
  signedCertificateDetachedSct?: { chain?: { certificates?: unknown } };
}

/** An ephemeral key and its Fulcio certificate; nothing is signed or logged yet. */
export async function keylessSigner(options: KeylessSigningOptions): Promise<KeylessSigner> {
  const subject = tokenSubject(options.identityToken);
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const answer = (await postJson(
    options,
    `${options.fulcioUrl.replace(/\/+$/, '')}/api/v2/signingCert`,
    {
      credentials: { oidcIdentityToken: options.identityToken },
      publicKeyRequest: {
        publicKey: { algorithm: 'ECDSA', content: publicKey.export({ type: 'spki', format: 'pem' }) },
        proofOfPossession: sign('sha256', Buffer.from(subject), privateKey).toString('base64'),
      },
    },
    'Fulcio',
  )) as FulcioAnswer;
  const chain = (answer.signedCertificateEmbeddedSct ?? answer.signedCertificateDetachedSct)?.chain
    ?.certificates;
  if (!Array.isArray(chain) || chain.length === 0 || !chain.every((c) => typeof c === 'string'))
    throw new KeylessSigningError('service', 'Fulcio answered without a certificate chain');
  const [leaf, ...rest] = chain;
  const certificatePem = leaf!;
  let identity: string;
  try {
    const san = new X509Certificate(certificatePem).subjectAltName ?? '';
    identity = /^(?:email|URI):(.*)$/.exec(san.split(', ')[0] ?? '')?.[1] ?? san;
  } catch {
    throw new KeylessSigningError('service', 'Fulcio answered with a certificate that cannot be read');
  }
  return {
    key: privateKey,
    identity,
    certificatePem,
    chainPem: rest.join(''),
    annotate: (payload, signature) =>
      logSignature(options, payload, signature, certificatePem, rest.join('')),
  };
}

interface RekorAnswerEntry {
  body?: unknown;
  integratedTime?: unknown;
  logID?: unknown;
  logIndex?: unknown;
  verification?: { signedEntryTimestamp?: unknown };
}

async function logSignature(
  options: KeylessSigningOptions,
  payload: Buffer,
  signature: string,
  certificatePem: string,
  chainPem: string,
): Promise<Record<string, string>> {
  const answer = (await postJson(
    options,
    `${options.rekorUrl.replace(/\/+$/, '')}/api/v1/log/entries`,
    {
      apiVersion: '0.0.1',
      kind: 'hashedrekord',
      spec: {
        data: { hash: { algorithm: 'sha256', value: createHash('sha256').update(payload).digest('hex') } },
        signature: {
          content: signature,
          publicKey: { content: Buffer.from(certificatePem).toString('base64') },
        },
      },
    },
    'Rekor',
  )) as Record<string, RekorAnswerEntry>;
  const entry = Object.values(answer)[0];
  const set = entry?.verification?.signedEntryTimestamp;
  if (
    entry === undefined ||
    typeof entry.body !== 'string' ||
    typeof entry.integratedTime !== 'number' ||
    typeof entry.logID !== 'string' ||
    typeof entry.logIndex !== 'number' ||
    typeof set !== 'string'
  )
    throw new KeylessSigningError(
      'service',
      'Rekor answered without a complete log entry (body, time, index, SET)',
    );
  return {
    'dev.sigstore.cosign/certificate': certificatePem,
    'dev.sigstore.cosign/chain': chainPem,
    'dev.sigstore.cosign/bundle': JSON.stringify({
      SignedEntryTimestamp: set,
      Payload: {
        body: entry.body,
        integratedTime: entry.integratedTime,
        logIndex: entry.logIndex,
        logID: entry.logID,
      },
    }),
  };
}
