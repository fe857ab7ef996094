/**
 * The config file (`config.yaml`), parsed once at the edge into a frozen, typed object.
 * Every default lives in the schema below, with its unit. Settings that the API changes at
 * run time (registry source, secrets provider) live in the state store instead.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { ConfigFile } from '../schemas/index.js';
import { formatAjvError, validateConfigFile } from '../schemas/validators/config-file/index.js';
import { SkepError } from '../shared/index.js';
import { resolvePaths, type SkepPaths } from './paths.js';
import { securePrivateDirs } from './private-dirs.js';

export type SkepConfig = Readonly<ConfigFile> & { readonly paths: SkepPaths };

/**
 * Parses and validates config text (YAML); missing sections take their defaults. The check is
 * the validator generated from `ConfigSchema` (no Ajv is compiled at start); a mistake is
 * `invalid_config` naming every bad field and the file.
 */
export function parseConfig(text: string, source = 'config'): ConfigFile {
  let raw: unknown;
  try {
    raw = text.trim() === '' ? {} : parseYaml(text);
  } catch (err) {
    throw new SkepError('invalid_config', `${source}: not valid YAML: ${(err as Error).message}`, {
      cause: err,
    });
  }
  if (raw === null || raw === undefined) raw = {};
  const value = structuredClone(raw);
  if (!validateConfigFile(value)) {
    const problems = (validateConfigFile.errors ?? []).map(formatAjvError);
    throw new SkepError('invalid_config', `invalid ${source}: ${problems.join('; ')}`);
  }
  return value as ConfigFile;
}

/**
 * Loads the config file (absent file → all defaults), after making sure Skep's folders are
 * private (`private-dirs.ts`): every process that reads or writes them starts here. A repaired
 * folder is reported through `warn` (stderr by default).
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  warn: (message: string) => void = (message) => void process.stderr.write(`warning: ${message}\n`),
): SkepConfig {
  const paths = resolvePaths(env);
  securePrivateDirs(paths, warn);
  let text = '';
  try {
    text = readFileSync(paths.configFile, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const parsed = parseConfig(text, paths.configFile);
  return deepFreeze({ ...parsed, paths });
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
