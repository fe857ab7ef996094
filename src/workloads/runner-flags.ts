/**
 * V8 settings for runners, on the command line of every runner process: those `skep serve`
 * spawns and those the operator renders into pods (NODE_OPTIONS accepts only some of them).
 * Chosen by measurement (`npm run bench -- proxy`: the runner's peak
 * RSS over a sustained run at concurrency 32, its soak phase). A proxy allocates many
 * short-lived objects per request, and under load those of in-flight requests outlive a
 * scavenge and are promoted, so the old generation fills with garbage between full GCs.
 * - Semi-spaces of 2 MiB: the default (16 MiB) and 4–8 MiB peaked at 95–115 MB, 1 MiB promoted
 *   even more; 2 MiB was also the fastest. Measured again later side by side (`npm run bench --
 *   cpu`, a second `none` runner with 16 MiB driven at the same time as the first, 16 pairs):
 *   16 MiB saved 1.4 [0.2, 1.9] µs of ~49 µs per call (3 %) for 27 MB more resident set (96
 *   against 68 MB); a virtual MCP's runner, which gains more, is the exception below.
 * - `--max-old-space-size=1024`: V8 sizes its first old-generation limits from the maximum,
 *   which on a large machine is ~4 GiB; with 1 GiB the runner peaked at ~76 MB instead of ~100,
 *   with no loss of throughput, and a runner holding a gigabyte is broken anyway (the proxy's
 *   own buffers are bounded far below that).
 * - `--single-threaded` drops V8's helper threads (concurrent GC and compilation), which a
 *   heap this small does not need: about 4 MB less, no measurable change in latency.
 * - `--no-memory-reducer`: V8's memory reducer runs full GCs once a process has been idle for
 *   some seconds and sets the old-generation limit just above what is live. When calls
 *   resume, with 2 MiB semi-spaces promoting in-flight objects, that limit is reached again
 *   and again: a full GC every ~130 ms that did not go away (GC time went from ~23 to
 *   ~150 ms per second of load). Measured at concurrency 32 after 20 s idle, the runner's CPU
 *   per call stayed at 45–65 µs instead of 31–35 µs, for as long as it was measured (tens of
 *   thousands of calls); with the reducer off, the first 1,000 calls after the pause cost
 *   more and the rest 34–37 µs, and the resident set was smaller (68 MB, against 72–76).
 *   Those repeated full GCs were the promotion that `SeqTable` (src/shared/seq-table.ts) ended,
 *   which any full GC started. Measured again after that fix (`npm run bench -- cpu`, every
 *   runner with `--memory-reducer`, 30 s idle): the reducer ran its full GCs and the resident
 *   set went from 66 to 61 MB, and the next 1,000 calls cost 185–211 µs of CPU each and the
 *   1,000 after them 135, against 57–59 in the steady state. `--trace-opt` showed why: after
 *   the reducer's collections TurboFan compiled 54 of the hot functions again (their optimized
 *   code had been dropped). In a run of the same kind without it: 56 µs and 60. So the flag
 *   stays: 5 MB does not pay for every pause making the next calls three times as costly.
 * - `--heap-growing-percent=100`: after a full GC the old generation may grow to twice what is
 *   live before the next. V8 otherwise picks the factor from how fast the last GCs ran, and with
 *   a 1 GiB maximum it may pick as little as 1.1: some runner processes then ran full GCs many
 *   times a second under load and others not (Cedar authorization, three runners, same load:
 *   51, 72 and 37 µs per call; with the flag 36, 37 and 35). In one `npm run bench -- cpu`
 *   pair, the added CPU per call of authorization, audit, telemetry and a webhook went from
 *   26 / 38 / 41 / 82 µs to 20 / 32 / 28 / 67, their runners' peak resident set within 4 MB.
 *   After the `SeqTable` fix, a `none` runner without it measured 69.5 µs per call against 67.2
 *   with it, in the same rounds: within what one run resolves (3.5 % between two identical
 *   runners); the stage runners, where it mattered, have not been measured without it again.
 */
export const RUNNER_V8_FLAGS = [
  '--max-semi-space-size=2',
  '--single-threaded',
  '--max-old-space-size=1024',
  '--no-memory-reducer',
  '--heap-growing-percent=100',
] as const;

/** What a runner serves: an MCP server (local or remote) or a virtual MCP server. */
export type RunnerKind = 'server' | 'vmcp';

/**
 * A virtual MCP runner's flags: a server runner's, with 16 MiB semi-spaces. Its calls cross
 * more objects than a proxy's (the client's session, the per-session server, the backend
 * client and its answer), and with 2 MiB young-generation collections copy what the calls in
 * flight hold many times over. Measured side by side under load at concurrency 32 (`npm run
 * bench -- cpu` with `BENCH_CPU_VMCP2_FLAGS`: two runners of one virtual MCP configuration in
 * front of the same backend, in paired rounds): 16 MiB used 0.91 [0.86, 0.93] and 0.93
 * [0.92, 0.95] of the CPU per call of 2 MiB in two runs (14 and 16 pairs), and with the roles
 * swapped 2 MiB used 1.08 [1.06, 1.10] of 16 MiB's; 8 MiB used 0.96 [0.93, 1.00]. The
 * resident set after the rounds was 130–153 MB against 102–117: paid once per virtual MCP
 * workload, not once per server (docs/performance.md).
 */
export const VMCP_RUNNER_V8_FLAGS: readonly string[] = RUNNER_V8_FLAGS.map((flag) =>
  flag.startsWith('--max-semi-space-size=') ? '--max-semi-space-size=16' : flag,
);

export function runnerV8Flags(kind: RunnerKind): readonly string[] {
  return kind === 'vmcp' ? VMCP_RUNNER_V8_FLAGS : RUNNER_V8_FLAGS;
}
