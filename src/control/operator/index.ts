export type { ServingCert } from './certs.js';
export { generateSelfSignedCert } from './certs.js';
export { configHash } from './config-hash.js';
export {
  ConfigController,
  ExtAuthController,
  FINALIZER,
  kubeSecretReader,
  SHARED_CONFIG_SPECS,
  sharedConfigControllers,
} from './controller.js';
export { buildCrd } from './crd.js';
export type { KubeClient } from './kube.js';
export { createKubeClient, loadKubeConfig } from './kube.js';
export type { LeaderElectionOptions } from './leader.js';
export { LEASE_RESOURCE, LeaderElector } from './leader.js';
export type { RunConfigAuth } from './runconfig.js';
export { buildRunConfigAuth } from './runconfig.js';
export type { Problem } from './validate.js';
export { formatProblem, validateExtAuthConfig, validateExtAuthConfigWithSecrets } from './validate.js';
export { startWebhook, WEBHOOK_PATH } from './webhook.js';
