/**
 * CEL helpers shared by run-time code (awsSts role mapping in `src/dataplane/middleware/auth`) and the Kubernetes
 * adapter (`src/control/operator`: CRD validation rules, admission webhook). They live here, next to
 * the other schema tooling, so that the proxy's auth chain does not depend on the operator.
 */
import { Environment } from '@marcbachmann/cel-js';

/** JSON → CEL values: Kubernetes types integer fields as CEL `int`, which cel-js models as bigint. */
export function toCelValue(value: unknown): unknown {
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  if (Array.isArray(value)) return value.map(toCelValue);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toCelValue(v)]));
  }
  return value;
}

// ToolHive's spec.awsSts.roleMappings[].matcher: "CEL expression over a `claims` map of all JWT claims".
const matcherEnv = new Environment().registerVariable('claims', 'map');

/** Returns why a role-mapping matcher cannot be used, or undefined when it compiles to a boolean. */
export function checkMatcher(expression: string): string | undefined {
  const result = matcherEnv.check(expression) as { valid: boolean; type?: string; error?: Error };
  if (!result.valid)
    return `CEL expression does not compile: ${result.error?.message.split('\n')[0] ?? 'invalid'}`;
  if (result.type !== 'bool' && result.type !== 'dyn')
    return `CEL expression must yield a bool, not ${result.type}`;
  return undefined;
}
