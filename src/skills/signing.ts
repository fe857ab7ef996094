/**
 * Signing skill artifacts on push and verifying them on install, cosign-compatible (see
 * `protocol/oci-signature.ts` for the format: a `sha256-<hex>.sig` tag beside the artifact).
 *
 * What the user trusts (their policy):
 * - keys: the public keys passed with the install, every `*.pub` and `*.pem` file in
 *   `<config dir>/trusted-keys/`, and the files or folders listed in `SKEP_SKILLS_TRUSTED_KEYS`
 *   (separated by the path delimiter); the signer recorded in the lock file is the key's
 *   fingerprint, with the issuer `skep:public-key`;
 * - keyless signers (a Fulcio certificate and its Rekor entry, `protocol/sigstore-verify.ts`):
 *   the Sigstore policy file `<config dir>/sigstore-policy.json`, or the file named by
 *   `SKEP_SKILLS_SIGSTORE_POLICY` — `{"trusted_root": "<path of a trusted_root.json, or
 *   sigstore-public-good>", "identities": [{"signer_identity" | "signer_identity_regexp": "...",
 *   "cert_issuer": "..."}]}` (a relative `trusted_root` path is read beside the policy file;
 *   `sigstore-public-good` is the public-good instance's root, `protocol/sigstore-trusted-root.ts`); the lock file records the
 *   certificate's identity and OIDC issuer.
 *
 * A registry entry that names a skill's signer narrows this policy for the skills it publishes,
 * never widens it (`registry-policy.ts`).
 *
 * Keyless signing on push is not built: a push asking for it gets a message that says how to
 * sign instead.
 *
 * The signature modules are loaded lazily: only a signed push or an install from a registry
 * loads them, and the Sigstore one only when a Sigstore policy exists.
 */
import type { TrustMaterial } from '@sigstore/verify';
import type { KeyObject } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { delimiter, dirname, join, resolve } from 'node:path';
import { resolvePaths } from '../config/index.js';
import { isSkepError, SkepError } from '../shared/index.js';
import type { SkillsContext } from './context.js';
import type { OciSession } from './oci-client.js';
import type { OciRef } from './oci-ref.js';

export const TRUSTED_KEYS_ENV = 'SKEP_SKILLS_TRUSTED_KEYS';
export const SIGSTORE_POLICY_ENV = 'SKEP_SKILLS_SIGSTORE_POLICY';
/** The Sigstore policy file in the config folder, read when the variable is not set. */
export const SIGSTORE_POLICY_FILE = 'sigstore-policy.json';
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

export type KeylessCheck = NonNullable<Parameters<SignatureModule['verifyArtifact']>[3]>;
export type KeylessResult = ReturnType<KeylessCheck['layer']>;

/** Who the user trusts to sign skills: public keys and, with a Sigstore policy, keyless signers. */
export interface SkillTrust {
  keys: KeyObject[];
  keyless?: KeylessCheck;
  /** The trusted root of the user's Sigstore policy (a registry's signer is checked against it). */
  root?: TrustMaterial;
}

/** The user's whole trust policy for an install (`given` public keys added to theirs). */
export async function skillTrust(ctx: SkillsContext, given: readonly string[] = []): Promise<SkillTrust> {
  const keys = await trustedKeys(ctx, given);
  const keyless = await keylessTrust(ctx);
  return keyless === undefined ? { keys } : { keys, ...keyless };
}

interface PolicyFile {
  trusted_root?: unknown;
  identities?: unknown;
}

/**
 * The keyless check of the user's Sigstore policy file, or undefined when there is none. A
 * signature passes when it verifies against the trusted root and its certificate matches one of
 * the identities. A policy file that cannot be used is refused by name, never skipped.
 */
async function keylessTrust(
  ctx: SkillsContext,
): Promise<{ keyless: KeylessCheck; root: TrustMaterial } | undefined> {
  const env = ctx.env();
  const named = env[SIGSTORE_POLICY_ENV];
  const file =
    named !== undefined && named !== '' ? named : join(resolvePaths(env).configDir, SIGSTORE_POLICY_FILE);
  const what = named !== undefined && named !== '' ? `${SIGSTORE_POLICY_ENV} "${file}"` : `"${file}"`;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && (named === undefined || named === '')) return undefined;
    throw new SkepError(
      'invalid_config',
      `Sigstore policy ${what}: cannot read it: ${code ?? (err as Error).message}`,
    );
  }
  const bad = (why: string) => new SkepError('invalid_config', `Sigstore policy ${what}: ${why}`);
  let doc: PolicyFile;
  try {
    doc = JSON.parse(text) as PolicyFile;
  } catch {
    throw bad('not JSON');
  }
  if (typeof doc.trusted_root !== 'string' || doc.trusted_root === '')
    throw bad('trusted_root (the path of a Sigstore trusted_root.json, or sigstore-public-good) is required');
  if (!Array.isArray(doc.identities) || doc.identities.length === 0)
    throw bad('identities (a list of {signer_identity or signer_identity_regexp, cert_issuer}) is required');
  const sigstore = await import('../protocol/sigstore-verify.js');
  const identities = doc.identities.map((item: unknown, i) => {
    const entry = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>;
    const str = (key: string): string | undefined => {
      const value = entry[key];
      return typeof value === 'string' ? value : undefined;
    };
    const issuer = str('cert_issuer');
    if (issuer === undefined) throw bad(`identities[${i}].cert_issuer is required`);
    const identity = {
      certIssuer: issuer,
      ...(str('signer_identity') === undefined ? {} : { signerIdentity: str('signer_identity')! }),
      ...(str('signer_identity_regexp') === undefined
        ? {}
        : { signerIdentityRegexp: str('signer_identity_regexp')! }),
      ...(str('repository_uri') === undefined ? {} : { repositoryUri: str('repository_uri')! }),
    };
    try {
      sigstore.checkIdentityPolicy(identity);
    } catch (err) {
      throw bad(`identities[${i}]: ${(err as Error).message}`);
    }
    return identity;
  });
  // The built-in name instead of a path: Sigstore's public-good root, through TUF.
  const roots = await import('../protocol/sigstore-trusted-root.js');
  if (doc.trusted_root === roots.PUBLIC_GOOD_TRUSTED_ROOT) {
    const root = await roots
      .loadPublicGoodTrustedRoot({ cacheDir: resolvePaths(env).cacheDir, env })
      .catch((err: unknown) => Promise.reject(bad((err as Error).message)));
    return { keyless: await roots.trustedRootCheck(root, identities), root: root.trust };
  }
  const rootPath = resolve(dirname(file), doc.trusted_root);
  let rootText: string;
  try {
    rootText = await readFile(rootPath, 'utf8');
  } catch (err) {
    throw bad(
      `trusted_root "${rootPath}": cannot read it: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  let trust: ReturnType<typeof sigstore.loadTrustedRoot>;
  try {
    trust = sigstore.loadTrustedRoot(rootText);
  } catch (err) {
    throw bad(`trusted_root "${rootPath}": ${(err as Error).message}`);
  }
  return { keyless: sigstore.keylessCheck(trust, identities), root: trust };
}

/** What the signature check of one install found. */
export type SkillSignature =
  | { status: 'verified'; signer: string; issuer: string }
  | { status: 'unsigned' }
  | { status: 'invalid'; reason: string };

/**
 * Looks up and verifies the signature of the artifact `digest` in `ref`'s repository. The issuer
 * of a verified signature is the certificate's OIDC issuer (keyless) or `skep:public-key`.
 */
export async function checkSignature(
  ctx: SkillsContext,
  ref: OciRef,
  digest: string,
  trust: SkillTrust,
): Promise<SkillSignature> {
  const sig = await signatureModule();
  let outcome;
  try {
    outcome = await sig.verifyArtifact(
      signatureStore(ctx.session(ref, false)),
      digest,
      trust.keys,
      trust.keyless,
    );
  } catch (err) {
    if (err instanceof Error && err.name === 'SignatureError')
      return { status: 'invalid', reason: err.message };
    throw err;
  }
  if (outcome.status === 'verified')
    return { status: 'verified', signer: outcome.signer, issuer: outcome.issuer ?? KEY_SIGNER_ISSUER };
  if (outcome.status === 'unsigned') return outcome;
  return { status: 'invalid', reason: outcome.reason };
}

export const FULCIO_URL_ENV = 'SKEP_SIGSTORE_FULCIO_URL';
export const REKOR_URL_ENV = 'SKEP_SIGSTORE_REKOR_URL';

/**
 * A keyless signer for a push: an ephemeral key certified by Fulcio for the OIDC identity
 * `token`, whose signatures are logged in Rekor (the public-good instances unless
 * `SKEP_SIGSTORE_FULCIO_URL` / `SKEP_SIGSTORE_REKOR_URL` name others). A refused token is a 400
 * that says so; an unreachable or failing service a 502. The token never appears in a message.
 */
export async function keylessSigner(ctx: SkillsContext, token: string) {
  const sigstore = await import('../protocol/sigstore-sign.js');
  const env = ctx.env();
  const url = (name: string, fallback: string): string => {
    const value = env[name];
    if (value === undefined || value === '') return fallback;
    let parsed: URL;
    try {
      parsed = new URL(value);
    } catch {
      throw new SkepError('invalid_config', `${name}: not a URL: ${value}`);
    }
    const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(parsed.hostname);
    if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && loopback))
      throw new SkepError(
        'invalid_config',
        `${name}: the identity token is only sent over https (or http to loopback)`,
      );
    return value;
  };
  const mapped = (err: unknown): unknown =>
    err instanceof sigstore.KeylessSigningError
      ? new SkepError(
          err.kind === 'bad_token' ? 'bad_request' : 'bad_gateway',
          `keyless signing: ${err.message}`,
        )
      : err;
  const fulcioUrl = url(FULCIO_URL_ENV, sigstore.PUBLIC_FULCIO_URL);
  const rekorUrl = url(REKOR_URL_ENV, sigstore.PUBLIC_REKOR_URL);
  try {
    const signer = await sigstore.keylessSigner({ identityToken: token, fulcioUrl, rekorUrl });
    return {
      ...signer,
      annotate: (payload: Buffer, signature: string) =>
        signer.annotate(payload, signature).catch((err: unknown) => Promise.reject(mapped(err))),
    };
  } catch (err) {
    throw mapped(err);
  }
}
