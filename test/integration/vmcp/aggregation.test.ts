/**
 * A virtual workload serves one endpoint over three real backends
 * (server-everything and the team fixture twice, `alpha` and `beta`, which both offer the
 * tool `search` and the prompt `greet`), through the official MCP SDK client. One lab, one
 * virtual workload per strategy (ToolHive's conflict resolution strategies).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addGroup, callText, connect, everything, lab, team, toolNames, virtual } from './helpers.js';

test('virtual MCP aggregation over three real backends', { timeout: 300_000 }, async (t) => {
  const l = lab(t);
  await addGroup(l, 'team');
  await everything(l, 'everything', 'team');
  await team(l, 'alpha', 'team');
  await team(l, 'beta', 'team');

  await t.test(
    'prefix (default): every tool renamed {workload}_, calls reach the backend with the original name',
    async (t) => {
      await virtual(l, 'v-prefix', 'team');
      const client = await connect(t, l.url('v-prefix'));
      const names = await toolNames(client);
      assert.ok(names.includes('alpha_search') && names.includes('beta_search'), names.join(','));
      assert.ok(names.includes('everything_echo'), names.join(','));
      assert.ok(names.includes('alpha_alpha_status'));
      assert.ok(!names.some((n) => n.startsWith('v-prefix')), 'the virtual workload is not its own backend');
      assert.equal(await callText(client, 'alpha_search', { query: 'x' }), 'alpha found x');
      assert.equal(await callText(client, 'beta_search', { query: 'y' }), 'beta found y');
      assert.equal(await callText(client, 'everything_echo', { message: 'hi' }), 'Echo: hi');
      // Prompts are prefixed too; resources keep their URIs.
      const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
      assert.ok(prompts.includes('alpha_greet') && prompts.includes('beta_greet'), prompts.join(','));
      const got = await client.getPrompt({ name: 'beta_greet' });
      assert.deepEqual(got.messages[0]?.content, { type: 'text', text: 'hello from beta' });
      const resources = (await client.listResources()).resources.map((r) => r.uri);
      assert.ok(resources.includes('team://alpha/readme') && resources.includes('team://beta/readme'));
      const read = await client.readResource({ uri: 'team://beta/readme' });
      assert.equal((read.contents[0] as { text: string }).text, 'readme of beta');
      const templates = (await client.listResourceTemplates()).resourceTemplates;
      assert.ok(templates.length > 0, 'server-everything templates are aggregated');
      // Completions route by prompt / resource reference.
      const unknown = await client.callTool({ name: 'nope', arguments: {} }).catch((e: Error) => e);
      assert.ok(unknown instanceof Error && /Unknown tool/.test(unknown.message));
    },
  );

  await t.test('prefixOnlyConflicts: only the conflicting names are prefixed', async (t) => {
    await virtual(l, 'v-only', 'team', {
      aggregation: { conflictResolutionConfig: { prefixOnlyConflicts: true, prefixFormat: '{workload}.' } },
    });
    const client = await connect(t, l.url('v-only'));
    const names = await toolNames(client);
    assert.ok(names.includes('alpha.search') && names.includes('beta.search'), names.join(','));
    assert.ok(names.includes('alpha_status') && names.includes('echo'), names.join(','));
    assert.ok(!names.includes('search'));
    assert.equal(await callText(client, 'echo', { message: 'bare' }), 'Echo: bare');
    assert.equal(await callText(client, 'beta.search', { query: 'q' }), 'beta found q');
  });

  await t.test(
    'priority: the first listed backend wins a conflict; unlisted ones keep theirs prefixed',
    async (t) => {
      await virtual(l, 'v-prio', 'team', {
        aggregation: {
          conflictResolution: 'priority',
          conflictResolutionConfig: { priorityOrder: ['beta', 'alpha'] },
        },
      });
      const client = await connect(t, l.url('v-prio'));
      const names = await toolNames(client);
      assert.ok(names.includes('search') && !names.includes('alpha_search'), names.join(','));
      assert.equal(await callText(client, 'search', { query: 'p' }), 'beta found p');
      // `ask`, `slow` ... exist in alpha and beta: beta wins them all; no conflict keeps a bare name.
      assert.ok(names.includes('echo') && names.includes('alpha_status'));
    },
  );

  await t.test('manual: overrides resolve conflicts; an unresolved one is left out, not fatal', async (t) => {
    await virtual(l, 'v-manual', 'team', {
      aggregation: {
        conflictResolution: 'manual',
        tools: [
          {
            workload: 'alpha',
            overrides: { search: { name: 'find_in_alpha', description: 'Alpha search' } },
          },
        ],
      },
    });
    const client = await connect(t, l.url('v-manual'));
    const tools = (await client.listTools()).tools;
    const names = tools.map((x) => x.name);
    assert.ok(names.includes('find_in_alpha') && names.includes('search'), names.join(','));
    assert.equal(tools.find((x) => x.name === 'find_in_alpha')?.description, 'Alpha search');
    assert.equal(await callText(client, 'find_in_alpha', { query: 'm' }), 'alpha found m');
    assert.equal(await callText(client, 'search', { query: 'm' }), 'beta found m');
    // `ask` is offered by alpha and beta with no override: left out.
    assert.ok(!names.includes('ask'));
    const row = l.manager.rows.get('v-manual');
    assert.equal(row?.status, 'running');
  });

  await t.test('filter, excludeAll, defaultToolVisibility deny: hidden tools stay callable', async (t) => {
    await virtual(l, 'v-filter', 'team', {
      aggregation: {
        defaultToolVisibility: 'deny',
        tools: [
          { workload: 'alpha', filter: ['search'] },
          { workload: 'beta', excludeAll: true },
        ],
      },
    });
    const client = await connect(t, l.url('v-filter'));
    assert.deepEqual(await toolNames(client), ['alpha_search']);
    // Filtering only affects what is advertised (as in ToolHive).
    assert.equal(await callText(client, 'beta_search', { query: 'h' }), 'beta found h');
    assert.equal(await callText(client, 'everything_echo', { message: 'h' }), 'Echo: h');
  });

  await t.test('excludeAllTools hides every tool but leaves prompts and resources', async (t) => {
    await virtual(l, 'v-none', 'team', { aggregation: { excludeAllTools: true } });
    const client = await connect(t, l.url('v-none'));
    assert.deepEqual(await toolNames(client), []);
    assert.ok((await client.listPrompts()).prompts.length >= 2);
  });
});
