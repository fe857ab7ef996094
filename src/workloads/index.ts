/** Workloads: run configurations, the lifecycle manager, and the runner process plumbing. */
export type { EndpointAccess } from './exposure.js';
export { endpointAccessOf, hostExposureProblem, OPEN_TO_LOCAL_CALLERS, proxyUrlOf } from './exposure.js';
export { removeLogs, runnerLogPath, serverLogPath, tailFile } from './log-files.js';
export type { WorkloadContainers } from './config-checks.js';
export type {
  BulkAction,
  CreateOptions,
  ListOptions,
  WorkloadChange,
  WorkloadChangeKind,
  WorkloadChangeListener,
  WorkloadManagerOptions,
} from './manager.js';
export type { RegistryServerSpec, ResolveRegistryServer } from './registry-server.js';
export { WorkloadManager } from './manager.js';
export { RUNNER_V8_FLAGS, type RunnerKind, runnerV8Flags } from './runner-flags.js';
export { baseNameFor, validateWorkloadName, workloadNameError, workloadNameProblem } from './names.js';
export type { ProxyMode, RunConfig, Transport } from './run-config.js';
export { parseRunConfig } from './run-config.js';
export type { SpawnRunner } from './runner-process.js';
export {
  cliEntry,
  RUNNER_CONFIG_ENV,
  runnerAlive,
  runnerEntry,
  spawnRunner,
  stopRunner,
} from './runner-process.js';
export type {
  BulkRequest,
  CreateWorkloadRequest,
  UpdateWorkloadRequest,
  WorkloadDetail,
  WorkloadSummary,
} from '../schemas/index.js';
export type { UpgradeCheckResult, UpgradeRequest, UpgradeStatus } from './upgrade.js';
export type { SecretLookup } from './secrets.js';
export { resolveSecretReferences } from './secrets.js';
export { keepsHttpSessions, sessionStorageOf } from './session-storage.js';
export type { FieldProblem } from './unsupported-fields.js';
export { unsupportedFields } from './unsupported-fields.js';
export { DEFAULT_GUARDRAILS_SUMMARY, summariesOf } from './views.js';
export type { DesiredState, StatusUpdate, WorkloadRow, WorkloadStatus } from './workload-store.js';
export { AUTHORIZATION_PENDING, WORKLOAD_STATUSES, WorkloadStore } from './workload-store.js';
