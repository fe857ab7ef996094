/**
 * The optimizer through a virtual workload: with `optimizer` the endpoint lists only
 * `find_tool` and `call_tool` (helper V2's optimizer over the aggregated tools), `call_tool`
 * reaches the inner tool's backend, and Cedar authorization applies to the inner tool name
 * (the call is rewritten before the pipeline's stages run); a `find_tool` answer shows only
 * tools the policy lets the caller call.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { addGroup, callText, connect, lab, team, toolNames, virtual } from './helpers.js';

test(
  'virtual MCP with the optimizer: two tools, inner calls routed and authorized by their own name',
  { timeout: 240_000 },
  async (t) => {
    const l = lab(t);
    await addGroup(l, 'opt');
    await team(l, 'alpha', 'opt');
    await team(l, 'beta', 'opt');
    const policy = join(l.ctx.config.paths.stateDir, 'authz.json');
    writeFileSync(
      policy,
      JSON.stringify({
        version: '1.0',
        type: 'cedarv1',
        cedar: {
          policies: [
            'permit(principal, action == Action::"call_tool", resource == Tool::"find_tool");',
            'permit(principal, action == Action::"call_tool", resource == Tool::"call_tool");',
            'permit(principal, action == Action::"call_tool", resource == Tool::"alpha_search");',
          ],
        },
      }),
    );
    await virtual(l, 'finder', 'opt', { optimizer: { maxToolsToReturn: 3 } }, { authz_config: policy });
    const client = await connect(t, l.url('finder'));

    assert.deepEqual(await toolNames(client), ['call_tool', 'find_tool']);
    const found = (await client.callTool({
      name: 'find_tool',
      arguments: { tool_description: 'search alpha', tool_keywords: ['search', 'alpha'] },
    })) as { structuredContent?: { tools: { name: string }[]; token_metrics: { savings_percent: number } } };
    const names = found.structuredContent?.tools.map((x) => x.name) ?? [];
    assert.ok(names.includes('alpha_search'), names.join(','));
    assert.ok(names.length <= 3);
    assert.ok((found.structuredContent?.token_metrics.savings_percent ?? 0) > 0);
    // A search never shows a tool the caller may not call: beta_search, the best match for
    // this query, is left out of both the structured answer and its text.
    const hidden = (await client.callTool({
      name: 'find_tool',
      arguments: { tool_description: 'search beta', tool_keywords: ['search', 'beta'] },
    })) as unknown as { structuredContent?: { tools: { name: string }[] }; content: { text: string }[] };
    const shown = hidden.structuredContent?.tools.map((x) => x.name) ?? [];
    assert.ok(!shown.includes('beta_search'), shown.join(','));
    assert.ok(
      shown.every((name) => name === 'alpha_search'),
      shown.join(','),
    );
    assert.ok(!(hidden.content[0]?.text ?? '').includes('beta_search'));
    assert.deepEqual(JSON.parse(hidden.content[0]?.text ?? '{}'), hidden.structuredContent);

    assert.equal(
      await callText(client, 'call_tool', { tool_name: 'alpha_search', parameters: { query: 'z' } }),
      'alpha found z',
    );
    // A tool_name nested in parameters is hoisted (as in ToolHive).
    assert.equal(
      await callText(client, 'call_tool', { parameters: { tool_name: 'alpha_search', query: 'n' } }),
      'alpha found n',
    );
    // Authorization sees the inner tool: beta_search is not permitted.
    await assert.rejects(
      client.callTool({
        name: 'call_tool',
        arguments: { tool_name: 'beta_search', parameters: { query: 'z' } },
      }),
      /403/,
    );
    const unknown = (await client
      .callTool({ name: 'call_tool', arguments: { tool_name: 'nope', parameters: {} } })
      .catch((e: Error) => e)) as Error | { isError?: boolean };
    assert.ok(unknown instanceof Error || unknown.isError === true, 'an unknown inner tool is refused');
  },
);
