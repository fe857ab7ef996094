/**
 * Signing skill artifacts on push and verifying them on install, key-based and cosign-compatible
 * (see `protocol/oci-signature.ts` for the format: a `sha256-<hex>.sig` tag beside the artifact).
 *
 * Keys the user trusts (their policy): the public keys passed with the install, every `*.pub` and
 * `*.pem` file in `<config dir>/trusted-keys/`, and the files or folders listed in
 * `SKEP_SKILLS_TRUSTED_KEYS` (separated by the path delimiter). The signer recorded in the lock
 * file is the key's fingerprint. Keyless (Fulcio certificate + Rekor entry) is not built: a push
 * asking for it gets a 501 that says so.
 *
 * The signature module is loaded lazily: only a signed push or an install from a registry loads it.
 */
import type { KeyObject } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { resolvePaths } from '../config/index.js';
import { isSkepError, SkepError } from '../shared/index.js';
import type { SkillsContext } from './context.js';
import type { OciSession } from './oci-client.js';
import type { OciRef } from './oci-ref.js';

export const TRUSTED_KEYS_ENV = 'SKEP_SKILLS_TRUSTED_KEYS';
/** cosign's variable for the passphrase of an encrypted private key. */
export const KEY_PASSWORD_ENV = 'COSIGN_PASSWORD';
/** The `certIssuer` a key-based signer is recorded with in the lock file's `provenance`. */
export const KEY_SIGNER_ISSUER = 'skep:public-key';

const load = () => import('../protocol/oci-signature.js');
type SignatureModule = Awaited<ReturnType<typeof load>>;
type SignatureStore = Parameters<SignatureModule['verifyArtifact']>[0];
let loaded: Promise<SignatureModule> | undefined;
export function signatureModule(): Promise<SignatureModule> {
  loaded ??= load();
  return loaded;
}

/** A registry session seen as a signature store: a missing `.sig` tag is "no signature". */
export function signatureStore(session: OciSession): SignatureStore {
  return {
    findManifest: async (tag) => {
      try {
        const m = await session.getManifest(tag);
        return { bytes: m.bytes, digest: m.digest };
      } catch (err) {
        if (isSkepError(err) && err.code === 'not_found') return undefined;
        throw err;
      }
    },
    getBlob: (digest, max) => session.getBlob(digest, max),
    putBlob: (data, digest) => session.putBlob(data, digest),
    putManifest: (tag, bytes, mediaType) => session.putManifest(tag, bytes, mediaType),
  };
}

/** A key given as PEM text or as the path of a PEM file. */
async function keyText(value: string, what: string): Promise<string> {
  if (value.includes('-----BEGIN')) return value;
  try {
    return await readFile(value, 'utf8');
  } catch (err) {
    throw new SkepError(
      'invalid_path',
      `${what}: cannot read "${value}": ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
}

function keyError(err: unknown, what: string): unknown {
  if (err instanceof Error && err.name === 'SignatureError')
    return new SkepError('bad_request', `${what}: ${err.message}`);
  return err;
}

/** Loads the signing key of a push (validated before anything is pushed). */
export async function loadSigningKey(ctx: SkillsContext, key: string): Promise<KeyObject> {
  const sig = await signatureModule();
  const text = await keyText(key, 'key');
  try {
    return sig.loadPrivateKey(text, ctx.env()[KEY_PASSWORD_ENV]);
  } catch (err) {
    throw keyError(err, 'key');
  }
}

async function pemFilesIn(path: string): Promise<string[]> {
  try {
    const entries = await readdir(path, { withFileTypes: true });
    return entries
      .filter((e) => e.isFile() && /\.(pub|pem)$/.test(e.name))
      .map((e) => join(path, e.name))
      .sort();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return [];
    if (code === 'ENOTDIR') return [path];
    throw err;
  }
}

/** The public keys the user trusts for this install: given ones, the config folder, the variable. */
export async function trustedKeys(ctx: SkillsContext, given: readonly string[] = []): Promise<KeyObject[]> {
  const sig = await signatureModule();
  const env = ctx.env();
  const sources: { value: string; what: string }[] = given.map((value) => ({ value, what: 'public key' }));
  for (const file of await pemFilesIn(join(resolvePaths(env).configDir, 'trusted-keys')))
    sources.push({ value: file, what: 'trusted key file' });
  for (const item of (env[TRUSTED_KEYS_ENV] ?? '').split(delimiter).filter((p) => p !== '')) {
    const files = await pemFilesIn(item);
    if (files.length === 0)
      throw new SkepError('invalid_config', `${TRUSTED_KEYS_ENV}: "${item}" holds no *.pub or *.pem file`);
    for (const file of files) sources.push({ value: file, what: TRUSTED_KEYS_ENV });
  }
  const keys: KeyObject[] = [];
  for (const s of sources) {
    try {
      keys.push(sig.loadPublicKey(await keyText(s.value, s.what)));
    } catch (err) {
      throw keyError(err, `${s.what} ${s.value.includes('-----BEGIN') ? '(inline PEM)' : `"${s.value}"`}`);
    }
  }
  return keys;
}

/** What the signature check of one install found. */
export type SkillSignature =
  { status: 'verified'; signer: string } | { status: 'unsigned' } | { status: 'invalid'; reason: string };

/** Looks up and verifies the signature of the artifact `digest` in `ref`'s repository. */
export async function checkSignature(
  ctx: SkillsContext,
  ref: OciRef,
  digest: string,
  keys: readonly KeyObject[],
): Promise<SkillSignature> {
  const sig = await signatureModule();
  let outcome;
  try {
    outcome = await sig.verifyArtifact(signatureStore(ctx.session(ref, false)), digest, keys);
  } catch (err) {
    if (err instanceof Error && err.name === 'SignatureError')
      return { status: 'invalid', reason: err.message };
    throw err;
  }
  if (outcome.status === 'verified') return { status: 'verified', signer: outcome.signer };
  if (outcome.status === 'unsigned') return outcome;
  return { status: 'invalid', reason: outcome.reason };
}

/** The message of a push that asks for keyless signing. */
export function keylessRefusal(tokenGiven: boolean): SkepError {
  return new SkepError(
    'not_implemented',
    tokenGiven
      ? 'keyless signing (a Fulcio certificate for the OIDC identity token, logged in Rekor) is not supported by Skep yet; sign with a key instead (key: a PKCS#8 ECDSA P-256 PEM, e.g. `skep skill push --key cosign.key`)'
      : 'keyless signing needs an OIDC identity token and Skep does not support it yet; sign with a key (`--key <private key PEM>`) or push with --no-sign',
  );
}
