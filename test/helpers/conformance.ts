/**
 * The MCP conformance suite (@modelcontextprotocol/conformance, server scenarios) run against
 * a URL, for the tests that compare a server reached directly with the same server through
 * Skep (the proxy, a virtual workload).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { TestContext } from 'node:test';

const require = createRequire(import.meta.url);
const CONFORMANCE = join(
  dirname(require.resolve('@modelcontextprotocol/conformance/package.json')),
  'dist/index.js',
);

/** One check of a scenario, as the suite writes it in `checks.json`. */
export interface ConformanceCheck {
  id: string;
  status: string;
  errorMessage?: string;
}

/** Runs every server scenario against `url`; returns scenario → checks. */
export async function runConformanceSuite(
  t: TestContext,
  url: string,
): Promise<Map<string, ConformanceCheck[]>> {
  const out = await mkdtemp(join(tmpdir(), 'skep-conformance-'));
  t.after(() => rm(out, { recursive: true, force: true }));
  const child = spawn(process.execPath, [CONFORMANCE, 'server', '--url', url, '-o', out], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout.on('data', (c: Buffer) => {
    log += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    log += c.toString();
  });
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  await new Promise((resolve) => child.once('exit', resolve));
  const results = new Map<string, ConformanceCheck[]>();
  for (const dir of await readdir(out)) {
    const scenario = dir.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT.*$/, '');
    const checks = JSON.parse(await readFile(join(out, dir, 'checks.json'), 'utf8')) as ConformanceCheck[];
    results.set(scenario, checks);
  }
  assert.ok(
    results.size > 20,
    `the suite ran its scenarios (got ${results.size}); output:\n${log.slice(-2000)}`,
  );
  return results;
}

/** The checks of a scenario that failed. */
export const failedChecks = (checks: ConformanceCheck[]): ConformanceCheck[] =>
  checks.filter((c) => c.status === 'FAILURE');
