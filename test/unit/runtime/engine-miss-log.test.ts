/**
 * "No container engine answered" is said once per `skep serve` (its selector logs at info),
 * not once per workload start: a workload's runner asks for the same probe at debug.
 */
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { RuntimeSelector } from '../../../src/dataplane/runtime/index.js';
import { createLineLogger } from '../../../src/shared/index.js';
import { tempHome } from '../../helpers/home.js';

async function missLines(t: import('node:test').TestContext, engineMissLevel?: 'info' | 'debug') {
  const home = tempHome(t);
  const lines: { level: number; msg: string }[] = [];
  const logger = createLineLogger({
    level: 'info',
    write: (line) => lines.push(JSON.parse(line) as { level: number; msg: string }),
  });
  const config = {
    ...home.config,
    runtime: {
      type: 'auto' as const,
      docker_host: `unix://${join(tmpdir(), `skep-no-engine-${process.pid}.sock`)}`,
      allow_privileged: false,
    },
  };
  const selector = new RuntimeSelector({ config, logger, ...(engineMissLevel ? { engineMissLevel } : {}) });
  assert.equal(await selector.container(), undefined, 'no engine answers at that socket');
  return lines.filter((l) => l.msg === 'no container engine answered');
}

test('skep serve says "no container engine answered" at info; a runner only at debug', async (t) => {
  assert.equal((await missLines(t)).length, 1, 'the default (serve) says it');
  assert.deepEqual(await missLines(t, 'debug'), [], 'a runner at the default info level says nothing');
});
