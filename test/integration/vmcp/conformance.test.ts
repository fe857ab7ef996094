/**
 * Issue 20: the MCP conformance suite (@modelcontextprotocol/conformance, server scenarios)
 * against a virtual workload whose single backend is the conformance fixture (a stdio workload
 * behind its own proxy), compared with the same suite against that workload directly: every
 * scenario that passes directly passes through the virtual endpoint. `prefixOnlyConflicts`
 * keeps the fixture's names (one backend has no conflicts), so the scenarios find their tools.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { FIXTURE_SERVER } from '../proxy/helpers.js';
import { addGroup, lab, virtual } from './helpers.js';

const require = createRequire(import.meta.url);
const CONFORMANCE = join(
  dirname(require.resolve('@modelcontextprotocol/conformance/package.json')),
  'dist/index.js',
);

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
}

async function runSuite(t: TestContext, url: string): Promise<Map<string, Check[]>> {
  const out = await mkdtemp(join(tmpdir(), 'skep-vmcp-conformance-'));
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
  const results = new Map<string, Check[]>();
  for (const dir of await readdir(out)) {
    const scenario = dir.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT.*$/, '');
    results.set(scenario, JSON.parse(await readFile(join(out, dir, 'checks.json'), 'utf8')) as Check[]);
  }
  assert.ok(
    results.size > 20,
    `the suite ran its scenarios (got ${results.size}); output:\n${log.slice(-2000)}`,
  );
  return results;
}

const failed = (checks: Check[]): Check[] => checks.filter((c) => c.status === 'FAILURE');

test(
  'conformance: a virtual workload over the conformance fixture passes what the workload passes directly',
  { timeout: 900_000 },
  async (t) => {
    const l = lab(t);
    await addGroup(l, 'conf');
    await l.manager.create({
      name: 'fixture',
      group: 'conf',
      image: `cmd://${process.execPath}`,
      cmd_arguments: ['--import', import.meta.resolve('tsx'), FIXTURE_SERVER],
    });
    await l.run('fixture');
    await virtual(l, 'conf-hub', 'conf', {
      aggregation: { conflictResolutionConfig: { prefixOnlyConflicts: true } },
    });

    const direct = await runSuite(t, `http://127.0.0.1:${l.port('fixture')}/mcp`);
    const through = await runSuite(t, `http://127.0.0.1:${l.port('conf-hub')}/mcp`);
    const regressions: string[] = [];
    let compared = 0;
    for (const [scenario, checks] of direct) {
      if (failed(checks).length > 0) continue; // not passing directly: no claim either way
      compared++;
      const got = through.get(scenario);
      if (got === undefined) {
        regressions.push(`${scenario}: did not run`);
        continue;
      }
      for (const c of failed(got)) regressions.push(`${scenario}/${c.id}: ${c.errorMessage ?? 'failed'}`);
    }
    assert.ok(compared > 20, `scenarios compared: ${compared}`);
    assert.deepEqual(regressions, [], 'no scenario regresses through the virtual endpoint');
  },
);
