/**
 * A composite step's tool is checked when the virtual workload is created or updated, against
 * the tool names its group's backends reported (ToolHive refuses unknown tools at config load):
 * a tool the named workload does not offer, or a workload not in the group, is a 400 naming the
 * composite and the step; a backend whose tools are not known yet leaves the step to the
 * start-time check.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp } from '../../helpers/api.js';
import { addGroup, everything, lab, waitFor } from './helpers.js';

function composite(tool: string): Record<string, unknown> {
  return {
    compositeTools: [
      { name: 'wrap', description: 'One step.', steps: [{ id: 'only', tool, arguments: {} }] },
    ],
  };
}

test(
  'create and update of a virtual workload check the steps against the reported tools',
  { timeout: 180_000 },
  async (t) => {
    const l = lab(t);
    const app = await buildTestApp(l.ctx);
    t.after(() => app.close());
    await addGroup(l, 'cc');
    await everything(l, 'everything', 'cc');
    const tools = await waitFor(
      'the backend to report its tools',
      () => l.manager.rows.get('everything')?.tools,
    );
    assert.ok(tools.includes('echo'), tools.join(','));

    const post = (name: string, vmcp: Record<string, unknown>) =>
      app.inject({ method: 'POST', url: '/api/v1beta/workloads', payload: { name, group: 'cc', vmcp } });

    const missing = await post('v-missing', composite('everything.nope'));
    assert.equal(missing.statusCode, 400, missing.body);
    assert.equal(missing.json<{ code: string }>().code, 'invalid_config');
    assert.match(
      missing.body,
      /compositeTools\[0\] \(wrap\) step \\"only\\": tool \\"everything\.nope\\" is not among the backends' tools/,
    );
    assert.equal(l.manager.rows.get('v-missing'), undefined, 'nothing recorded');

    const outside = await post('v-outside', composite('elsewhere.echo'));
    assert.equal(outside.statusCode, 400, outside.body);
    assert.match(outside.body, /step \\"only\\".*no workload \\"elsewhere\\" in group \\"cc\\"/);

    const good = await post('v-good', composite('everything.echo'));
    assert.equal(good.statusCode, 201, good.body);
    // Bare names resolve too (one backend offers it).
    const bare = await post('v-bare', composite('echo'));
    assert.equal(bare.statusCode, 201, bare.body);

    const update = await app.inject({
      method: 'POST',
      url: '/api/v1beta/workloads/v-good/edit',
      payload: { vmcp: composite('everything.gone') },
    });
    assert.equal(update.statusCode, 400, update.body);
    assert.match(update.body, /step \\"only\\": tool \\"everything\.gone\\"/);
    assert.deepEqual(
      (
        l.manager.rows.get('v-good')?.config.vmcp as {
          compositeTools: Array<{ steps: Array<{ tool: string }> }>;
        }
      ).compositeTools[0]!.steps[0]!.tool,
      'everything.echo',
      'the refused update changed nothing',
    );

    // Another backend whose runner has not reported (created, never started): only steps that name
    // a workload whose tools are known are checked.
    await l.manager.create({ name: 'idle', group: 'cc', image: 'cmd://' + process.execPath });
    const partial = await post('v-partial', composite('everything.nope'));
    assert.equal(partial.statusCode, 400, partial.body);
    assert.match(
      partial.body,
      /step \\"only\\": workload \\"everything\\" offers no tool \\"nope\\" \(it offers: .*echo/,
    );
    const unknown = await post('v-unknown', composite('idle.anything'));
    assert.equal(unknown.statusCode, 201, unknown.body);

    // A backend whose tools are not known (stopped): its steps wait for the start-time check.
    await l.stop('everything');
    await waitFor('the reported tools to be forgotten', () =>
      l.manager.rows.get('everything')?.tools === undefined ? true : undefined,
    );
    const later = await post('v-later', composite('everything.nope'));
    assert.equal(later.statusCode, 201, later.body);
  },
);
