/**
 * Clean-up that must run before the temporary home is removed (stopping workloads through the
 * CLI needs the home's store). node:test runs `after` hooks in the order they were registered,
 * so this registers its slot first; the functions added later run newest first.
 */
import type { TestContext } from 'node:test';

export function cleanupFirst(t: TestContext): (fn: () => unknown) => void {
  const fns: (() => unknown)[] = [];
  t.after(async () => {
    for (const fn of fns.reverse()) await fn();
  });
  return (fn) => {
    fns.push(fn);
  };
}
