import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Finds an executable on the PATH of `env`; undefined when no PATH entry has it. */
export function findExecutable(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env['PATH'] ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/** True when `file` exists and this process may execute it. */
export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
