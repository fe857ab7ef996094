/**
 * Shapes and helpers of project lock-file sync and upgrade (ToolHive's commands; its
 * SyncResult and UpgradeResult on the wire). The work itself is in
 * `project-sync.ts`; what is here needs no state.
 */
import { describeError, isSkepError } from '../shared/index.js';
import { isGitRef } from './git-source.js';
import { looksLikeOciRef, parseOciRef } from './oci-ref.js';

export interface SyncRequest {
  project_root?: string;
  clients?: string[];
  prune?: boolean;
  check?: boolean;
  adopt?: boolean;
  allow_unsigned?: boolean;
}

export type FailureReason =
  | 'registry-unreachable'
  | 'digest-missing'
  | 'validation-rejected'
  | 'lock-write-failed'
  | 'signature-invalid'
  | 'signer-mismatch'
  | 'provenance-field-mismatch'
  | 'unsigned-rejected'
  | 'unknown';

export interface SyncFailure {
  name: string;
  reason: FailureReason;
  error: string;
}

export interface SyncResult {
  installed: string[];
  drifted: string[];
  missing: string[];
  already_current: string[];
  never_managed: string[];
  removed_from_lock: string[];
  pruned: string[];
  failed: SyncFailure[];
}

export interface UpgradeSkillsRequest {
  project_root?: string;
  names?: string[];
  preview?: boolean;
  fail_on_changes?: boolean;
  allow_ref_change?: boolean;
  allow_signer_change?: boolean;
  clients?: string[];
}

export type SkillUpgradeStatus =
  'upgraded' | 'up-to-date' | 'not-upgradable' | 'ref-change-blocked' | 'signer-change-blocked' | 'failed';

export interface UpgradeOutcome {
  name: string;
  status: SkillUpgradeStatus;
  old_digest: string;
  new_digest: string;
  /** The new content's signer, when it differs from the one the lock pins. */
  new_signer_identity?: string;
  reason?: FailureReason;
  error?: string;
}

/** The name lists of a SyncResult (all but `failed`), reported sorted. */
export const NAME_LISTS = [
  'installed',
  'drifted',
  'missing',
  'already_current',
  'never_managed',
  'removed_from_lock',
  'pruned',
] as const satisfies ReadonlyArray<Exclude<keyof SyncResult, 'failed'>>;

export const emptySyncResult = (): SyncResult => ({
  installed: [],
  drifted: [],
  missing: [],
  already_current: [],
  never_managed: [],
  removed_from_lock: [],
  pruned: [],
  failed: [],
});

const COMMIT = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

/** The lock entry's `source`, pinned to its recorded digest (OCI: `@sha256:…`; git: `@<commit>`). */
export function pinnedSource(source: string, digest: string): string {
  if (isGitRef(source)) {
    const hash = source.indexOf('#');
    const base = hash === -1 ? source : source.slice(0, hash);
    const path = hash === -1 ? '' : source.slice(hash);
    const at = base.indexOf('@');
    return `${at === -1 ? base : base.slice(0, at)}@${digest}${path}`;
  }
  if (looksLikeOciRef(source)) {
    const ref = parseOciRef(source);
    return `${ref.registry}/${ref.repository}@${digest}`;
  }
  return source;
}

/** True when the source names exact content (a digest or a full commit): nothing to upgrade to. */
export function isPinned(source: string): boolean {
  if (isGitRef(source)) {
    const base = source.split('#')[0] as string;
    const at = base.indexOf('@');
    return at !== -1 && COMMIT.test(base.slice(at + 1));
  }
  if (looksLikeOciRef(source)) return parseOciRef(source).digest !== undefined;
  return false;
}

/**
 * Maps an install error to the reference's failure reasons. The narrower input kinds split
 * from `bad_request` — `invalid_reference` (a skill's source), `invalid_path` (a path the
 * install reads, such as a trusted key file), `client_unknown` / `no_client_detected` (the
 * clients to install for) and `skill_lock_invalid` (the lock file) — stay rejected input, as
 * they were. A configured registry that cannot be read (`unavailable`) is unreachable too. A
 * refusal of the signature check says which one it is (`locked-signature.ts`); any other 403 is
 * `unsigned-rejected`. A mistake in Skep's own environment (`invalid_config`, such as the
 * trusted-keys variable) is no verdict on the skill: `unknown`, with the message.
 */
export function failureReason(err: unknown): FailureReason {
  if (!isSkepError(err)) return 'unknown';
  switch (err.code) {
    case 'bad_gateway':
    case 'gateway_timeout':
    case 'unauthorized':
    case 'rate_limited':
      return 'registry-unreachable';
    case 'not_found':
    case 'skill_not_found':
      return 'digest-missing';
    case 'skill_invalid':
    case 'skill_artifact_invalid':
    case 'bad_request':
    case 'invalid_reference':
    case 'invalid_path':
    case 'client_unknown':
    case 'no_client_detected':
    case 'skill_lock_invalid':
      return 'validation-rejected';
    case 'unavailable':
      // The configured registry, whose entries may hold the skill's signer policy.
      return 'registry-unreachable';
    case 'forbidden':
      return signatureReason(err.details?.['reason']) ?? 'unsigned-rejected';
    default:
      return 'unknown';
  }
}

const SIGNATURE_REASONS: readonly FailureReason[] = [
  'signature-invalid',
  'signer-mismatch',
  'provenance-field-mismatch',
  'unsigned-rejected',
];

/** The reason a sync's signature check gave its refusal (`locked-signature.ts`). */
function signatureReason(value: unknown): FailureReason | undefined {
  return SIGNATURE_REASONS.find((r) => r === value);
}

export function failure(name: string, err: unknown): SyncFailure {
  return { name, reason: failureReason(err), error: describeError(err) };
}
