/**
 * One full garbage collection in a running Node process, from outside it, for
 * `npm run bench -- cpu`: every long-running runner has run full GCs, but in a bench run a
 * runner with little to promote may never get there, and a runner can behave differently once
 * it has (docs/performance.md, "Why a runner got slower after its first full GC").
 *
 * Asked through the process's inspector (bench/lib/inspector.ts): `HeapProfiler.collectGarbage`,
 * a full GC without a heap snapshot (a snapshot would leave V8 tracking every object move for
 * good).
 */
import { withInspector } from './inspector.js';

/** Runs one full GC in process `pid` (a Node process of this user, inspector port 9229 free). */
export async function fullGcIn(pid: number): Promise<void> {
  await withInspector(pid, (call) => call('HeapProfiler.collectGarbage'));
}
