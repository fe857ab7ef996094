/**
 * `skep operator pod-runner --config /etc/runconfig/runconfig.json`: the Skep runner inside a
 * Kubernetes pod (docs/kubernetes.md). It is the same runner as on a workstation (`runWorkload`:
 * proxy, middleware pipeline, restart supervision), fed from the mounted run configuration instead
 * of the management store: the configuration is written into a private store under `$SKEP_HOME` (an
 * emptyDir), claimed by this process, and run in the foreground until SIGTERM. Secret references in
 * the run configuration (`<ENV>,target=...`, `header_forward.add_headers_from_secret`) name
 * environment variables the Deployment fills from Secrets; they are looked up in this process's
 * environment and never passed to the server (the runtime gives a server only its allow-list,
 * `env_vars` and its `secrets`). Local servers run unsandboxed here: the container is their
 * sandbox.
 */
import { readFileSync } from 'node:fs';
import { parseConfig, resolvePaths, type SkepConfig } from '../../config/index.js';
import { abortOnStopSignals, runWorkload } from '../../dataplane/runner/index.js';
import { createLogger, jsonSyntaxError, SkepError } from '../../shared/index.js';
import { openStore } from '../../store/index.js';
import { parseRunConfig, WorkloadStore } from '../../workloads/index.js';

export interface PodRunnerOptions {
  configFile: string;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
}

/** The Skep configuration of a pod runner: process runtime, no sandbox, state under SKEP_HOME. */
export function podRunnerConfig(env: NodeJS.ProcessEnv): SkepConfig {
  const paths = resolvePaths({ SKEP_HOME: env['SKEP_HOME'] || '/tmp/skep' });
  const parsed = parseConfig('runtime:\n  type: process\n  sandbox: "off"\n', 'pod runner config');
  return { ...parsed, paths };
}

export async function runPodRunner(options: PodRunnerOptions): Promise<number> {
  const env = options.env ?? process.env;
  let text: string;
  try {
    text = readFileSync(options.configFile, 'utf8');
  } catch (err) {
    throw new SkepError(
      'invalid_path',
      `cannot read ${options.configFile}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new SkepError(
      'invalid_config',
      `${options.configFile} is not JSON (${jsonSyntaxError(text, err)})`,
    );
  }
  const runConfig = parseRunConfig(raw, options.configFile);
  const config = podRunnerConfig(env);
  const { mkdirSync } = await import('node:fs');
  mkdirSync(config.paths.stateDir, { recursive: true });
  mkdirSync(config.paths.logsDir, { recursive: true });
  const logger = createLogger({
    name: `runner:${runConfig.name}`,
    level: env['SKEP_RUNNER_LOG_LEVEL'] ?? 'info',
  });
  const store = openStore(config.paths.databaseFile);
  const rows = new WorkloadStore(store);
  rows.delete(runConfig.name);
  if (rows.insert(runConfig, 'starting', 'running') !== 'ok')
    throw new SkepError('conflict', `workload ${runConfig.name} could not be recorded`);
  rows.setStatus(runConfig.name, { status: 'starting', runnerPid: process.pid });
  const controller = abortOnStopSignals(logger);
  options.signal?.addEventListener('abort', () => controller.abort(), { once: true });
  try {
    return await runWorkload({
      name: runConfig.name,
      store,
      config,
      secretLookup: async (name) => env[name],
      logger,
      signal: controller.signal,
      // The pod network, its Service and NetworkPolicies are the boundary of a pod's proxy.
      exposureAccepted: 'Kubernetes pod: the Service and NetworkPolicies decide who can reach it',
    });
  } finally {
    store.close();
  }
}
