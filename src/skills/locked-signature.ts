/**
 * The signature check of `skep skill sync`: content restored from the lock file must still be
 * signed as its entry records. The pinned digest fixes the content, not who vouches for it: a
 * signature replaced or removed in the registry since the install, or a registry entry that now
 * names the skill's signer, must not pass unnoticed. Failures carry the reasons of ToolHive's
 * sync result (`signature-invalid`, `signer-mismatch`, `provenance-field-mismatch`,
 * `unsigned-rejected`).
 *
 * Per lock entry:
 * - `provenance: {signerIdentity, certIssuer}`: a signature that passes the user's policy
 *   (trusted keys, Sigstore policy), by that signer from that issuer;
 * - `unsigned: true` (installed with allow_unsigned, or from git): restored without a signature;
 * - neither (a lock written by hand or by another tool): as a project install, a signature the
 *   user's policy verifies, or `allow_unsigned`;
 * - and whatever the entry records, a registry entry that names the skill's signer must be met,
 *   as on install (`registry-policy.ts`).
 */
import { isSkepError, SkepError } from '../shared/index.js';
import type { SkillsContext } from './context.js';
import { LOCK_FILE, type LockEntry } from './lock-file.js';
import type { FailureReason } from './lock-sync.js';
import { checkRegistrySignature } from './registry-policy.js';
import type { ResolvedSkill } from './resolve.js';
import { checkSignature, type SkillSignature, type SkillTrust } from './signing.js';

/** What a sync checks signatures against: the user's trust, and the request's `allow_unsigned`. */
export interface LockedSignaturePolicy {
  trust: SkillTrust;
  allowUnsigned: boolean;
}

/** The signer a lock entry records. */
interface LockedSigner {
  signerIdentity: string;
  certIssuer?: string;
}

/** A refusal whose sync failure reason is `reason` (read back by `failureReason`). */
function refusal(reason: FailureReason, message: string): SkepError {
  return new SkepError('forbidden', message, { details: { reason } });
}

/**
 * The entry's recorded signer, or undefined when it records none. A `provenance` that names no
 * signer is refused by name: skipping it would restore the skill unchecked.
 */
function lockedSigner(entry: LockEntry): LockedSigner | undefined {
  const provenance = entry['provenance'];
  if (provenance === undefined) return undefined;
  const p = (typeof provenance === 'object' && provenance !== null ? provenance : {}) as Record<
    string,
    unknown
  >;
  const identity = p['signerIdentity'];
  const issuer = p['certIssuer'];
  if (typeof identity !== 'string' || identity === '' || (issuer !== undefined && typeof issuer !== 'string'))
    throw new SkepError(
      'skill_lock_invalid',
      `${LOCK_FILE}: skill "${entry.name}": provenance needs a signerIdentity (and a certIssuer string)`,
    );
  return typeof issuer === 'string'
    ? { signerIdentity: identity, certIssuer: issuer }
    : { signerIdentity: identity };
}

const describe = (signer: string, issuer: string | undefined) =>
  issuer === undefined ? signer : `${signer} (issuer ${issuer})`;

/** The signature `resolved` carries, as the registry's entries and the user's policy see it. */
async function signatureFound(
  ctx: SkillsContext,
  resolved: ResolvedSkill,
  trust: SkillTrust,
): Promise<SkillSignature> {
  const governed = resolved.registryPolicies ?? [];
  if (governed.length === 0) {
    return resolved.oci === undefined
      ? { status: 'unsigned' }
      : checkSignature(ctx, resolved.oci, resolved.digest, trust);
  }
  try {
    return await checkRegistrySignature(ctx, resolved, governed, trust);
  } catch (err) {
    // The registry's refusal names the signer it expects (and the one found): keep its words.
    if (isSkepError(err) && err.code === 'forbidden') throw refusal('signature-invalid', err.message);
    throw err;
  }
}

/**
 * Checks that `resolved` (the lock entry's content at its pinned digest) is signed as `entry`
 * records; throws a 403 with the sync failure reason otherwise. Nothing is written before it.
 */
export async function checkLockedSignature(
  ctx: SkillsContext,
  entry: LockEntry,
  resolved: ResolvedSkill,
  policy: LockedSignaturePolicy,
): Promise<void> {
  const pinned = lockedSigner(entry);
  const governed = (resolved.registryPolicies ?? []).length > 0;
  if (pinned === undefined && entry.unsigned === true && !governed) return;
  const subject = `skill "${entry.name}" (${resolved.digest})`;
  const found = await signatureFound(ctx, resolved, policy.trust);
  const pins =
    pinned === undefined
      ? ''
      : `, and ${LOCK_FILE} pins the signer ${describe(pinned.signerIdentity, pinned.certIssuer)}`;
  if (found.status === 'invalid') {
    throw refusal(
      'signature-invalid',
      `${subject}: signature verification failed: ${found.reason}${pins}; trust the signer with a key in trusted-keys or an identity in the Sigstore policy (sigstore-policy.json)`,
    );
  }
  if (found.status === 'unsigned') {
    if (pinned !== undefined)
      throw refusal('unsigned-rejected', `${subject} is not signed${pins}: the signature was removed`);
    if (entry.unsigned === true || policy.allowUnsigned) return;
    throw refusal(
      'unsigned-rejected',
      `${subject} is not signed, and its ${LOCK_FILE} entry records neither a signer nor unsigned: true; pass allow_unsigned to restore it unsigned`,
    );
  }
  if (pinned === undefined) return;
  if (found.signer !== pinned.signerIdentity) {
    throw refusal(
      'signer-mismatch',
      `${subject} is signed by ${describe(found.signer, found.issuer)}, but ${LOCK_FILE} pins the signer ${describe(pinned.signerIdentity, pinned.certIssuer)}; remove its lock entry and install it again to accept the new signer`,
    );
  }
  if (pinned.certIssuer !== undefined && found.issuer !== pinned.certIssuer) {
    throw refusal(
      'provenance-field-mismatch',
      `${subject} is signed by ${found.signer} from the issuer ${found.issuer}, but ${LOCK_FILE} pins the issuer ${pinned.certIssuer}`,
    );
  }
}
