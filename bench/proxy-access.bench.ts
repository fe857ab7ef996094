/**
 * What the owner's credential costs a proxied call: two stdio echo workloads run by the built
 * runner (`dist/runner.mjs`), the same in all but who may call them — `owner` (the default:
 * every request carries the workload's access token, here in the URL's query, checked and
 * stripped by the proxy) and `open` (`endpoint_access: anyone-on-this-machine`, no check) —
 * measured in interleaved rounds at concurrency 1 and 32. The cost is the runner's CPU per
 * call (user + system, from /proc, per phase), which this noisy 2-core VM resolves to a few
 * µs where wall-clock latency does not (with /proc's 10 ms ticks, 8,000 calls resolve about
 * 1.3 µs per call); p50 and throughput are given as context. The check alone is also timed in
 * this process (`process.cpuUsage` over 500,000 checks of each form).
 *
 * `npm run bench -- proxy` runs it after the head-to-head proxy benchmark.
 */
import type { IncomingMessage } from 'node:http';
import { CallerToken } from '../src/dataplane/proxy/caller-token.js';
import { measureWorkloads, openBenchHome, round, SETTINGS } from './lib/workloads.js';

const CHECKS = 500_000;

/**
 * The check alone, in this process: CPU per `admit` of a request carrying the token in the
 * query (the URL clients get: parse, compare, strip) and as a bearer header.
 */
function checkCost(): { query_us: number; header_us: number } {
  const token = 'ab'.repeat(32);
  const check = new CallerToken(token);
  const query = `skep_token=${token}`;
  const time = (make: () => { req: IncomingMessage; query: string }): number => {
    let admitted = 0;
    const t0 = process.cpuUsage();
    for (let i = 0; i < CHECKS; i++) {
      const { req, query: q } = make();
      if (check.admit(req, q).admitted) admitted++;
    }
    const used = process.cpuUsage(t0);
    if (admitted !== CHECKS) throw new Error('the check refused its own token');
    return round((used.user + used.system) / CHECKS, 3);
  };
  const asQuery = () => ({ req: { headers: {} } as IncomingMessage, query });
  const asHeader = () => ({
    req: { headers: { authorization: `Bearer ${token}` } } as unknown as IncomingMessage,
    query: '',
  });
  time(asQuery); // warm-up
  return { query_us: time(asQuery), header_us: time(asHeader) };
}

const log = (msg: string): void => {
  process.stderr.write(`[proxy-access.bench] ${msg}\n`);
};

async function main(): Promise<void> {
  log('timing the check alone');
  const alone = checkCost();
  const bench = await openBenchHome('access', log);
  try {
    const { summary } = await measureWorkloads(
      bench.env,
      bench.home,
      { open: { endpoint_access: 'anyone-on-this-machine' }, owner: {} },
      { log, started: bench.started },
    );
    const open = summary['open'] ?? {};
    const owner = summary['owner'] ?? {};
    const added = (key: string, digits: number) => round((owner[key] ?? 0) - (open[key] ?? 0), digits);
    process.stdout.write(
      `${JSON.stringify(
        {
          setup: {
            rounds: SETTINGS.rounds,
            calls_c1: SETTINGS.callsC1,
            calls_c32: SETTINGS.callsC32,
            note: 'skep run --from-config: detached runners (dist/runner.mjs), stdio echo child; owner = access token in the query (the URL clients get), open = endpoint_access anyone-on-this-machine; medians of interleaved rounds; CPU is the runner process only',
          },
          results: summary,
          credential_check: {
            // The check alone, CPU per call (this process, 500k calls each).
            check_alone_cpu_us_query: alone.query_us,
            check_alone_cpu_us_header: alone.header_us,
            added_runner_cpu_us_per_call_c1: added('c1_runner_cpu_us_per_call', 2),
            added_runner_cpu_us_per_call_c32: added('c32_runner_cpu_us_per_call', 2),
            target_added_cpu_us_per_call: 5,
            added_c1_p50_ms: added('c1_p50_ms', 4),
            c32_throughput_kept: round((owner['c32_calls_per_s'] ?? 0) / (open['c32_calls_per_s'] ?? 1), 3),
          },
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    await bench.close();
  }
}

await main();
