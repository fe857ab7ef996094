export type { RuntimeSelectorOptions, SocketCandidate } from './detect.js';
export { engineCandidates, findEngine, instanceId, RuntimeSelector } from './detect.js';
// The container runtime is loaded by RuntimeSelector once an engine answers; exported as a
// type only, so that a process workload's runner never loads it.
export type { DockerRuntime, DockerRuntimeOptions } from './docker/docker-runtime.js';
export { LABEL_INSTANCE, LABEL_MANAGED, LABEL_ROLE, LABEL_WORKLOAD } from './docker/labels.js';
export { BUILTIN_PROFILES, resolvePermissionProfile } from './docker/profile.js';
export type { LogFileOptions } from './log-file.js';
export { RotatingLogFile } from './log-file.js';
export type { RegistrySpec, StoreEntry } from './npm-store.js';
export { NpmStore, parseRegistrySpec, selectBin, storeKey } from './npm-store.js';
export type { PackageUser, PrunedEntry } from './package-refs.js';
export { prunePackageStores } from './package-refs.js';
export type { ProcessCommand, ProcessRuntimeOptions } from './process.js';
export { checkLocalExecutable, ProcessRuntime, processCommand } from './process.js';
export type { SandboxPaths } from './sandbox/bwrap-sandbox.js';
export { removeSandboxHome } from './sandbox/bwrap-sandbox.js';
export type { SandboxChoice, SandboxOverride } from './sandbox/select.js';
export { probeBwrap } from './sandbox/select.js';
export type { WorkloadSandbox, WorkloadSandboxFields } from './sandbox/workload.js';
export { checkWorkloadSandbox, workloadSandbox } from './sandbox/workload.js';
export { SERVER_ENV_ALLOWLIST, serverEnvironment } from './server-env.js';
export type {
  ImageVerificationPolicy,
  ImageVerificationResult,
  PermissionProfile,
  Runtime,
  RuntimeHealth,
  RuntimeName,
  ServerExit,
  ServerHandle,
  ServerSpec,
  ServerTransport,
} from './types.js';
