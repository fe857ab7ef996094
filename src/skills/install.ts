/**
 * Installing a resolved skill and its dependencies for some clients in one scope, as one
 * transaction (as ToolHive's install): client folders are written beside the old ones and
 * swapped in, records and the lock file are updated, and a failure anywhere undoes every step
 * taken so far, newest first. Backups are dropped only once the whole tree is installed.
 */
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_GROUP } from '../groups/index.js';
import { pathExists, SkepError, writeFileAtomic } from '../shared/index.js';
import { writeTree } from './archive.js';
import { resolveClients, type Scope, skillsDirFor } from './client-dirs.js';
import type { SkillsContext } from './context.js';
import {
  contentDigest,
  LOCK_FILE,
  type LockFile,
  lockPath,
  readLock,
  upsertEntry,
  writeLock,
} from './lock-file.js';
import type { InstalledSkill } from './records.js';
import { checkRegistrySignature } from './registry-policy.js';
import { type ResolvedSkill, resolveSkill } from './resolve.js';
import { resolveScope } from './scope.js';
import { checkSignature, type SkillSignature, type SkillTrust, skillTrust } from './signing.js';

export interface InstallRequest {
  name: string;
  version?: string | undefined;
  scope?: string | undefined;
  project_root?: string | undefined;
  clients?: string[] | undefined;
  force?: boolean | undefined;
  group?: string | undefined;
  allow_unsigned?: boolean | undefined;
  /** Public keys (PEM text or file paths) trusted for this install, besides the user's trusted keys. */
  public_keys?: string[] | undefined;
}

/** One step of an install's commit or undo; `what` names it in the log line when it fails. */
export interface InstallStep {
  what: string;
  run(): Promise<void>;
}

export interface InstallTx {
  scope: Scope;
  projectRoot: string;
  clients: string[];
  group: string;
  force: boolean;
  /** Undo steps, run in reverse order when the install fails. */
  undo: InstallStep[];
  /** Backups to drop once the whole install succeeded. */
  commits: InstallStep[];
  lock: LockFile | undefined;
  /** Skills installed by this transaction (a diamond dependency is installed once). */
  visited: Set<string>;
  /** The dependency path being installed, to detect cycles. */
  stack: string[];
  /** Rewrite every client folder even when the digest is already installed (sync repairs drift). */
  rewrite?: boolean;
  /** The signature policy of this install; absent: signatures are not looked at. */
  signatures?: SignaturePolicy;
}

export interface SignaturePolicy {
  /** Public keys (request, config folder, environment) and keyless signers the user trusts. */
  trust: SkillTrust;
  /** Project scope: an artifact must be signed by a trusted key, or `allowUnsigned`. */
  required: boolean;
  allowUnsigned: boolean;
}

const MAX_SKILLS_PER_TREE = 100;

/**
 * Runs every step, even after one failed: a step skipped would leave more behind than a step
 * that failed. Each failure is reported with its cause.
 */
async function runEach(
  steps: readonly InstallStep[],
  failed: (step: InstallStep, err: unknown) => void,
): Promise<void> {
  for (const step of steps) {
    try {
      await step.run();
    } catch (err) {
      failed(step, err);
    }
  }
}

/**
 * Drops the backups of an install that succeeded. A failure leaves a `.skep-backup-*` folder
 * next to the skill, but the install itself stands, so it is a warning.
 */
export function commitInstall(ctx: SkillsContext, skill: string, tx: InstallTx): Promise<void> {
  return runEach(tx.commits, (step, err) =>
    ctx.logger.warn(
      { skill, step: step.what, err },
      'skill install: cannot drop a backup; the install stands',
    ),
  );
}

/**
 * Undoes a failed install, newest step first. The caller rethrows the install's own error, so
 * a step that fails here is only visible in the log: it leaves files, records or the lock file
 * half restored.
 */
export function rollbackInstall(ctx: SkillsContext, skill: string, tx: InstallTx): Promise<void> {
  return runEach([...tx.undo].reverse(), (step, err) =>
    ctx.logger.error(
      { skill, step: step.what, err },
      'skill install rollback: a step failed; the install is half undone',
    ),
  );
}

export async function installSkill(ctx: SkillsContext, request: InstallRequest): Promise<InstalledSkill> {
  if (typeof request.name !== 'string' || request.name.trim() === '')
    throw new SkepError('bad_request', 'name is required');
  const { scope, root } = await resolveScope(request.scope, request.project_root);
  const clients = resolveClients(request.clients, ctx.env());
  const group = request.group === undefined || request.group === '' ? DEFAULT_GROUP : request.group;
  ctx.groups.require(group);
  const resolved = await resolveSkill(ctx, request.name.trim(), request.version);
  const trust = await skillTrust(ctx, request.public_keys ?? []);
  const tx: InstallTx = {
    scope: scope ?? 'user',
    projectRoot: root,
    clients,
    group,
    force: request.force === true,
    undo: [],
    commits: [],
    lock: undefined,
    visited: new Set(),
    stack: [],
    signatures: { trust, required: scope === 'project', allowUnsigned: request.allow_unsigned === true },
  };
  if (tx.scope === 'project') {
    tx.lock = await readLock(root);
    // The lock file as it was (or its absence), put back last when the install fails.
    const snapshot = await readFile(lockPath(root), 'utf8').catch(() => undefined);
    tx.undo.unshift({
      what: `restore ${lockPath(root)}`,
      run: () =>
        snapshot === undefined
          ? rm(lockPath(root), { force: true })
          : writeFileAtomic(lockPath(root), snapshot, 0o644),
    });
  }
  try {
    const skill = await installOne(ctx, resolved, tx, undefined);
    if (tx.lock !== undefined) await writeLock(root, tx.lock);
    await commitInstall(ctx, resolved.name, tx);
    return skill;
  } catch (err) {
    await rollbackInstall(ctx, resolved.name, tx);
    throw err;
  }
}

/** Installs one skill of the tree (recursing into its `requires`), recording each step's undo in `tx`. */
export async function installOne(
  ctx: SkillsContext,
  resolved: ResolvedSkill,
  tx: InstallTx,
  requiredBy: string | undefined,
): Promise<InstalledSkill> {
  const name = resolved.name;
  if (tx.stack.includes(name))
    throw new SkepError('skill_artifact_invalid', `dependency cycle detected involving skill "${name}"`);
  const done = tx.visited.has(name) ? ctx.records.get(name, tx.scope, tx.projectRoot) : undefined;
  if (done !== undefined) {
    const entry = tx.lock?.skills.find((e) => e.name === name);
    if (entry !== undefined && requiredBy !== undefined)
      upsertEntry(tx.lock!, { ...entry, requiredBy: [requiredBy] });
    return done;
  }
  tx.visited.add(name);
  if (tx.visited.size > MAX_SKILLS_PER_TREE) {
    throw new SkepError(
      'skill_artifact_invalid',
      `more than ${MAX_SKILLS_PER_TREE} skills in one dependency tree`,
    );
  }
  const env = ctx.env();
  const existing = ctx.records.get(name, tx.scope, tx.projectRoot);
  const explicit = requiredBy === undefined || existing?.explicit === true;
  let writeClients: string[];
  let allClients: string[];
  let force = tx.force;
  if (existing !== undefined && existing.digest === resolved.digest && tx.rewrite !== true) {
    writeClients = tx.clients.filter((c) => !existing.clients.includes(c));
    allClients = [...existing.clients, ...writeClients];
  } else if (existing !== undefined) {
    allClients = [...new Set([...existing.clients, ...tx.clients])];
    writeClients = allClients;
    force = true;
  } else {
    writeClients = tx.clients;
    allClients = [...tx.clients];
  }
  // The signature is checked before anything is written.
  const signature = await signatureOf(ctx, resolved, tx);
  // Directories shared by several clients (vscode, vscode-insider) are written once.
  const dirs = [
    ...new Set(writeClients.map((c) => join(skillsDirFor(c, tx.scope, tx.projectRoot, env), name))),
  ];
  if (!force) {
    for (const dir of dirs) {
      if (await pathExists(dir)) {
        throw new SkepError(
          'skill_exists',
          `directory "${dir}" exists but is not managed by Skep; use force to overwrite`,
        );
      }
    }
  }
  for (const dir of dirs) {
    const handle = await writeTree(dir, resolved.entries);
    tx.undo.push({ what: `restore ${dir}`, run: handle.rollback });
    tx.commits.push({ what: `drop the backup of ${dir}`, run: handle.commit });
  }
  const fm = resolved.parsed.frontmatter;
  const dependencies: InstalledSkill['dependencies'] = [];
  const skill: InstalledSkill = {
    metadata: {
      name,
      version: fm.version,
      description: fm.description,
      author: fm.metadata['author'] ?? '',
      tags: (fm.metadata['tags'] ?? '')
        .split(',')
        .map((t) => t.trim())
        .filter((t) => t !== ''),
    },
    scope: tx.scope,
    project_root: tx.projectRoot,
    reference: resolved.reference,
    tag: resolved.tag,
    digest: resolved.digest,
    status: 'installed',
    // Re-installing the same digest (e.g. for more clients) keeps the original install time.
    installed_at:
      existing !== undefined && existing.digest === resolved.digest
        ? existing.installed_at
        : new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    clients: allClients.sort(),
    dependencies,
    managed: true,
    explicit,
  };
  const groupHadIt = ctx.records.inGroup(name, tx.group);
  ctx.records.save(skill, tx.group);
  tx.undo.push({
    what: `restore the install record of ${name}`,
    run: async () => {
      if (existing === undefined) ctx.records.delete(name, tx.scope, tx.projectRoot);
      else ctx.records.save(existing, undefined);
      if (!groupHadIt) ctx.records.removeFromGroup(name, tx.group);
    },
  });
  tx.stack.push(name);
  for (const depRef of fm.requires) {
    const dep = await resolveSkill(ctx, depRef);
    const installed = await installOne(ctx, dep, tx, name);
    dependencies.push({ name: installed.metadata.name, reference: depRef, digest: installed.digest });
  }
  tx.stack.pop();
  if (dependencies.length > 0) ctx.records.save(skill, undefined);
  if (tx.lock !== undefined) {
    const first = dirs[0] ?? join(skillsDirFor(allClients[0]!, tx.scope, tx.projectRoot, env), name);
    upsertEntry(tx.lock, {
      name,
      ...(fm.version === '' ? {} : { version: fm.version }),
      source: resolved.reference,
      digest: resolved.digest,
      contentDigest: await contentDigest(first),
      ...(signature.status === 'verified'
        ? { provenance: { signerIdentity: signature.signer, certIssuer: signature.issuer } }
        : { unsigned: true }),
      ...(requiredBy === undefined ? {} : { requiredBy: [requiredBy] }),
      ...(explicit ? { explicit: true } : {}),
    });
    // A signed entry loses a stale `unsigned`, an unsigned one a stale `provenance`.
    const written = tx.lock.skills.find((e) => e.name === name)!;
    if (signature.status === 'verified') delete written.unsigned;
    else delete written['provenance'];
  }
  return skill;
}

/** The signer pinned for `name` in the lock file, if any. */
function pinnedSigner(tx: InstallTx, name: string): string | undefined {
  const provenance = tx.lock?.skills.find((e) => e.name === name)?.['provenance'];
  if (typeof provenance !== 'object' || provenance === null) return undefined;
  const signer = (provenance as { signerIdentity?: unknown }).signerIdentity;
  return typeof signer === 'string' ? signer : undefined;
}

/**
 * The signature check of one skill of the tree, under the install's policy: a registry artifact
 * is looked up when the scope requires a signature or the user trusts keys; a signature that does
 * not verify is refused in every scope; an unsigned artifact is refused in project scope unless
 * `allow_unsigned`; a signer other than the one the lock file pins is refused (as ToolHive's).
 * Git sources and local builds cannot carry a signature: they count as unsigned. A skill from a
 * registry entry that names its signer must be signed keyless by it, in every scope
 * (`registry-policy.ts`), and the user's policy still applies.
 */
async function signatureOf(
  ctx: SkillsContext,
  resolved: ResolvedSkill,
  tx: InstallTx,
): Promise<SkillSignature | { status: 'unchecked' }> {
  const policy = tx.signatures;
  if (policy === undefined) return { status: 'unchecked' };
  const name = resolved.name;
  const governed = resolved.registryPolicies ?? [];
  let found: SkillSignature;
  // A registry entry that names its signer makes a signature required in every scope.
  if (governed.length > 0) found = await checkRegistrySignature(ctx, resolved, governed, policy.trust);
  else if (resolved.oci === undefined) found = { status: 'unsigned' };
  else if (!policy.required && policy.trust.keys.length === 0 && policy.trust.keyless === undefined)
    return { status: 'unchecked' };
  else found = await checkSignature(ctx, resolved.oci, resolved.digest, policy.trust);
  if (found.status === 'invalid') {
    throw new SkepError(
      'forbidden',
      `skill "${name}" (${resolved.digest}): signature verification failed: ${found.reason}; trust the publisher's public key with --key <file> or in the trusted-keys folder, or its keyless identity in the Sigstore policy (sigstore-policy.json)`,
    );
  }
  const pinned = pinnedSigner(tx, name);
  if (found.status === 'verified') {
    if (pinned !== undefined && pinned !== found.signer) {
      throw new SkepError(
        'forbidden',
        `skill "${name}" is signed by ${found.signer}, but ${LOCK_FILE} pins the signer ${pinned}; remove its lock entry to accept the new signer`,
      );
    }
    return found;
  }
  if (pinned !== undefined) {
    throw new SkepError(
      'forbidden',
      `skill "${name}" (${resolved.digest}) is not signed, but ${LOCK_FILE} pins the signer ${pinned}; remove its lock entry to accept an unsigned artifact`,
    );
  }
  if (policy.required && !policy.allowUnsigned) {
    throw new SkepError(
      'forbidden',
      `skill "${name}" (${resolved.digest}) is not signed${resolved.oci === undefined ? ' (git sources and local builds carry no signature)' : ''}; a project install needs a signature by a trusted key or keyless identity, or allow_unsigned (--allow-unsigned)`,
    );
  }
  return found;
}
