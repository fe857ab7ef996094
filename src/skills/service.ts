/**
 * The skills domain service behind `/api/v1beta/skills` and `skep skill`: validate, preview,
 * build, push, list/remove builds, install (OCI, git or local build; per client and scope;
 * with dependencies), list, info and uninstall. Sources are resolved into a verified set of
 * archive entries first; nothing is written until every check passed, and a failed install
 * restores files, records and the lock file as they were (skills reference §1.5).
 */
import { readdir, readFile, realpath, rm, stat } from 'node:fs/promises';
import { isAbsolute, join, normalize } from 'node:path';
import type { GroupService } from '../groups/index.js';
import { DEFAULT_GROUP } from '../groups/index.js';
import { pathExists, SkepError, writeFileAtomic } from '../shared/index.js';
import type { Store } from '../store/index.js';
import {
  type ArchiveEntry,
  type ArchiveLimits,
  DEFAULT_LIMITS,
  readSkillArchive,
  sourceDateEpoch,
  writeTree,
} from './archive.js';
import { buildArtifact, type FetchedArtifact, fetchArtifact, LABEL } from './artifact.js';
import { resolveClients, type Scope, skillsDirFor } from './client-dirs.js';
import { checkoutGitSkill, type GitOptions, gitOptionsFromEnv, isGitRef, parseGitRef } from './git-source.js';
import { LocalStore } from './local-store.js';
import {
  emptySyncResult,
  failure,
  NAME_LISTS,
  isPinned,
  pinnedSource,
  type SyncRequest,
  type SyncResult,
  type UpgradeOutcome,
  type UpgradeSkillsRequest,
} from './lock-sync.js';
import {
  contentDigest,
  type LockEntry,
  type LockFile,
  lockPath,
  readLock,
  removeEntry,
  upsertEntry,
  writeLock,
} from './lock-file.js';
import { type OciClientOptions, OciSession } from './oci-client.js';
import { privateSkillHosts } from './private-hosts.js';
import { formatOciRef, looksLikeOciRef, parseOciRef, repositoryName } from './oci-ref.js';
import { type InstalledSkill, type ListFilter, SkillRecords } from './records.js';
import {
  checkSkillPath,
  collectSkillFiles,
  parseCollected,
  type ValidationResult,
  validateSkillDir,
} from './skill-dir.js';
import { type ParsedSkill, requireSkillName, skillNameProblem } from './skill-md.js';

export interface SkillsServiceOptions {
  store: Store;
  groups: GroupService;
  /** Folder of the local build store (an OCI image layout). */
  storeDir: string;
  /** Environment for HOME (client dirs), Docker credentials, git tokens and dev switches; read at call time. */
  env?: NodeJS.ProcessEnv;
  /**
   * OCI registries and git servers (`host`, `host:port`) that may be on this machine or a
   * private network, besides those in `SKEP_SKILLS_PRIVATE_HOSTS` (see `private-hosts.ts`).
   */
  privateHosts?: readonly string[];
  oci?: Omit<OciClientOptions, 'env' | 'privateHosts'>;
  git?: GitOptions;
  limits?: ArchiveLimits;
}

export interface SkillContent {
  name: string;
  description: string;
  version: string;
  license: string;
  body: string;
  files: { path: string; size: number }[];
}

export interface BuildInfo {
  tag: string;
  digest: string;
  name: string;
  description: string;
  version: string;
}

export interface InstallRequest {
  name: string;
  version?: string | undefined;
  scope?: string | undefined;
  project_root?: string | undefined;
  clients?: string[] | undefined;
  force?: boolean | undefined;
  group?: string | undefined;
  allow_unsigned?: boolean | undefined;
}

export interface PushRequest {
  reference: string;
  key?: string | undefined;
  identity_token?: string | undefined;
  no_sign?: boolean | undefined;
}

/** A source resolved and verified, ready to be written. */
interface ResolvedSkill {
  name: string;
  reference: string;
  tag: string;
  digest: string;
  parsed: ParsedSkill;
  entries: ArchiveEntry[];
}

interface InstallTx {
  scope: Scope;
  projectRoot: string;
  clients: string[];
  group: string;
  force: boolean;
  /** Undo steps, run in reverse order when the install fails. */
  undo: (() => Promise<void>)[];
  /** Backups to drop once the whole install succeeded. */
  commits: (() => Promise<void>)[];
  lock: LockFile | undefined;
  /** Skills installed by this transaction (a diamond dependency is installed once). */
  visited: Set<string>;
  /** The dependency path being installed, to detect cycles. */
  stack: string[];
  /** Rewrite every client folder even when the digest is already installed (sync repairs drift). */
  rewrite?: boolean;
}

const MAX_SKILLS_PER_TREE = 100;

export class SkillsService {
  readonly #records: SkillRecords;
  readonly #groups: GroupService;
  readonly #local: LocalStore;
  readonly #options: SkillsServiceOptions;

  constructor(options: SkillsServiceOptions) {
    this.#options = options;
    this.#records = new SkillRecords(options.store);
    this.#groups = options.groups;
    this.#local = new LocalStore(options.storeDir);
  }

  get #env(): NodeJS.ProcessEnv {
    return this.#options.env ?? process.env;
  }

  get #git(): GitOptions {
    return this.#options.git ?? gitOptionsFromEnv(this.#env, this.#options.privateHosts);
  }

  #session(ref: ReturnType<typeof parseOciRef>, push: boolean): OciSession {
    return new OciSession(ref, push, {
      ...this.#options.oci,
      env: this.#env,
      privateHosts: privateSkillHosts(this.#options.privateHosts ?? [], this.#env),
    });
  }

  // ---------------------------------------------------------------- validate, build, push

  validate(path: string): Promise<ValidationResult> {
    return validateSkillDir(path);
  }

  /** Packages the skill folder into the local store; returns the tag (or the digest when untagged). */
  async build(path: string, tag?: string): Promise<{ reference: string }> {
    checkSkillPath(path);
    try {
      if (!(await stat(path)).isDirectory())
        throw new SkepError('bad_request', `path "${path}" is not a directory`);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT')
        throw new SkepError('bad_request', `path "${path}" does not exist`);
      throw err;
    }
    const files = await collectSkillFiles(path);
    const parsed = parseCollected(files, path);
    const finalTag = tag === undefined || tag === '' ? parsed.frontmatter.name : tag;
    if (finalTag.includes('/') || finalTag.includes('@')) parseOciRef(finalTag);
    else if (!/^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$/.test(finalTag)) {
      throw new SkepError(
        'bad_request',
        `invalid tag "${finalTag}": use a bare tag (letters, digits, "_", ".", "-") or a full OCI reference`,
      );
    }
    const artifact = await buildArtifact(files, parsed.frontmatter, sourceDateEpoch(this.#env));
    await this.#local.save(finalTag, artifact);
    return { reference: finalTag };
  }

  async builds(): Promise<BuildInfo[]> {
    const out: BuildInfo[] = [];
    for (const b of await this.#local.builds()) {
      let labels: Record<string, string> = {};
      try {
        const root = JSON.parse((await this.#local.getManifest(b.tag)).bytes.toString('utf8')) as {
          annotations?: Record<string, string>;
        };
        labels = root.annotations ?? {};
      } catch {
        // a damaged entry is still listed, without metadata
      }
      out.push({
        tag: b.tag,
        digest: b.digest,
        name: labels[LABEL.name] ?? '',
        description: labels[LABEL.description] ?? '',
        version: labels[LABEL.version] ?? '',
      });
    }
    return out;
  }

  async removeBuild(tag: string): Promise<void> {
    if (!(await this.#local.remove(tag)))
      throw new SkepError('skill_not_found', `build "${tag}" not found in local store`);
  }

  /** Pushes a local build to the registry named by its tag (which must be a full reference). */
  async push(request: PushRequest): Promise<void> {
    if (request.key !== undefined || request.identity_token !== undefined) {
      throw new SkepError(
        'not_implemented',
        'signing skill artifacts is not supported yet; push without key/identity_token',
      );
    }
    const digest = await this.#local.resolve(request.reference);
    if (digest === undefined)
      throw new SkepError('skill_not_found', `reference "${request.reference}" not found in local store`);
    const ref = parseOciRef(request.reference);
    const session = this.#session(ref, true);
    const { root, manifests, blobs } = await this.#local.collectBlobs(request.reference);
    for (const b of blobs) await session.putBlob(await this.#local.readBlob(b), b);
    for (const m of manifests) await session.putManifest(m.digest, m.bytes, m.mediaType);
    await session.putManifest(ref.digest ?? ref.tag ?? root.digest, root.bytes, root.mediaType);
  }

  // ---------------------------------------------------------------- resolving sources

  async #fromArtifact(
    fetched: FetchedArtifact,
    reference: string,
    tag: string,
    where: string,
  ): Promise<ResolvedSkill> {
    const entries = await readSkillArchive(fetched.layer, this.#options.limits ?? DEFAULT_LIMITS);
    const parsed = parseCollected(entries, where);
    if (parsed.frontmatter.name !== fetched.labels[LABEL.name]) {
      throw new SkepError(
        'skill_artifact_invalid',
        `skill name "${parsed.frontmatter.name}" in SKILL.md does not match the artifact label "${fetched.labels[LABEL.name]}"`,
      );
    }
    return { name: parsed.frontmatter.name, reference, tag, digest: fetched.digest, parsed, entries };
  }

  async #fromGit(input: string): Promise<ResolvedSkill> {
    const git = this.#git;
    const ref = parseGitRef(input);
    const checkout = await checkoutGitSkill(ref, git, this.#env);
    try {
      try {
        if (!(await stat(checkout.dir)).isDirectory()) throw new Error('not a directory');
      } catch {
        throw new SkepError('skill_not_found', `path "${ref.path}" not found in ${input}`);
      }
      const files = await collectSkillFiles(checkout.dir);
      const parsed = parseCollected(files, input);
      const entries = files.map((f) => ({ path: f.path, mode: 0o644, data: f.data }));
      return {
        name: parsed.frontmatter.name,
        reference: input,
        tag: ref.ref ?? '',
        digest: checkout.commit,
        parsed,
        entries,
      };
    } finally {
      await checkout.dispose();
    }
  }

  /** Resolves what the user asked for (skills reference §1.4), without a registry catalogue lookup. */
  async #resolve(input: string, version?: string): Promise<ResolvedSkill> {
    if (input === '') throw new SkepError('bad_request', 'name is required');
    if (isGitRef(input)) return this.#fromGit(input);
    if (looksLikeOciRef(input)) {
      let reference = input;
      if (
        version !== undefined &&
        version !== '' &&
        input.includes('/') &&
        !input.includes(':') &&
        !input.includes('@')
      ) {
        reference = `${input}:${version}`;
      }
      const ref = parseOciRef(reference);
      // A local build tagged with this exact reference wins over the registry.
      const local = (await this.#local.resolve(reference)) !== undefined;
      const fetched = local
        ? await fetchArtifact(this.#local, reference)
        : await fetchArtifact(this.#session(ref, false), ref.digest ?? ref.tag ?? 'latest');
      // Supply-chain check (§1.5 step 2): the artifact's name is the repository's last segment.
      const declared = fetched.labels[LABEL.name] ?? '';
      if (skillNameProblem(declared) !== undefined || declared !== repositoryName(ref)) {
        throw new SkepError(
          'skill_artifact_invalid',
          `skill name "${declared}" in artifact does not match OCI reference repository "${ref.repository}"`,
        );
      }
      if (local) return this.#fromArtifact(fetched, reference, reference, reference);
      return this.#fromArtifact(fetched, reference, ref.tag ?? '', formatOciRef(ref));
    }
    requireSkillName(input);
    if ((await this.#local.resolve(input)) !== undefined) {
      const fetched = await fetchArtifact(this.#local, input);
      if (fetched.labels[LABEL.name] !== input) {
        throw new SkepError(
          'skill_artifact_invalid',
          `local build "${input}" declares the skill name "${fetched.labels[LABEL.name]}"`,
        );
      }
      return this.#fromArtifact(fetched, input, input, input);
    }
    const matches = (await this.builds()).filter(
      (b) =>
        b.name === input &&
        (version === undefined || version === '' || b.version === version || b.tag === version),
    );
    const chosen = matches.length === 1 ? matches[0] : matches.find((m) => m.tag === input);
    if (chosen === undefined && matches.length > 1) {
      throw new SkepError(
        'conflict',
        `multiple local builds match skill "${input}"; specify version or install by tag: ${matches.map((m) => m.tag).join(', ')}`,
      );
    }
    if (chosen === undefined) {
      throw new SkepError(
        'skill_not_found',
        `skill "${input}" not found in local store; install by OCI reference (e.g. ghcr.io/<namespace>/${input}:<version>) or git:// reference`,
      );
    }
    return this.#fromArtifact(
      await fetchArtifact(this.#local, chosen.tag),
      chosen.tag,
      chosen.tag,
      chosen.tag,
    );
  }

  /** `GET /skills/content?ref=`: the skill's metadata, SKILL.md body and file list, without installing. */
  async content(ref: string | undefined): Promise<SkillContent> {
    if (ref === undefined || ref.trim() === '')
      throw new SkepError('bad_request', 'ref query parameter is required');
    let input = ref.trim();
    if (/^https?:\/\//.test(input)) {
      let url: URL;
      try {
        url = new URL(input);
      } catch {
        throw new SkepError('bad_request', `invalid URL "${input}"`);
      }
      input = `git://${url.host}${url.pathname.replace(/\.git$/, '')}${url.hash}`;
    }
    const resolved = await this.#resolve(input);
    const fm = resolved.parsed.frontmatter;
    return {
      name: fm.name,
      description: fm.description,
      version: fm.version,
      license: fm.license,
      body: resolved.parsed.body,
      files: resolved.entries.map((e) => ({ path: e.path, size: e.data.length })),
    };
  }

  // ---------------------------------------------------------------- scope and project root

  async #scope(
    scope: string | undefined,
    projectRoot: string | undefined,
    forList = false,
  ): Promise<{ scope: Scope | undefined; root: string }> {
    const s = scope ?? '';
    if (s !== '' && s !== 'user' && s !== 'project') {
      throw new SkepError('bad_request', `invalid scope "${s}": must be empty, "user", or "project"`);
    }
    const hasRoot = projectRoot !== undefined && projectRoot !== '';
    if (s === 'user' && hasRoot)
      throw new SkepError('bad_request', 'project_root is only valid with project scope');
    const effective: Scope | undefined = s === '' ? (hasRoot ? 'project' : forList ? undefined : 'user') : s;
    if (effective !== 'project') return { scope: effective, root: '' };
    if (!hasRoot) throw new SkepError('bad_request', 'project_root is required for project scope');
    return { scope: effective, root: await checkProjectRoot(projectRoot) };
  }

  // ---------------------------------------------------------------- install

  async install(request: InstallRequest): Promise<InstalledSkill> {
    if (typeof request.name !== 'string' || request.name.trim() === '')
      throw new SkepError('bad_request', 'name is required');
    const { scope, root } = await this.#scope(request.scope, request.project_root);
    const clients = resolveClients(request.clients, this.#env);
    const group = request.group === undefined || request.group === '' ? DEFAULT_GROUP : request.group;
    this.#groups.require(group);
    const resolved = await this.#resolve(request.name.trim(), request.version);
    if (scope === 'project' && request.allow_unsigned !== true) {
      throw new SkepError(
        'forbidden',
        `skill "${resolved.name}" is not signed; Skep does not verify signatures yet, so project installs need allow_unsigned=true`,
      );
    }
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
    };
    let lockSnapshot: string | undefined | null = null;
    if (tx.scope === 'project') {
      tx.lock = await readLock(root);
      lockSnapshot = await readFile(lockPath(root), 'utf8').catch(() => undefined);
    }
    try {
      const skill = await this.#installOne(resolved, tx, undefined);
      if (tx.lock !== undefined) await writeLock(root, tx.lock);
      for (const commit of tx.commits) await commit().catch(() => undefined);
      return skill;
    } catch (err) {
      for (const undo of tx.undo.reverse()) await undo().catch(() => undefined);
      if (lockSnapshot === undefined) await rm(lockPath(root), { force: true });
      else if (lockSnapshot !== null) await writeFileAtomic(lockPath(root), lockSnapshot, 0o644);
      throw err;
    }
  }

  async #installOne(
    resolved: ResolvedSkill,
    tx: InstallTx,
    requiredBy: string | undefined,
  ): Promise<InstalledSkill> {
    const name = resolved.name;
    if (tx.stack.includes(name))
      throw new SkepError('skill_artifact_invalid', `dependency cycle detected involving skill "${name}"`);
    const done = tx.visited.has(name) ? this.#records.get(name, tx.scope, tx.projectRoot) : undefined;
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
    const existing = this.#records.get(name, tx.scope, tx.projectRoot);
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
    // Directories shared by several clients (vscode, vscode-insider) are written once.
    const dirs = [
      ...new Set(writeClients.map((c) => join(skillsDirFor(c, tx.scope, tx.projectRoot, this.#env), name))),
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
      tx.undo.push(handle.rollback);
      tx.commits.push(handle.commit);
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
    const groupHadIt = this.#records.inGroup(name, tx.group);
    this.#records.save(skill, tx.group);
    tx.undo.push(async () => {
      if (existing === undefined) this.#records.delete(name, tx.scope, tx.projectRoot);
      else this.#records.save(existing, undefined);
      if (!groupHadIt) this.#records.removeFromGroup(name, tx.group);
    });
    tx.stack.push(name);
    for (const depRef of fm.requires) {
      const dep = await this.#resolve(depRef);
      const installed = await this.#installOne(dep, tx, name);
      dependencies.push({ name: installed.metadata.name, reference: depRef, digest: installed.digest });
    }
    tx.stack.pop();
    if (dependencies.length > 0) this.#records.save(skill, undefined);
    if (tx.lock !== undefined) {
      const first = dirs[0] ?? join(skillsDirFor(allClients[0]!, tx.scope, tx.projectRoot, this.#env), name);
      upsertEntry(tx.lock, {
        name,
        ...(fm.version === '' ? {} : { version: fm.version }),
        source: resolved.reference,
        digest: resolved.digest,
        contentDigest: await contentDigest(first),
        unsigned: true,
        ...(requiredBy === undefined ? {} : { requiredBy: [requiredBy] }),
        ...(explicit ? { explicit: true } : {}),
      });
    }
    return skill;
  }

  // ---------------------------------------------------------------- list, info, uninstall

  async list(filter: {
    scope?: string;
    client?: string;
    project_root?: string;
    group?: string;
  }): Promise<InstalledSkill[]> {
    const { scope, root } = await this.#scope(filter.scope, filter.project_root, true);
    if (filter.group !== undefined && filter.group !== '') this.#groups.require(filter.group);
    const f: ListFilter = {
      scope,
      projectRoot: scope === 'project' ? root : undefined,
      client: filter.client === '' ? undefined : filter.client,
      group: filter.group === '' ? undefined : filter.group,
    };
    return this.#records.list(f);
  }

  async info(
    name: string,
    scope?: string,
    projectRoot?: string,
  ): Promise<{ installed: InstalledSkill; unsigned: boolean | undefined }> {
    requireSkillName(name);
    const s = await this.#scope(scope, projectRoot);
    const record = this.#records.get(name, s.scope ?? 'user', s.root);
    if (record === undefined)
      throw new SkepError(
        'skill_not_found',
        `skill "${name}" is not installed in ${s.scope ?? 'user'} scope`,
      );
    let unsigned: boolean | undefined;
    if (record.scope === 'project') {
      const lock = await readLock(record.project_root);
      unsigned = lock.skills.find((e) => e.name === name)?.unsigned;
    }
    return { installed: record, unsigned };
  }

  async uninstall(name: string, scope?: string, projectRoot?: string): Promise<void> {
    requireSkillName(name);
    const s = await this.#scope(scope, projectRoot);
    await this.#uninstall(name, s.scope ?? 'user', s.root, new Set());
  }

  // ---------------------------------------------------------------- lock file: sync, upgrade

  /**
   * Restores a project's installed skills to its lock file (skills reference §1.7). Entries
   * without an install record are `missing`; records whose digest, clients or on-disk
   * contentDigest differ are `drifted`; both are reinstalled at the pinned digest (never a
   * newer one), unless `check`. Managed skills absent from the lock are `removed_from_lock`
   * (`prune` uninstalls them); skill folders Skep never installed are `never_managed`.
   */
  async sync(request: SyncRequest): Promise<SyncResult> {
    if (request.adopt === true) {
      throw new SkepError(
        'not_implemented',
        'adopt is not supported yet: install those skills with skep skill install to have them locked',
      );
    }
    const { root } = await this.#scope('project', request.project_root);
    const clients = resolveClients(request.clients, this.#env);
    const lock = await readLock(root);
    const result = emptySyncResult();
    // Dependencies first, so that a parent's restore finds them in place at their pinned digest.
    const entries = [...lock.skills].sort(
      (a, b) => Number(a.requiredBy === undefined) - Number(b.requiredBy === undefined),
    );
    const locked = new Set(entries.map((e) => e.name));
    for (const entry of entries) {
      const record = this.#records.get(entry.name, 'project', root);
      if (record === undefined) result.missing.push(entry.name);
      else if (await this.#drifted(entry, record, clients, root)) result.drifted.push(entry.name);
      else {
        result.already_current.push(entry.name);
        continue;
      }
      if (request.check === true) continue;
      try {
        await this.#installLocked(entry, pinnedSource(entry.source, entry.digest), clients, root, locked);
        result.installed.push(entry.name);
      } catch (err) {
        result.failed.push(failure(entry.name, err));
      }
    }
    for (const record of this.#records.list({ scope: 'project', projectRoot: root })) {
      const name = record.metadata.name;
      if (!record.managed || locked.has(name)) continue;
      result.removed_from_lock.push(name);
      if (request.prune !== true || request.check === true) continue;
      try {
        await this.#uninstall(name, 'project', root, new Set());
        result.pruned.push(name);
      } catch (err) {
        result.failed.push(failure(name, err));
      }
    }
    const seen = new Set<string>();
    for (const client of clients) {
      const dir = skillsDirFor(client, 'project', root, this.#env);
      const names = await readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const d of names) {
        if (!d.isDirectory() || seen.has(d.name) || locked.has(d.name)) continue;
        if (this.#records.get(d.name, 'project', root) !== undefined) continue;
        if (!(await pathExists(join(dir, d.name, 'SKILL.md')))) continue;
        seen.add(d.name);
        result.never_managed.push(d.name);
      }
    }
    for (const key of NAME_LISTS) result[key].sort();
    return result;
  }

  /**
   * Re-resolves each lock entry's `source` (skills reference §1.7 "Upgrade"): a moved tag or
   * branch gets the new content installed and pinned; digest- or commit-pinned sources are
   * `not-upgradable`. `preview` resolves and compares without installing; `fail_on_changes`
   * makes any pending upgrade a 409 (for CI freshness checks).
   */
  async upgrade(request: UpgradeSkillsRequest): Promise<{ outcomes: UpgradeOutcome[] }> {
    const { root } = await this.#scope('project', request.project_root);
    const clients = resolveClients(request.clients, this.#env);
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
        digest = (await this.#resolve(entry.source)).digest;
      } catch (err) {
        const f = failure(entry.name, err);
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
      try {
        await this.#installLocked(
          { ...entry, digest },
          pinnedSource(entry.source, digest),
          clients,
          root,
          locked,
        );
        outcomes.push({ ...base, status: 'upgraded', new_digest: digest });
      } catch (err) {
        const f = failure(entry.name, err);
        outcomes.push({ ...base, status: 'failed', new_digest: digest, reason: f.reason, error: f.error });
      }
    }
    return { outcomes };
  }

  /** True when the install differs from the lock entry: digest, clients, or files on disk. */
  async #drifted(
    entry: LockEntry,
    record: InstalledSkill,
    clients: string[],
    root: string,
  ): Promise<boolean> {
    if (record.digest !== entry.digest) return true;
    if (clients.some((c) => !record.clients.includes(c))) return true;
    for (const client of record.clients) {
      const dir = join(skillsDirFor(client, 'project', root, this.#env), entry.name);
      if (!(await pathExists(dir))) return true;
      if (entry.contentDigest !== undefined && (await contentDigest(dir)) !== entry.contentDigest)
        return true;
    }
    return false;
  }

  /**
   * Installs one lock entry at exactly `entry.digest` from `pinned`, for `clients`, replacing
   * what is there. Its dependencies are other lock entries and are left to their own turn.
   * The lock entry keeps its `source` and flags; digest and contentDigest are written.
   */
  async #installLocked(
    entry: LockEntry,
    pinned: string,
    clients: string[],
    root: string,
    locked: ReadonlySet<string>,
  ): Promise<void> {
    const resolved = await this.#resolve(pinned);
    if (resolved.digest !== entry.digest) {
      throw new SkepError(
        'not_found',
        `${entry.source} no longer provides ${entry.digest} (it resolves to ${resolved.digest})`,
      );
    }
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
      const skill = await this.#installOne(resolved, tx, undefined);
      if (entry.explicit !== true && skill.explicit)
        this.#records.save({ ...skill, explicit: false }, undefined);
      const dir = join(skillsDirFor(skill.clients[0] as string, 'project', root, this.#env), entry.name);
      const lock = await readLock(root);
      upsertEntry(lock, { ...entry, contentDigest: await contentDigest(dir) });
      await writeLock(root, lock);
      for (const commit of tx.commits) await commit().catch(() => undefined);
    } catch (err) {
      for (const undo of tx.undo.reverse()) await undo().catch(() => undefined);
      throw err;
    }
  }

  async #uninstall(name: string, scope: Scope, root: string, visited: Set<string>): Promise<void> {
    visited.add(name);
    const record = this.#records.get(name, scope, root);
    if (record === undefined)
      throw new SkepError('skill_not_found', `skill "${name}" is not installed in ${scope} scope`);
    if (scope === 'project' && record.managed) {
      const lock = await readLock(root);
      removeEntry(lock, name);
      await writeLock(root, lock);
    }
    const dirs = new Set(record.clients.map((c) => join(skillsDirFor(c, scope, root, this.#env), name)));
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    this.#records.delete(name, scope, root);
    for (const dep of record.dependencies) {
      if (visited.has(dep.name)) continue;
      const depRecord = this.#records.get(dep.name, scope, root);
      if (depRecord === undefined || depRecord.explicit) continue;
      if (this.#records.dependents(dep.name, scope, root).length > 0) continue;
      await this.#uninstall(dep.name, scope, root, visited);
    }
  }
}

/** Project-root rules (§1.5): absolute, no NUL or `..`, exists, no symlink anywhere, a directory, a git repository. */
async function checkProjectRoot(root: string): Promise<string> {
  if (root.includes('\0')) throw new SkepError('bad_request', 'project_root contains null bytes');
  if (!isAbsolute(root)) throw new SkepError('bad_request', `project_root must be absolute, got "${root}"`);
  if (root.split(/[\\/]/).includes('..'))
    throw new SkepError('bad_request', "project_root must not contain '..' segments");
  const cleaned = normalize(root).replace(/(.)\/+$/, '$1');
  let real: string;
  try {
    real = await realpath(cleaned);
  } catch {
    throw new SkepError('bad_request', 'project_root does not exist');
  }
  if (real !== cleaned)
    throw new SkepError('bad_request', `project_root must not contain symlinks (resolves to "${real}")`);
  if (!(await stat(real)).isDirectory())
    throw new SkepError('bad_request', 'project_root must be a directory');
  if (!(await pathExists(join(real, '.git'))))
    throw new SkepError('bad_request', 'project_root must be a git repository');
  return real;
}
