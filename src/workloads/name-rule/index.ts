/**
 * The workload name rule, in one place for the API, the CLI and the web UI (which bundles this
 * file alone: it imports nothing). The rule is the reference's (ToolHive's workload API):
 * `[a-zA-Z0-9._-]`, 1–100 characters, and nothing that could escape a directory or a shell; a
 * name the reference accepts is accepted here, so its clients keep working.
 */

export const MAX_WORKLOAD_NAME = 100;

/** The rule in words, for a form's hint. */
export const WORKLOAD_NAME_HINT = "Letters, digits, '.', '_' and '-' (at most 100).";

/** The characters a name may hold, as an HTML `pattern` (a whole-value match). */
export const WORKLOAD_NAME_PATTERN = '[a-zA-Z0-9._\\-]+';

const NAME = /^[a-zA-Z0-9._-]+$/;

/** Returns why `name` is not a valid workload name, or undefined when it is. */
export function workloadNameProblem(name: string): string | undefined {
  if (name === '') return 'the name is empty';
  if (name.length > MAX_WORKLOAD_NAME) return `longer than ${MAX_WORKLOAD_NAME} characters`;
  if (name.includes('\0')) return 'contains a NUL byte';
  if (name === '.' || name === '..' || name.includes('..')) return "contains '..' (path traversal)";
  if (/[$&;|`]/.test(name)) return 'contains a shell metacharacter';
  if (!NAME.test(name)) return "use only letters, digits, '.', '_' and '-'";
  return undefined;
}

/** The one message every surface shows for an invalid name, or undefined when it is valid. */
export function workloadNameError(name: string): string | undefined {
  const problem = workloadNameProblem(name);
  return problem === undefined ? undefined : `invalid workload name '${name}': ${problem}`;
}
