/**
 * What a process allocates that outlives young-generation collections, for
 * `npm run bench -- cpu --heap-survivors`: V8's sampling heap profiler (through the process's
 * inspector, bench/lib/inspector.ts) with objects that a young-generation GC collected left
 * out. A request path that allocates only short-lived objects shows little; objects that are
 * kept past their request, or garbage that something keeps reachable from the old generation,
 * show where they were allocated. This is what found the `Map`s of docs/performance.md, "Why a
 * runner got slower after its first full GC".
 */
import { writeFileSync } from 'node:fs';
import { withInspector } from './inspector.js';

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

export interface HeapSurvivors {
  /** The profile, for Chrome DevTools (Memory, load). */
  file: string;
  /** Bytes that outlived young-generation GCs, per call. */
  bytes_per_call: number;
  /** The allocating functions with the most such bytes, per call. */
  top_sites_bytes_per_call: Array<[string, number]>;
}

/** Records process `pid` while `during` runs `calls` calls; writes the profile to `file`. */
export async function recordHeapSurvivors(
  pid: number,
  during: () => Promise<unknown>,
  calls: number,
  file: string,
): Promise<HeapSurvivors> {
  const profile = await withInspector(pid, async (call) => {
    await call('HeapProfiler.startSampling', {
      samplingInterval: 1024,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: false,
    });
    await during();
    const { profile } = await call('HeapProfiler.stopSampling');
    return profile as { head: ProfileNode };
  });
  writeFileSync(file, JSON.stringify(profile));
  const bySite = new Map<string, number>();
  let total = 0;
  const walk = (node: ProfileNode): void => {
    if (node.selfSize > 0) {
      const f = node.callFrame;
      const site = `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`;
      bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
      total += node.selfSize;
    }
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  const perCall = (bytes: number) => Math.round(bytes / calls);
  return {
    file,
    bytes_per_call: perCall(total),
    top_sites_bytes_per_call: [...bySite]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 12)
      .map(([site, bytes]) => [site, perCall(bytes)]),
  };
}
