/**
 * Where Skep keeps its files. `SKEP_HOME` moves everything under one folder (tests use a
 * temp dir); otherwise the XDG base-directory variables apply, with the platform defaults.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface SkepPaths {
  /** Configuration (`config.yaml`, the generated secrets password file). */
  readonly configDir: string;
  /** Durable state: the SQLite store, the discovery file. */
  readonly stateDir: string;
  /** Data: workload logs, encrypted secrets, skill builds. */
  readonly dataDir: string;
  /** Re-creatable caches: registry downloads. */
  readonly cacheDir: string;
  readonly configFile: string;
  readonly databaseFile: string;
  readonly discoveryFile: string;
  readonly logsDir: string;
}

export function resolvePaths(env: NodeJS.ProcessEnv = process.env, platform = process.platform): SkepPaths {
  const skepHome = env['SKEP_HOME'];
  let configDir: string;
  let stateDir: string;
  let dataDir: string;
  let cacheDir: string;
  if (skepHome !== undefined && skepHome !== '') {
    configDir = join(skepHome, 'config');
    stateDir = join(skepHome, 'state');
    dataDir = join(skepHome, 'data');
    cacheDir = join(skepHome, 'cache');
  } else {
    const home = env['HOME'] ?? homedir();
    const mac = platform === 'darwin' ? join(home, 'Library', 'Application Support') : undefined;
    const xdg = (name: string, linuxDefault: string, macDefault = mac): string =>
      env[name] !== undefined && env[name] !== '' ? env[name] : (macDefault ?? join(home, linuxDefault));
    configDir = join(xdg('XDG_CONFIG_HOME', '.config'), 'skep');
    stateDir = join(xdg('XDG_STATE_HOME', join('.local', 'state')), 'skep');
    dataDir = join(xdg('XDG_DATA_HOME', join('.local', 'share')), 'skep');
    cacheDir = join(
      xdg('XDG_CACHE_HOME', '.cache', mac === undefined ? undefined : join(home, 'Library', 'Caches')),
      'skep',
    );
  }
  return Object.freeze({
    configDir,
    stateDir,
    dataDir,
    cacheDir,
    configFile: join(configDir, 'config.yaml'),
    databaseFile: join(stateDir, 'skep.db'),
    discoveryFile: join(stateDir, 'server', 'server.json'),
    logsDir: join(dataDir, 'logs'),
  });
}
