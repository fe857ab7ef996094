/**
 * Workload names. The rule is the reference's (ToolHive's workload API): `[a-zA-Z0-9._-]`,
 * 1–100 characters, and nothing that could escape a directory or a shell.
 */
import { SkepError } from '../shared/index.js';

const NAME = /^[a-zA-Z0-9._-]+$/;
export const MAX_WORKLOAD_NAME = 100;

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

export function validateWorkloadName(name: string): void {
  const problem = workloadNameProblem(name);
  if (problem !== undefined) throw new SkepError('invalid_name', `invalid workload name: ${problem}`);
}

/**
 * A readable base name for a workload created without one: the package or executable name
 * without scope, version or tag (`npx://@scope/pkg@1.2` → `pkg`, `ghcr.io/o/fetch:1` → `fetch`).
 */
export function baseNameFor(source: string): string {
  let rest = source.replace(/^[a-z]+:\/\//, '');
  if (/^(npx|uvx):\/\//.test(source)) {
    // npm/PyPI specifiers: drop a version (`pkg@1.2`, `pkg==1.0`) but keep a leading scope `@`.
    rest = rest.replace(/(.)@[^/]*$/, '$1').replace(/[=<>~!].*$/, '');
  } else if (!source.startsWith('cmd://')) {
    rest = rest.replace(/@sha256:.*$/, '').replace(/:[^/:]*$/, '');
  }
  const last =
    rest
      .split(/[\\/]/)
      .filter((p) => p !== '')
      .pop() ?? '';
  const cleaned = last
    .replace(/\.(m?js|cjs|py|sh|exe)$/, '')
    .replace(/[^a-zA-Z0-9._-]+/g, '-')
    .replace(/\.{2,}/g, '.')
    .replace(/^[-.]+|[-.]+$/g, '')
    .slice(0, MAX_WORKLOAD_NAME - 4);
  return cleaned === '' ? 'workload' : cleaned;
}
