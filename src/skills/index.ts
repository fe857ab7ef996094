/** Skills: SKILL.md validation, OCI and git sources, local builds, installs per client and scope. */

export { SKILL_CLIENT_TYPES } from './client-dirs.js';
export type { InstalledSkill, SkillDependency } from './records.js';
export type { BuildInfo, PushRequest } from './builds.js';
export type { InstallRequest } from './install.js';
export type { SkillContent } from './resolve.js';
export type { SkillsServiceOptions } from './service.js';
export type { SyncRequest, SyncResult, UpgradeOutcome, UpgradeSkillsRequest } from './lock-sync.js';
export { SkillsService } from './service.js';
// The composition root hands the registry's skills to the service through this.
export { registrySkillCatalog, type SkillCatalog } from './registry-policy.js';
export type { ValidationResult } from './skill-dir.js';
// The OCI distribution client, also used by the operator to read an image's entrypoint.
export { type Credentials, MEDIA_INDEX, OciSession } from './oci-client.js';
export { parseOciRef } from './oci-ref.js';
