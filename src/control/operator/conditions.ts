/** Status conditions (metav1.Condition) as both controllers write them. */
import type { Condition } from '../../schemas/extauth/index.js';
import type { KubeObject } from './kube.js';

/** The conditions an object's status holds now. */
export const conditionsOf = (obj: KubeObject): Condition[] =>
  (obj.status?.['conditions'] as Condition[] | undefined) ?? [];

/**
 * `next` as written for `generation`: its lastTransitionTime is `now` (whole seconds, as
 * Kubernetes writes it) when the status changes, and stays what it was while it does not.
 */
export function stampCondition(
  previous: readonly Condition[],
  next: Omit<Condition, 'lastTransitionTime'>,
  generation: number,
  now: Date,
): Condition {
  const before = previous.find((c) => c.type === next.type);
  const lastTransitionTime =
    before !== undefined && before.status === next.status
      ? before.lastTransitionTime
      : now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  return Object.assign({}, next, { observedGeneration: generation, lastTransitionTime });
}
