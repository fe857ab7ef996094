/**
 * What every skills operation needs from the service: its stores, the groups, the
 * environment (read at call time: HOME, credentials and dev switches may change between
 * calls) and a way to open an OCI session. `SkillsService` builds one; the operation modules
 * (`builds.ts`, `resolve.ts`, `install.ts`, `installed.ts`, `project-sync.ts`) take it as
 * their first argument, so none of them holds state of its own.
 */
import type { GroupService } from '../groups/index.js';
import type { Logger } from '../shared/index.js';
import type { ArchiveLimits } from './archive.js';
import type { GitOptions } from './git-source.js';
import type { LocalStore } from './local-store.js';
import type { OciSession } from './oci-client.js';
import type { OciRef } from './oci-ref.js';
import type { SkillRecords } from './records.js';
import type { SkillCatalog } from './registry-policy.js';

export interface SkillsContext {
  readonly records: SkillRecords;
  readonly groups: GroupService;
  readonly local: LocalStore;
  readonly limits: ArchiveLimits;
  readonly logger: Logger;
  env(): NodeJS.ProcessEnv;
  git(): GitOptions;
  session(ref: OciRef, push: boolean): OciSession;
  /** The configured registry's skills: names resolve through it, and its entries' signer policy applies. */
  readonly catalog?: SkillCatalog | undefined;
}
