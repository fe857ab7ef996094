/**
 * Signing keys for access tokens. The first configured key signs; the others only verify,
 * which is how keys rotate: add the new key in front, keep the old one as a fallback until
 * every token it signed has expired, then remove it. The algorithm follows the key type
 * (RSA ≥ 2048 → RS256; EC P-256/384/521 → ES256/384/512; Ed25519 → EdDSA) and the `kid` is
 * the RFC 7638 thumbprint. Without configured keys an ephemeral ES256 key is generated.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, type JWK } from 'jose';
import { SkepError } from '../shared/index.js';

export interface SigningKey {
  kid: string;
  alg: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  publicJwk: JWK;
}

export interface KeySet {
  /** The key that signs new tokens. */
  current: SigningKey;
  /** Every key that verifies, current first. */
  all: SigningKey[];
  byKid: Map<string, SigningKey>;
  ephemeral: boolean;
}

function algorithmFor(key: KeyObject, source: string): string {
  const type = key.asymmetricKeyType;
  if (type === 'rsa') {
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits < 2048)
      throw new SkepError('invalid_config', `signing key ${source}: RSA keys need at least 2048 bits`);
    return 'RS256';
  }
  if (type === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    if (curve === 'prime256v1' || curve === 'P-256') return 'ES256';
    if (curve === 'secp384r1' || curve === 'P-384') return 'ES384';
    if (curve === 'secp521r1' || curve === 'P-521') return 'ES512';
    throw new SkepError('invalid_config', `signing key ${source}: unsupported EC curve ${curve}`);
  }
  if (type === 'ed25519') return 'EdDSA';
  throw new SkepError(
    'invalid_config',
    `signing key ${source}: unsupported key type ${type} (use RSA, EC or Ed25519)`,
  );
}

async function toSigningKey(privateKey: KeyObject, source: string): Promise<SigningKey> {
  const alg = algorithmFor(privateKey, source);
  const publicKey = createPublicKey(privateKey);
  const jwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(jwk, 'sha256');
  return { kid, alg, privateKey, publicKey, publicJwk: { ...jwk, kid, alg, use: 'sig' } };
}

function parsePrivateKey(text: string, source: string): KeyObject {
  try {
    const trimmed = text.trim();
    if (trimmed.startsWith('{')) return createPrivateKey({ key: JSON.parse(trimmed), format: 'jwk' });
    return createPrivateKey(trimmed);
  } catch (err) {
    throw new SkepError('invalid_config', `signing key ${source} is not a PEM or JWK private key`, {
      cause: err,
    });
  }
}

/** Builds the key set from key texts (first signs); generates an ephemeral key when empty. */
export async function loadKeySet(keys: { source: string; text: string }[]): Promise<KeySet> {
  const all: SigningKey[] = [];
  let ephemeral = false;
  if (keys.length === 0) {
    const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    all.push(await toSigningKey(pair.privateKey, 'ephemeral'));
    ephemeral = true;
  } else {
    for (const k of keys) all.push(await toSigningKey(parsePrivateKey(k.text, k.source), k.source));
  }
  const byKid = new Map(all.map((k) => [k.kid, k]));
  return { current: all[0] as SigningKey, all, byKid, ephemeral };
}
