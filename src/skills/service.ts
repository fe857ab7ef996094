/**
 * The skills domain service behind `/api/v1beta/skills` and `skep skill`: validate, preview,
 * build, push, list/remove builds, install (OCI, git or local build; per client and scope;
 * with dependencies), list, info and uninstall. Sources are resolved into a verified set of
 * archive entries first; nothing is written until every check passed, and a failed install
 * restores files, records and the lock file as they were (as ToolHive's install does).
 *
 * The class is the domain's one entry point; each concern lives in its own module
 * (`builds.ts`, `resolve.ts`, `scope.ts`, `install.ts`, `installed.ts`, `project-sync.ts`)
 * and works on the `SkillsContext` built here.
 */
import type { GroupService } from '../groups/index.js';
import { type Logger, silentLogger } from '../shared/index.js';
import type { Store } from '../store/index.js';
import { type ArchiveLimits, DEFAULT_LIMITS } from './archive.js';
import {
  type BuildInfo,
  buildSkill,
  listBuilds,
  pushBuild,
  type PushRequest,
  type PushResult,
  removeBuild,
} from './builds.js';
import type { SkillsContext } from './context.js';
import { type GitOptions, gitOptionsFromEnv } from './git-source.js';
import { type InstallRequest, installSkill } from './install.js';
import { type InstalledFilter, installedInfo, listInstalled, uninstallSkill } from './installed.js';
import { LocalStore } from './local-store.js';
import type { SyncRequest, SyncResult, UpgradeOutcome, UpgradeSkillsRequest } from './lock-sync.js';
import { type OciClientOptions, OciSession } from './oci-client.js';
import { privateSkillHosts } from './private-hosts.js';
import { syncProject, upgradeProject } from './project-sync.js';
import { type InstalledSkill, SkillRecords } from './records.js';
import type { SkillCatalog } from './registry-policy.js';
import { type SkillContent, skillContent } from './resolve.js';
import { type ValidationResult, validateSkillDir } from './skill-dir.js';

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
  /** Where a failed step of an install's commit or rollback is reported. */
  logger?: Logger;
  /**
   * The configured registry's skills (`registrySkillCatalog(() => registryService)`): a plain
   * name installs from its entry, and an entry's `provenance` is the signer an install from it
   * must have (`registry-policy.ts`). Without it, names resolve to local builds only.
   */
  catalog?: SkillCatalog;
}

export class SkillsService {
  readonly #ctx: SkillsContext;

  constructor(options: SkillsServiceOptions) {
    const env = (): NodeJS.ProcessEnv => options.env ?? process.env;
    this.#ctx = {
      records: new SkillRecords(options.store),
      groups: options.groups,
      local: new LocalStore(options.storeDir),
      limits: options.limits ?? DEFAULT_LIMITS,
      catalog: options.catalog,
      logger: options.logger ?? silentLogger,
      env,
      git: () => options.git ?? gitOptionsFromEnv(env(), options.privateHosts),
      session: (ref, push) =>
        new OciSession(ref, push, {
          ...options.oci,
          env: env(),
          privateHosts: privateSkillHosts(options.privateHosts ?? [], env()),
        }),
    };
  }

  // ---------------------------------------------------------------- validate, build, push

  validate(path: string): Promise<ValidationResult> {
    return validateSkillDir(path);
  }

  /** Packages the skill folder into the local store; returns the tag (or the digest when untagged). */
  build(path: string, tag?: string): Promise<{ reference: string }> {
    return buildSkill(this.#ctx, path, tag);
  }

  builds(): Promise<BuildInfo[]> {
    return listBuilds(this.#ctx);
  }

  removeBuild(tag: string): Promise<void> {
    return removeBuild(this.#ctx, tag);
  }

  /** Pushes a local build to the registry named by its tag (which must be a full reference). */
  push(request: PushRequest): Promise<PushResult> {
    return pushBuild(this.#ctx, request);
  }

  // ---------------------------------------------------------------- resolving sources

  /** `GET /skills/content?ref=`: the skill's metadata, SKILL.md body and file list, without installing. */
  content(ref: string | undefined): Promise<SkillContent> {
    return skillContent(this.#ctx, ref);
  }

  // ---------------------------------------------------------------- install

  install(request: InstallRequest): Promise<InstalledSkill> {
    return installSkill(this.#ctx, request);
  }

  // ---------------------------------------------------------------- list, info, uninstall

  list(filter: InstalledFilter): Promise<InstalledSkill[]> {
    return listInstalled(this.#ctx, filter);
  }

  info(
    name: string,
    scope?: string,
    projectRoot?: string,
  ): Promise<{ installed: InstalledSkill; unsigned: boolean | undefined }> {
    return installedInfo(this.#ctx, name, scope, projectRoot);
  }

  uninstall(name: string, scope?: string, projectRoot?: string): Promise<void> {
    return uninstallSkill(this.#ctx, name, scope, projectRoot);
  }

  // ---------------------------------------------------------------- lock file: sync, upgrade

  /** Restores a project's installed skills to its lock file (see `syncProject`). */
  sync(request: SyncRequest): Promise<SyncResult> {
    return syncProject(this.#ctx, request);
  }

  /** Re-resolves the lock file's sources and pins what moved (see `upgradeProject`). */
  upgrade(request: UpgradeSkillsRequest): Promise<{ outcomes: UpgradeOutcome[] }> {
    return upgradeProject(this.#ctx, request);
  }
}
