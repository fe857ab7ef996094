/**
 * Workload names: the rule (in `name-rule/`, which the web UI bundles too) as a SkepError, and
 * the name a workload created without one gets.
 */
import { SkepError } from '../shared/index.js';
import { MAX_WORKLOAD_NAME, workloadNameError } from './name-rule/index.js';

export { MAX_WORKLOAD_NAME, workloadNameError, workloadNameProblem } from './name-rule/index.js';

export function validateWorkloadName(name: string): void {
  const message = workloadNameError(name);
  if (message !== undefined) throw new SkepError('invalid_name', message);
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
