/**
 * CPU accounting for benchmarks that measure what a call costs the processes on its path,
 * from outside them, in a unit a noisy machine does not blur: CPU time per call.
 *
 * Two sources, both from /proc:
 * - per-thread `schedstat` (its first field: nanoseconds on a CPU, user + system), summed over
 *   every thread of the process (`/proc/<pid>/task/*`): nanosecond resolution, so a round of a
 *   few thousand calls is measured exactly; threads that end during a round are missed (a Node
 *   process keeps its threads). Its third field, the times a thread was put on a CPU, gives the
 *   wake-ups per call: what batching saves, and on a VM each wake-up of a sleeping process is
 *   a large part of what a call costs;
 * - `stat`'s utime + stime (clock ticks, usually 10 ms): the classic figure, coarse, reported
 *   beside the first as a cross-check (a round must use ≥ 1 s of CPU for a tick to be < 1 %).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { cpuMicrosOf, round } from './workloads.js';

/**
 * CPU a process has used, µs, and the times its threads were scheduled in, from their
 * schedstat (NaN when the process is gone).
 */
export function taskSched(pid: number): { cpuMicros: number; runs: number } {
  let ns = 0;
  let runs = 0;
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return { cpuMicros: Number.NaN, runs: Number.NaN };
  }
  for (const tid of tasks) {
    try {
      const [onCpu, , slices] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ');
      ns += Number(onCpu);
      runs += Number(slices);
    } catch {
      // the thread ended
    }
  }
  return { cpuMicros: ns / 1000, runs };
}

/** User and system CPU time of a process, clock ticks (`/proc/<pid>/stat` fields 14, 15). */
function ticksOf(pid: number): { user: number; system: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(fields[11]), system: Number(fields[12]) };
  } catch {
    return { user: Number.NaN, system: Number.NaN };
  }
}

/** A process's resident set now and at its peak, MB (`VmRSS` and `VmHWM` of /proc/<pid>/status). */
export function memoryOf(pid: number): { rss_mb: number; peak_rss_mb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss_mb: round(kb('VmRSS') / 1024, 1), peak_rss_mb: round(kb('VmHWM') / 1024, 1) };
}

/** The pids of every process below `pid` (children, grandchildren, ...). */
export function descendantsOf(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(entry));
      children.set(ppid, list);
    } catch {
      // gone
    }
  }
  const out: number[] = [];
  const stack = [...(children.get(pid) ?? [])];
  while (stack.length > 0) {
    const p = stack.pop()!;
    out.push(p);
    stack.push(...(children.get(p) ?? []));
  }
  return out;
}

/** The command line of `pid`, arguments joined by spaces ('' when gone). */
export function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}

export interface CpuPhase {
  calls: number;
  p50_ms: number;
  p99_ms: number;
  calls_per_s: number;
  /** CPU per call of each named process, µs (schedstat). */
  cpu_us: Record<string, number>;
  /** The same from /proc/<pid>/stat utime + stime (clock-tick resolution). */
  cpu_us_ticks: Record<string, number>;
  /** The kernel's share (stime / (utime + stime)) of each process's CPU, from the ticks. */
  system_share: Record<string, number>;
  /** Times each process's threads were put on a CPU, per call (schedstat). */
  runs: Record<string, number>;
  /** CPU per call of the bench process itself (the client), µs. */
  client_cpu_us: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/**
 * `total` calls spread over `calls` (each caller sequential; one caller = concurrency 1),
 * with latency percentiles, throughput, and the CPU each process of `pids` spent per call.
 */
export async function cpuPhase(
  calls: Array<() => Promise<void>>,
  total: number,
  pids: Record<string, number>,
): Promise<CpuPhase> {
  const names = Object.keys(pids);
  const before = names.map((n) => taskSched(pids[n]!));
  const beforeTicks = names.map((n) => cpuMicrosOf(pids[n]!));
  const beforeSplit = names.map((n) => ticksOf(pids[n]!));
  const client0 = process.cpuUsage();
  const latencies: number[] = [];
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    calls.map(async (call) => {
      while (next < total) {
        next++;
        const t0 = process.hrtime.bigint();
        await call();
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const client = process.cpuUsage(client0);
  const cpu: Record<string, number> = {};
  const ticks: Record<string, number> = {};
  const system: Record<string, number> = {};
  const runs: Record<string, number> = {};
  names.forEach((n, i) => {
    const split = ticksOf(pids[n]!);
    const user = split.user - beforeSplit[i]!.user;
    const sys = split.system - beforeSplit[i]!.system;
    system[n] = user + sys > 0 ? round(sys / (user + sys), 3) : Number.NaN;
    const after = taskSched(pids[n]!);
    cpu[n] = round((after.cpuMicros - before[i]!.cpuMicros) / total, 2);
    runs[n] = round((after.runs - before[i]!.runs) / total, 3);
    ticks[n] = round((cpuMicrosOf(pids[n]!) - beforeTicks[i]!) / total, 2);
  });
  latencies.sort((a, b) => a - b);
  return {
    calls: total,
    p50_ms: round(percentile(latencies, 50), 4),
    p99_ms: round(percentile(latencies, 99), 4),
    calls_per_s: Math.round(total / seconds),
    cpu_us: cpu,
    cpu_us_ticks: ticks,
    system_share: system,
    runs,
    client_cpu_us: round((client.user + client.system) / total, 2),
  };
}

export const median = (xs: number[]): number => {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/**
 * A distribution-free confidence interval of the median of `xs` (rounds): the order statistics
 * x(k) and x(n+1-k) with the largest k whose coverage, 1 - 2·P(B ≤ k-1) for B ~ Binomial(n, ½),
 * is at least `level`. Below 6 values no k reaches 95 %: the interval is then [min, max], and
 * `coverage` says how much less it covers. No assumption about how the rounds are distributed
 * (they are not normal on this machine: a round with a full GC is an outlier).
 */
export function medianInterval(
  xs: number[],
  level = 0.95,
): { low: number; high: number; coverage: number } | undefined {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  const n = s.length;
  if (n === 0) return undefined;
  // P(B ≤ j) for j = 0..n, B ~ Binomial(n, 1/2).
  const cdf: number[] = [];
  let term = 0.5 ** n;
  let sum = 0;
  for (let j = 0; j <= n; j++) {
    sum += term;
    cdf.push(sum);
    term = (term * (n - j)) / (j + 1);
  }
  let k = 1;
  while (k + 1 <= Math.ceil(n / 2) && 1 - 2 * cdf[k]! >= level) k++;
  return { low: s[k - 1]!, high: s[n - k]!, coverage: 1 - 2 * cdf[k - 1]! };
}

/** Medians over rounds of the figures of `CpuPhase`s. */
export function summarize(phases: CpuPhase[]): Record<string, unknown> {
  const names = Object.keys(phases[0]?.cpu_us ?? {});
  const per = (pick: (p: CpuPhase) => number) => round(median(phases.map(pick)), 2);
  return {
    p50_ms: round(median(phases.map((p) => p.p50_ms)), 4),
    p99_ms: round(median(phases.map((p) => p.p99_ms)), 4),
    calls_per_s: Math.round(median(phases.map((p) => p.calls_per_s))),
    cpu_us_per_call: Object.fromEntries(names.map((n) => [n, per((p) => p.cpu_us[n]!)])),
    /** Each round's figure, in the order run: the spread the median hides. */
    cpu_us_per_call_by_round: Object.fromEntries(
      names.map((n) => [n, phases.map((p) => round(p.cpu_us[n]!, 1))]),
    ),
    cpu_us_per_call_ticks: Object.fromEntries(names.map((n) => [n, per((p) => p.cpu_us_ticks[n]!)])),
    system_share: Object.fromEntries(
      names.map((n) => [n, round(median(phases.map((p) => p.system_share[n]!)), 3)]),
    ),
    runs_per_call: Object.fromEntries(names.map((n) => [n, round(median(phases.map((p) => p.runs[n]!)), 3)])),
    client_cpu_us_per_call: per((p) => p.client_cpu_us),
  };
}
