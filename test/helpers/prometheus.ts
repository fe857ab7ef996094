/**
 * A real Prometheus (Debian `prometheus`) for tests: started on loopback with a generated
 * scrape configuration and a temporary storage directory, stopped (SIGTERM) when the test
 * ends. `query` runs an instant query through its HTTP API; `waitForValue` polls one until
 * it holds the expected value or a deadline passes (the scrape decides when, not a sleep).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { freePort } from './net.js';
import { hasCommand } from './services.js';

export const PROMETHEUS_HINT = 'apt-get install prometheus (the .ci/run list has it)';

export function prometheusAvailable(): boolean {
  return hasCommand('prometheus');
}

export interface ScrapeTarget {
  job: string;
  /** `host:port` */
  target: string;
  /** A file holding a bearer token sent as `Authorization: Bearer` (Prometheus reads it). */
  credentialsFile?: string;
}

export interface RunningPrometheus {
  readonly url: string;
  /** An instant query; resolves the result vector. */
  query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  /** Polls `expr` until `accept` holds for its (summed) value; resolves that value. */
  waitForValue(expr: string, accept: (value: number) => boolean, timeoutMs?: number): Promise<number>;
  /** The log so far (for failure messages). */
  log(): string;
}

export async function startPrometheus(t: TestContext, targets: ScrapeTarget[]): Promise<RunningPrometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'skep-prometheus-'));
  const lines = ['global:', '  scrape_interval: 1s', '  scrape_timeout: 1s', 'scrape_configs:'];
  for (const target of targets) {
    lines.push(`  - job_name: ${JSON.stringify(target.job)}`, '    scrape_interval: 1s');
    if (target.credentialsFile !== undefined)
      lines.push('    authorization:', `      credentials_file: ${JSON.stringify(target.credentialsFile)}`);
    lines.push('    static_configs:', `      - targets: [${JSON.stringify(target.target)}]`);
  }
  const config = join(dir, 'prometheus.yml');
  writeFileSync(config, `${lines.join('\n')}\n`);
  const port = await freePort();
  const child: ChildProcess = spawn(
    'prometheus',
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    log += d;
  });
  const exited = once(child, 'exit');
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`prometheus exited with ${child.exitCode}: ${log}`);
    try {
      if ((await fetch(`${url}/-/ready`)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`prometheus did not become ready: ${log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const query = async (expr: string) => {
    const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await res.json()) as {
      status: string;
      error?: string;
      data?: { result: { metric: Record<string, string>; value: [number, string] }[] };
    };
    if (body.status !== 'success') throw new Error(`query ${expr}: ${body.error ?? res.status}`);
    return body.data?.result ?? [];
  };
  return {
    url,
    query,
    log: () => log,
    async waitForValue(expr, accept, timeoutMs = 60_000) {
      const end = Date.now() + timeoutMs;
      let last: number | undefined;
      for (;;) {
        const result = await query(expr);
        if (result.length > 0) {
          last = result.reduce((sum, r) => sum + Number(r.value[1]), 0);
          if (accept(last)) return last;
        }
        if (Date.now() > end)
          throw new Error(
            `timed out waiting on Prometheus for ${expr} (last value ${last ?? 'none'}): ${log}`,
          );
        await new Promise((r) => setTimeout(r, 250));
      }
    },
  };
}
