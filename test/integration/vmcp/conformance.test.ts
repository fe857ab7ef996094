/**
 * The MCP conformance suite (@modelcontextprotocol/conformance, server scenarios)
 * against a virtual workload whose single backend is the conformance fixture (a stdio workload
 * behind its own proxy), compared with the same suite against that workload directly: every
 * scenario that passes directly passes through the virtual endpoint. `prefixOnlyConflicts`
 * keeps the fixture's names (one backend has no conflicts), so the scenarios find their tools.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { failedChecks, runConformanceSuite } from '../../helpers/conformance.js';
import { FIXTURE_SERVER } from '../proxy/helpers.js';
import { addGroup, lab, virtual } from './helpers.js';

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

    const direct = await runConformanceSuite(t, l.url('fixture'));
    const through = await runConformanceSuite(t, l.url('conf-hub'));
    const regressions: string[] = [];
    let compared = 0;
    for (const [scenario, checks] of direct) {
      if (failedChecks(checks).length > 0) continue; // not passing directly: no claim either way
      compared++;
      const got = through.get(scenario);
      if (got === undefined) {
        regressions.push(`${scenario}: did not run`);
        continue;
      }
      for (const c of failedChecks(got))
        regressions.push(`${scenario}/${c.id}: ${c.errorMessage ?? 'failed'}`);
    }
    assert.ok(compared > 20, `scenarios compared: ${compared}`);
    assert.deepEqual(regressions, [], 'no scenario regresses through the virtual endpoint');
  },
);
