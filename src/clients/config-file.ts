/**
 * Reading, editing and writing one client's MCP config file. Writes are atomic (temp file +
 * rename), keep the file's mode without its group and other bits (0600 for new files: the
 * entries carry each workload's access token), go to the real file behind a symlink,
 * and keep one backup of the previous content in `<file>.skep.bak`. A missing file, and its
 * directories, are created on the first entry written.
 */
import { chmod, readFile, realpath, stat } from 'node:fs/promises';
import { writeFileAtomic } from '../shared/index.js';
import type { ClientDefinition } from './catalog.js';
import { editJson, readJsonEntries } from './edit-json.js';
import { editToml, readTomlEntries } from './edit-toml.js';
import type { EntryChanges } from './edit-types.js';
import { editYaml, readYamlEntries } from './edit-yaml.js';

export const BACKUP_SUFFIX = '.skep.bak';

/** Applies the changes to the text of a config file in the client's format. */
export function editConfigText(
  client: ClientDefinition,
  text: string,
  changes: EntryChanges,
  file: string,
): string {
  const { layout } = client;
  switch (layout.kind) {
    case 'json-map':
      return editJson(text, layout.path, changes, file);
    case 'yaml-map':
    case 'yaml-list':
      return editYaml(text, layout.kind, layout.path, changes, file);
    case 'toml-map':
    case 'toml-list':
      return editToml(text, layout.kind, layout.path, changes, file);
  }
}

/** The server entries currently in a config text, by name. */
export function readConfigEntries(
  client: ClientDefinition,
  text: string,
  file: string,
): Record<string, unknown> {
  const { layout } = client;
  switch (layout.kind) {
    case 'json-map':
      return readJsonEntries(text, layout.path, file);
    case 'yaml-map':
    case 'yaml-list':
      return readYamlEntries(text, layout.kind, layout.path, file);
    case 'toml-map':
    case 'toml-list':
      return readTomlEntries(text, layout.kind, layout.path, file);
  }
}

/** The file's text, or undefined when it does not exist. */
export async function readConfigFile(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Replaces the file's content atomically, after saving the old content as the backup. */
export async function writeConfigFile(
  file: string,
  previous: string | undefined,
  next: string,
): Promise<void> {
  let target = file;
  let mode = 0o600;
  if (previous !== undefined) {
    target = await realpath(file).catch(() => file);
    // The entries Skep writes carry credentials: nobody but the owner may read the file.
    mode = (await stat(target)).mode & 0o700;
    const backup = `${file}${BACKUP_SUFFIX}`;
    // The backup holds exactly the text this edit started from.
    await writeFileAtomic(backup, previous, 0o600);
  }
  await writeFileAtomic(target, next, mode);
  if (previous !== undefined) await chmod(target, mode).catch(() => undefined);
}
