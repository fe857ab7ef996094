/** Reading a file named on the command line. */
import { readFileSync } from 'node:fs';
import { SkepError } from '../../shared/index.js';

/**
 * The text of the file at `path` (with `dashIsStdin`, `-` reads stdin). One that cannot be read
 * is an `invalid_path` naming it, so the CLI prints one line instead of a system error.
 */
export function readInputFile(path: string, options: { dashIsStdin: boolean }): string {
  try {
    return readFileSync(options.dashIsStdin && path === '-' ? 0 : path, 'utf8');
  } catch (err) {
    throw new SkepError('invalid_path', `cannot read ${path}: ${(err as Error).message}`, { cause: err });
  }
}
