/**
 * The optimizer through a virtual workload: with `optimizer` the endpoint lists only
 * `find_tool` and `call_tool` (helper V2's optimizer over the aggregated tools), `call_tool`
 * reaches the inner tool's backend, and Cedar authorization applies to the inner tool name
 * (the call is rewritten before the pipeline's stages run, `parameters: null` included); a
 * `find_tool` answer shows only tools the policy lets the caller call. A composite tool is
 * found and called through them like any tool, authorized by its name, each inner call by its own.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { addGroup, callText, connect, lab, team, toolNames, virtual } from './helpers.js';

/** A Cedar policy file permitting calls of exactly `tools` (the optimizer's own two included by the caller). */
function permitOnly(l: ReturnType<typeof lab>, tools: string[]): string {
  const path = join(l.ctx.config.paths.stateDir, 'authz.json');
  const policies = tools.map(
    (tool) => `permit(principal, action == Action::"call_tool", resource == Tool::"${tool}");`,
  );
  writeFileSync(path, JSON.stringify({ version: '1.0', type: 'cedarv1', cedar: { policies } }));
  return path;
}

test(
  'virtual MCP with the optimizer: two tools, inner calls routed and authorized by their own name',
  { timeout: 240_000 },
  async (t) => {
    const l = lab(t);
    await addGroup(l, 'opt');
    await team(l, 'alpha', 'opt');
    await team(l, 'beta', 'opt');
    const policy = permitOnly(l, ['find_tool', 'call_tool', 'alpha_search']);
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
    // `parameters: null` means no parameters (as call_tool reads it): still authorized by the inner name.
    await assert.rejects(
      client.callTool({ name: 'call_tool', arguments: { tool_name: 'beta_search', parameters: null } }),
      /403/,
    );
    const unknown = (await client
      .callTool({ name: 'call_tool', arguments: { tool_name: 'nope', parameters: {} } })
      .catch((e: Error) => e)) as Error | { isError?: boolean };
    assert.ok(unknown instanceof Error || unknown.isError === true, 'an unknown inner tool is refused');
  },
);

test(
  'virtual MCP with the optimizer: a composite tool is found by find_tool and run by call_tool like any tool',
  { timeout: 240_000 },
  async (t) => {
    const l = lab(t);
    await addGroup(l, 'optc');
    await team(l, 'alpha', 'optc');
    await team(l, 'beta', 'optc');
    const policy = permitOnly(l, [
      'find_tool',
      'call_tool',
      'search_everywhere',
      'status_everywhere',
      'alpha_alpha_status',
      'alpha_search',
      'beta_search',
    ]);
    await virtual(
      l,
      'finder-c',
      'optc',
      {
        optimizer: { maxToolsToReturn: 3 },
        compositeTools: [
          {
            name: 'search_everywhere',
            description: 'Searches every team (alpha and beta) for a query and joins the findings.',
            parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
            steps: [
              { id: 'a', tool: 'alpha.search', arguments: { query: '{{.params.query}}' } },
              { id: 'b', tool: 'beta.search', arguments: { query: '{{.params.query}}' } },
            ],
            output: {
              properties: {
                joined: { type: 'string', value: '{{.steps.a.output.text}} & {{.steps.b.output.text}}' },
              },
            },
          },
          {
            name: 'gamma_only',
            description: 'Not permitted by the policy.',
            steps: [{ id: 'a', tool: 'alpha.alpha_status' }],
          },
          {
            name: 'status_everywhere',
            description: 'Permitted, but its second inner call is not.',
            steps: [
              { id: 'a', tool: 'alpha.alpha_status' },
              { id: 'b', tool: 'beta.beta_status', dependsOn: ['a'] },
            ],
          },
        ],
      },
      { authz_config: policy },
    );
    const client = await connect(t, l.url('finder-c'));
    assert.deepEqual(await toolNames(client), ['call_tool', 'find_tool']);

    const found = (await client.callTool({
      name: 'find_tool',
      arguments: {
        tool_description: 'search every team and join the findings',
        tool_keywords: ['everywhere'],
      },
    })) as {
      structuredContent?: { tools: { name: string; inputSchema?: unknown; annotations?: unknown }[] };
    };
    const composite = found.structuredContent?.tools.find((x) => x.name === 'search_everywhere');
    assert.ok(composite, JSON.stringify(found.structuredContent));
    assert.deepEqual(composite.inputSchema, {
      type: 'object',
      properties: { query: { type: 'string' } },
      required: ['query'],
    });

    const called = (await client.callTool({
      name: 'call_tool',
      arguments: { tool_name: 'search_everywhere', parameters: { query: 'q' } },
    })) as { structuredContent?: unknown; isError?: boolean; content: { text: string }[] };
    assert.equal(called.isError, undefined, JSON.stringify(called));
    assert.deepEqual(called.structuredContent, { joined: 'alpha found q & beta found q' });
    // A composite the policy does not permit is never shown by find_tool.
    const hidden = (await client.callTool({
      name: 'find_tool',
      arguments: {
        tool_description: 'not permitted by the policy',
        tool_keywords: ['gamma_only', 'permitted'],
      },
    })) as { structuredContent?: { tools: { name: string }[] } };
    const shown = hidden.structuredContent?.tools.map((x) => x.name) ?? [];
    assert.ok(shown.includes('status_everywhere') && !shown.includes('gamma_only'), shown.join(','));
    // The composite is authorized by its own name, and each of its inner calls by theirs.
    for (const parameters of [{ query: 'q' }, null])
      await assert.rejects(
        client.callTool({ name: 'call_tool', arguments: { tool_name: 'gamma_only', parameters } }),
        /403/,
        `gamma_only with parameters ${JSON.stringify(parameters)}`,
      );
    const inner = (await client.callTool({
      name: 'call_tool',
      arguments: { tool_name: 'status_everywhere', parameters: null },
    })) as { isError?: boolean; content: { text: string }[] };
    assert.equal(inner.isError, true, JSON.stringify(inner));
    assert.match(inner.content[0]!.text, /step b: the call to beta_beta_status was refused \(HTTP 403/);
    // A tool_name nested in parameters is hoisted for a composite as for any tool.
    assert.equal(
      await callText(client, 'call_tool', { parameters: { tool_name: 'search_everywhere', query: 'n' } }),
      JSON.stringify({ joined: 'alpha found n & beta found n' }),
    );
  },
);
