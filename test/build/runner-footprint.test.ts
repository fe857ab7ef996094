// The workload runner runs once per workload, so what it loads up front is a fixed cost per
// workload (the proxy benchmark's memory target). scripts/runner-footprint.mjs builds it the way
// `npm run build` does and follows its static imports.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

function footprint(...args: string[]): { status: number | null; report: Record<string, unknown> } {
  const run = spawnSync(process.execPath, ['scripts/runner-footprint.mjs', '--check', ...args], {
    encoding: 'utf8',
  });
  assert.equal(run.stderr, '', run.stderr);
  return { status: run.status, report: JSON.parse(run.stdout) as Record<string, unknown> };
}

test('the runner bundle loads no on-demand library up front', () => {
  const { status, report } = footprint();
  assert.deepEqual(report['loaded_up_front_but_on_demand_only'], []);
  assert.equal(status, 0);
  const sources = Object.keys(report['bytes_by_source'] as Record<string, number>);
  for (const part of ['src/dataplane/proxy', 'src/dataplane/runner', 'src/store'])
    assert.ok(sources.includes(part), part);
  assert.deepEqual(report['external_packages'], ['better-sqlite3']);
});

test('the check fails for an entry that loads them (the API server)', () => {
  const { status, report } = footprint('--entry', 'src/control/api/server.ts');
  assert.equal(status, 1);
  const offenders = report['loaded_up_front_but_on_demand_only'] as string[];
  assert.ok(offenders.includes('typebox') && offenders.includes('pino'), String(offenders));
  // The API validates documents with Ajv (src/validation); a runner never does.
  assert.ok(offenders.includes('ajv'), String(offenders));
});
