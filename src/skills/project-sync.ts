/**
 * A project's lock file as the source of truth (as in ToolHive): `sync` restores the
 * installed skills to it, `upgrade` re-resolves its sources and pins what moved. The request
 * and result shapes are in `lock-sync.ts`.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_GROUP } from '../groups/index.js';
import { isSkepError, pathExists, SkepError } from '../shared/index.js';
import { resolveClients, skillsDirFor } from './client-dirs.js';
import type { SkillsContext } from './context.js';
import { commitInstall, type InstallTx, installOne, rollbackInstall } from './install.js';
import { uninstallTree } from './installed.js';
import { contentDigest, type LockEntry, readLock, upsertEntry, writeLock } from './lock-file.js';
import { checkLockedSignature, type LockedSignaturePolicy } from './locked-signature.js';
import {
  emptySyncResult,
  failure,
  isPinned,
  NAME_LISTS,
  pinnedSource,
  type SyncFailure,
  type SyncRequest,
  type SyncResult,
  type UpgradeOutcome,
  type UpgradeSkillsRequest,
} from './lock-sync.js';
import type { InstalledSkill } from './records.js';
import { checkRegistrySignature } from './registry-policy.js';
import { resolveSkill } from './resolve.js';
import { resolveScope } from './scope.js';
import { checkSignature, type SkillTrust, skillTrust } from './signing.js';

/**
 * Restores a project's installed skills to its lock file (ToolHive's `sync`). Entries
 * without an install record are `missing`; records whose digest, clients or on-disk
 * contentDigest differ are `drifted`; both are reinstalled at the pinned digest (never a
 * newer one), unless `check`. Managed skills absent from the lock are `removed_from_lock`
 * (`prune` uninstalls them); skill folders Skep never installed are `never_managed`. What is
 * reinstalled must be signed as its lock entry records, and as a registry entry naming its
 * signer requires (`locked-signature.ts`); a refused entry is `failed` and its lock entry and
 * folders are left as they were.
 */
export async function syncProject(ctx: SkillsContext, request: SyncRequest): Promise<SyncResult> {
  if (request.adopt === true) {
    throw new SkepError(
      'not_implemented',
      'adopt is not supported yet: install those skills with skep skill install to have them locked',
    );
  }
  const { root } = await resolveScope('project', request.project_root);
  const env = ctx.env();
  const clients = resolveClients(request.clients, env);
  const lock = await readLock(root);
  const result = emptySyncResult();
  // Dependencies first, so that a parent's restore finds them in place at their pinned digest.
  const entries = [...lock.skills].sort(
    (a, b) => Number(a.requiredBy === undefined) - Number(b.requiredBy === undefined),
  );
  const locked = new Set(entries.map((e) => e.name));
  // The user's trust is read once, and only when something is to be reinstalled.
  let trust: Promise<SkillTrust> | undefined;
  const signatures = async (): Promise<LockedSignaturePolicy> => ({
    trust: await (trust ??= skillTrust(ctx)),
    allowUnsigned: request.allow_unsigned === true,
  });
  for (const entry of entries) {
    const record = ctx.records.get(entry.name, 'project', root);
    if (record === undefined) result.missing.push(entry.name);
    else if (await drifted(ctx, entry, record, clients, root)) result.drifted.push(entry.name);
    else {
      result.already_current.push(entry.name);
      continue;
    }
    if (request.check === true) continue;
    try {
      await installLocked(ctx, entry, pinnedSource(entry.source, entry.digest), clients, root, locked, {
        signatures: await signatures(),
      });
      result.installed.push(entry.name);
    } catch (err) {
      result.failed.push(failed(ctx, entry.name, err));
    }
  }
  for (const record of ctx.records.list({ scope: 'project', projectRoot: root })) {
    const name = record.metadata.name;
    if (!record.managed || locked.has(name)) continue;
    result.removed_from_lock.push(name);
    if (request.prune !== true || request.check === true) continue;
    try {
      await uninstallTree(ctx, name, 'project', root, new Set());
      result.pruned.push(name);
    } catch (err) {
      result.failed.push(failed(ctx, name, err));
    }
  }
  const seen = new Set<string>();
  for (const client of clients) {
    const dir = skillsDirFor(client, 'project', root, env);
    // A client folder that does not exist (or cannot be read) holds no unmanaged skills.
    const names = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const d of names) {
      if (!d.isDirectory() || seen.has(d.name) || locked.has(d.name)) continue;
      if (ctx.records.get(d.name, 'project', root) !== undefined) continue;
      if (!(await pathExists(join(dir, d.name, 'SKILL.md')))) continue;
      seen.add(d.name);
      result.never_managed.push(d.name);
    }
  }
  for (const key of NAME_LISTS) result[key].sort();
  return result;
}

/**
 * Re-resolves each lock entry's `source` (ToolHive's `upgrade`): a moved tag or
 * branch gets the new content installed and pinned; digest- or commit-pinned sources are
 * `not-upgradable`. `preview` resolves and compares without installing; `fail_on_changes`
 * makes any pending upgrade a 409 (for CI freshness checks).
 */
export async function upgradeProject(
  ctx: SkillsContext,
  request: UpgradeSkillsRequest,
): Promise<{ outcomes: UpgradeOutcome[] }> {
  const { root } = await resolveScope('project', request.project_root);
  const clients = resolveClients(request.clients, ctx.env());
  const lock = await readLock(root);
  const wanted = request.names ?? [];
  const unknown = wanted.filter((n) => !lock.skills.some((e) => e.name === n));
  if (unknown.length > 0)
    throw new SkepError('skill_not_found', `not in the lock file: ${unknown.join(', ')}`);
  const entries = lock.skills.filter((e) => wanted.length === 0 || wanted.includes(e.name));
  const locked = new Set(lock.skills.map((e) => e.name));
  const outcomes: UpgradeOutcome[] = [];
  for (const entry of entries) {
    const base = { name: entry.name, old_digest: entry.digest };
    if (isPinned(entry.source)) {
      outcomes.push({ ...base, status: 'not-upgradable', new_digest: entry.digest });
      continue;
    }
    let digest: string;
    try {
      digest = (await resolveSkill(ctx, entry.source)).digest;
    } catch (err) {
      const f = failed(ctx, entry.name, err);
      outcomes.push({
        ...base,
        status: 'failed',
        new_digest: entry.digest,
        reason: f.reason,
        error: f.error,
      });
      continue;
    }
    if (digest === entry.digest) {
      outcomes.push({ ...base, status: 'up-to-date', new_digest: digest });
      continue;
    }
    if (request.fail_on_changes === true) {
      throw new SkepError(
        'conflict',
        `skill "${entry.name}" would upgrade from ${entry.digest} to ${digest} (fail_on_changes)`,
      );
    }
    if (request.preview === true) {
      outcomes.push({ ...base, status: 'upgraded', new_digest: digest });
      continue;
    }
    // An entry that pins a signer upgrades only to content signed by a trusted key: by the same
    // signer, or by another one with allow_signer_change (which then becomes the pinned one).
    let upgraded: LockEntry = { ...entry, digest };
    const pinned = pinnedSignerOf(entry);
    if (pinned !== undefined) {
      try {
        const { signer: checked, issuer } = await checkUpgradeSignature(ctx, entry, digest);
        if (checked !== pinned && request.allow_signer_change !== true) {
          outcomes.push({
            ...base,
            status: 'signer-change-blocked',
            new_digest: digest,
            new_signer_identity: checked,
            reason: 'signer-mismatch',
            error: `skill "${entry.name}": the new content is signed by ${checked}, the lock pins ${pinned}; pass allow_signer_change to accept it`,
          });
          continue;
        }
        upgraded = { ...upgraded, provenance: { signerIdentity: checked, certIssuer: issuer } };
      } catch (err) {
        const f = failed(ctx, entry.name, err);
        outcomes.push({
          ...base,
          status: 'failed',
          new_digest: digest,
          reason: 'signature-invalid',
          error: f.error,
        });
        continue;
      }
    }
    try {
      await installLocked(ctx, upgraded, pinnedSource(entry.source, digest), clients, root, locked);
      outcomes.push({ ...base, status: 'upgraded', new_digest: digest });
    } catch (err) {
      const f = failed(ctx, entry.name, err);
      outcomes.push({ ...base, status: 'failed', new_digest: digest, reason: f.reason, error: f.error });
    }
  }
  return { outcomes };
}

function pinnedSignerOf(entry: LockEntry): string | undefined {
  const provenance = entry['provenance'];
  if (typeof provenance !== 'object' || provenance === null) return undefined;
  const signer = (provenance as { signerIdentity?: unknown }).signerIdentity;
  return typeof signer === 'string' ? signer : undefined;
}

/** The trusted signer (and issuer) of `digest` from `entry.source`'s repository; 403 when there is none. */
async function checkUpgradeSignature(
  ctx: SkillsContext,
  entry: LockEntry,
  digest: string,
): Promise<{ signer: string; issuer: string }> {
  const resolved = await resolveSkill(ctx, pinnedSource(entry.source, digest));
  if (resolved.oci === undefined) {
    throw new SkepError('forbidden', `skill "${entry.name}": ${entry.source} carries no signature`);
  }
  const trust = await skillTrust(ctx);
  // New content of a skill a registry entry governs must still be signed as the entry requires.
  const governed = resolved.registryPolicies ?? [];
  if (governed.length > 0) return checkRegistrySignature(ctx, resolved, governed, trust);
  const found = await checkSignature(ctx, resolved.oci, digest, trust);
  if (found.status === 'verified') return { signer: found.signer, issuer: found.issuer };
  throw new SkepError(
    'forbidden',
    `skill "${entry.name}" (${digest}): ${found.status === 'unsigned' ? 'not signed' : `signature verification failed: ${found.reason}`}, but the lock pins a signer`,
  );
}

/**
 * One skill's failure for the result, which carries only the message. An error that is not a
 * domain error (a bug, an I/O fault) is logged too, so its stack and cause are not lost.
 */
function failed(ctx: SkillsContext, name: string, err: unknown): SyncFailure {
  if (!isSkepError(err)) ctx.logger.error({ skill: name, err }, 'a skill could not be synced or upgraded');
  return failure(name, err);
}

/** True when the install differs from the lock entry: digest, clients, or files on disk. */
async function drifted(
  ctx: SkillsContext,
  entry: LockEntry,
  record: InstalledSkill,
  clients: string[],
  root: string,
): Promise<boolean> {
  if (record.digest !== entry.digest) return true;
  if (clients.some((c) => !record.clients.includes(c))) return true;
  for (const client of record.clients) {
    const dir = join(skillsDirFor(client, 'project', root, ctx.env()), entry.name);
    if (!(await pathExists(dir))) return true;
    if (entry.contentDigest !== undefined && (await contentDigest(dir)) !== entry.contentDigest) return true;
  }
  return false;
}

/**
 * Installs one lock entry at exactly `entry.digest` from `pinned`, for `clients`, replacing
 * what is there. Its dependencies are other lock entries and are left to their own turn.
 * The lock entry keeps its `source` and flags; digest and contentDigest are written. With
 * `signatures` (sync), the content's signature is checked against the entry first; an upgrade
 * checks the new content's signer itself before it gets here.
 */
async function installLocked(
  ctx: SkillsContext,
  entry: LockEntry,
  pinned: string,
  clients: string[],
  root: string,
  locked: ReadonlySet<string>,
  options: { signatures?: LockedSignaturePolicy } = {},
): Promise<void> {
  const resolved = await resolveSkill(ctx, pinned);
  if (resolved.digest !== entry.digest) {
    throw new SkepError(
      'not_found',
      `${entry.source} no longer provides ${entry.digest} (it resolves to ${resolved.digest})`,
    );
  }
  if (options.signatures !== undefined) await checkLockedSignature(ctx, entry, resolved, options.signatures);
  const tx: InstallTx = {
    scope: 'project',
    projectRoot: root,
    clients,
    group: DEFAULT_GROUP,
    force: true,
    undo: [],
    commits: [],
    lock: undefined,
    visited: new Set([...locked].filter((n) => n !== entry.name)),
    stack: [],
    rewrite: true,
  };
  try {
    const skill = await installOne(ctx, resolved, tx, undefined);
    if (entry.explicit !== true && skill.explicit) ctx.records.save({ ...skill, explicit: false }, undefined);
    const dir = join(skillsDirFor(skill.clients[0] as string, 'project', root, ctx.env()), entry.name);
    const lock = await readLock(root);
    upsertEntry(lock, { ...entry, contentDigest: await contentDigest(dir) });
    await writeLock(root, lock);
    await commitInstall(ctx, entry.name, tx);
  } catch (err) {
    await rollbackInstall(ctx, entry.name, tx);
    throw err;
  }
}
