/**
 * Secrets benchmark: scrypt key derivation, sequential writes and reads on the encrypted
 * store (one process), and write throughput with several writer processes contending for
 * the cross-process lock. Prints one JSON object on stdout.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EncryptedProvider } from '../src/secrets/index.js';
import { deriveKey, newKdfParams } from '../src/secrets/sealed-file.js';

const WRITER = fileURLToPath(new URL('../test/integration/secrets/fixtures/writer.ts', import.meta.url));
const PASSWORD = 'benchmark password';

function ms(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

function percentile(sorted: number[], p: number): number {
  return Number((sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0).toFixed(2));
}

const dir = mkdtempSync(join(tmpdir(), 'skep-bench-secrets-'));
try {
  const kdfRuns: number[] = [];
  for (let i = 0; i < 3; i++) {
    const start = process.hrtime.bigint();
    await deriveKey(PASSWORD, newKdfParams());
    kdfRuns.push(ms(start));
  }
  process.stderr.write('kdf done\n');

  const provider = new EncryptedProvider({ file: join(dir, 'single.enc'), password: async () => PASSWORD });
  const writes: number[] = [];
  const N = 200;
  for (let i = 0; i < N; i++) {
    const start = process.hrtime.bigint();
    await provider.create(`key-${i}`, `value-${i}-${'x'.repeat(40)}`);
    writes.push(ms(start));
  }
  const reads: number[] = [];
  for (let i = 0; i < N; i++) {
    const start = process.hrtime.bigint();
    await provider.get(`key-${i}`);
    reads.push(ms(start));
  }
  provider.close();
  writes.shift(); // the first write includes key derivation
  writes.sort((a, b) => a - b);
  reads.sort((a, b) => a - b);
  process.stderr.write('single-process done\n');

  const PROCS = 4;
  const PER = 50;
  const start = process.hrtime.bigint();
  const children = Array.from({ length: PROCS }, (_, i) =>
    spawn(process.execPath, ['--import', 'tsx', WRITER, join(dir, 'multi.enc'), `p${i}`, String(PER)], {
      env: { ...process.env, SKEP_SECRETS_PASSWORD: PASSWORD },
      stdio: 'ignore',
    }),
  );
  const codes = await Promise.all(children.map(async (c) => ((await once(c, 'exit')) as [number | null])[0]));
  const multiMs = ms(start);
  const check = new EncryptedProvider({ file: join(dir, 'multi.enc'), password: async () => PASSWORD });
  const stored = (await check.list()).length;
  check.close();

  process.stdout.write(
    `${JSON.stringify({
      scrypt_derivation_ms: { runs: kdfRuns.map((v) => Number(v.toFixed(1))), params: 'N=2^15 r=8 p=3' },
      single_process_write_ms: {
        n: writes.length,
        p50: percentile(writes, 50),
        p95: percentile(writes, 95),
        max: percentile(writes, 100),
      },
      single_process_read_ms: { n: reads.length, p50: percentile(reads, 50), p95: percentile(reads, 95) },
      multi_process_writes: {
        processes: PROCS,
        secrets_each: PER,
        exit_codes: codes,
        stored,
        wall_ms_including_process_start: Math.round(multiMs),
        writes_per_s: Number(((PROCS * PER) / (multiMs / 1000)).toFixed(1)),
      },
    })}\n`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
