/**
 * The workload runner process (`node dist/runner.mjs runner <name>`, spawned detached by the
 * workload manager through `entry.ts`; `skep runner <name>` is the same through the CLI). It deliberately
 * loads only what a runner needs — the store, the secrets provider, the runtime, the proxy
 * and the auth chain — not the management API, so each workload costs little memory and
 * starts quickly.
 */
import type { SkepConfig } from '../../config/index.js';
import { RotatingLogFile } from '../runtime/index.js';
import { SecretsService } from '../../secrets/index.js';
import { createLineLogger } from '../../shared/index.js';
import { openStore } from '../../store/index.js';
import { RUNNER_CONFIG_ENV, runnerLogPath } from '../../workloads/index.js';
import { runWorkload } from './runner.js';
import { abortOnStopSignals } from './signals.js';

export async function runnerMain(name: string): Promise<number> {
  const fromParent = process.env[RUNNER_CONFIG_ENV];
  // The spawner passes its validated config; a runner started by hand reads the config file.
  const config: SkepConfig =
    fromParent === undefined
      ? (await import('../../config/index.js')).loadConfig()
      : (JSON.parse(fromParent) as SkepConfig);
  delete process.env[RUNNER_CONFIG_ENV];
  const logFile = new RotatingLogFile(runnerLogPath(config.paths.logsDir, name), {
    maxBytes: config.workloads.log_max_bytes,
    files: config.workloads.log_files,
  });
  const logger = createLineLogger({
    level: process.env['SKEP_RUNNER_LOG_LEVEL'] ?? 'info',
    name: `runner:${name}`,
    write: (line) => logFile.write(line),
    writeBytes: (chunk) => logFile.write(chunk),
  });
  const controller = abortOnStopSignals(logger);
  // A runner must not die on a stray async error from a client connection; log it instead.
  process.on('uncaughtException', (err) => logger.error({ err }, 'uncaught exception'));
  const store = openStore(config.paths.databaseFile);
  const secrets = new SecretsService({ store, paths: config.paths, env: process.env });
  let code = 1;
  try {
    code = await runWorkload({
      name,
      store,
      config,
      secretLookup: secrets.lookup(),
      secrets,
      logger,
      signal: controller.signal,
    });
  } catch (err) {
    logger.error({ err }, 'runner failed');
  } finally {
    secrets.close();
    store.close();
    logFile.close();
  }
  // Nothing else should keep the runner alive once its workload is down.
  setTimeout(() => process.exit(code), 1000).unref();
  return code;
}
