/**
 * User flow through the real CLI (`skep` from src under tsx, its own processes) against a real
 * server-everything workload: its runner reports the tool names its clients see, which
 * `skep list`, `skep list --json` and the API's `tools` show; `skep mcp list` and
 * `skep mcp call` talk to it through its proxy with its access token; a tools filter shows and
 * lets through only the tools it names; a stopped or unknown workload is a clear error.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp } from '../helpers/api.js';
import { runCliAsync } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';
import { EVERYTHING_ENTRY, waitForStatus, workloadHome } from '../integration/workloads/helpers.js';

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

test(
  'a workload’s tools are its server’s tool names; skep mcp list and call go through its proxy',
  { timeout: 300_000 },
  async (t) => {
    const { ctx, home } = workloadHome(t);
    const skep = async (...args: string[]): Promise<Outcome> => {
      const r = await runCliAsync(args, { ...home.env, SKEP_LOG_LEVEL: 'silent' }, 120_000);
      return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
    };
    const ok = async (...args: string[]): Promise<string> => {
      const out = await skep(...args);
      assert.equal(out.code, 0, `skep ${args.join(' ')} failed: ${out.stderr}`);
      return out.stdout;
    };

    await ok('run', `cmd://${process.execPath}`, '--name', 'ev', '--', EVERYTHING_ENTRY, 'stdio');
    await ok(
      'run',
      `cmd://${process.execPath}`,
      '--name',
      'only-echo',
      '--tools',
      'echo',
      '--',
      EVERYTHING_ENTRY,
      'stdio',
    );
    await waitForStatus(ctx, 'ev', 'running');
    await waitForStatus(ctx, 'only-echo', 'running');

    // The runner lists the tools at its own proxy once the server is attached.
    const reported = await waitFor('ev to report its tools', () => ctx.workloads.rows.get('ev')?.tools);
    for (const name of ['echo', 'get-sum', 'get-env', 'trigger-long-running-operation'])
      assert.ok(reported.includes(name), `${name} is among ${reported.join(', ')}`);
    // Through the proxy's tools filter, as a client sees them.
    assert.deepEqual(
      await waitFor('only-echo to report its tools', () => ctx.workloads.rows.get('only-echo')?.tools),
      ['echo'],
    );

    // skep list --json and the API carry the names; the table a count.
    const listed = JSON.parse(await ok('list', '--json')) as {
      workloads: { name: string; tools: string[] }[];
    };
    const byName = new Map(listed.workloads.map((w) => [w.name, w.tools]));
    assert.deepEqual(byName.get('ev'), reported);
    assert.deepEqual(byName.get('only-echo'), ['echo']);
    const app = await buildTestApp(ctx);
    t.after(() => app.close());
    const api = (await app.inject({ method: 'GET', url: '/api/v1beta/workloads' })).json<{
      workloads: { name: string; tools: string[] }[];
    }>();
    assert.deepEqual(api.workloads.find((w) => w.name === 'ev')?.tools, reported);
    const table = (await ok('list')).split('\n');
    const header = (table[0] ?? '').split(/\s{2,}/);
    const toolsColumn = header.indexOf('TOOLS');
    assert.ok(toolsColumn > 0, `a TOOLS column in ${table[0]}`);
    const evLine = table.find((l) => l.startsWith('ev '))?.split(/\s{2,}/);
    assert.equal(evLine?.[toolsColumn], String(reported.length));

    // skep mcp list tools: name and the first line of the description.
    const tools = await ok('mcp', 'list', 'tools', 'ev');
    assert.match(tools, /^NAME\s+DESCRIPTION$/m);
    assert.match(tools, /^echo\s+\S.*$/m);
    assert.match(tools, /^get-sum\s+\S.*$/m);
    const toolsJson = JSON.parse(await ok('mcp', 'list', 'tools', 'ev', '--json')) as {
      tools: { name: string; inputSchema: unknown }[];
    };
    assert.deepEqual(
      toolsJson.tools.map((tool) => tool.name),
      reported,
    );
    assert.match(await ok('mcp', 'list', 'prompts', 'ev'), /^NAME\s+ARGUMENTS\s+DESCRIPTION$/m);
    assert.match(await ok('mcp', 'list', 'resources', 'ev'), /^URI\s+NAME\s+DESCRIPTION\n\S+:\/\//m);

    // skep mcp call: --arg (text, or JSON when it parses) and --json '{...}'.
    assert.equal(await ok('mcp', 'call', 'ev', 'echo', '--arg', 'message=hi'), 'Echo: hi\n');
    assert.match(await ok('mcp', 'call', 'ev', 'get-sum', '--arg', 'a=2', '--arg', 'b=3'), /\b5\b/);
    const raw = JSON.parse(await ok('mcp', 'call', 'ev', 'echo', '--json', '{"message":"hi"}')) as unknown;
    assert.deepEqual(raw, { content: [{ type: 'text', text: 'Echo: hi' }] });
    // Other content types are named, not dumped.
    assert.match(await ok('mcp', 'call', 'ev', 'get-tiny-image'), /^\[image image\/png, \d+ bytes\]$/m);

    // A tool error exits 1 with its text; the filter hides what it does not name.
    const bad = await skep('mcp', 'call', 'ev', 'get-sum', '--arg', 'a=x');
    assert.equal(bad.code, 1);
    assert.match(
      bad.stderr,
      /^error: (tool 'get-sum' of workload 'ev' failed|workload 'ev' answered with an error)/m,
    );
    assert.deepEqual(
      JSON.parse(await ok('mcp', 'list', 'tools', 'only-echo', '--json')).tools.map(
        (tool: { name: string }) => tool.name,
      ),
      ['echo'],
    );
    const hidden = await skep('mcp', 'call', 'only-echo', 'get-sum', '--arg', 'a=1', '--arg', 'b=2');
    assert.equal(hidden.code, 1);
    assert.match(hidden.stderr, /^error: .*only-echo/m);

    // Usage: a malformed --arg or --json is exit 2 with what to write.
    const usage = await skep('mcp', 'call', 'ev', 'echo', '--arg', 'message');
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /^error: invalid --arg 'message': use KEY=VALUE$/m);
    assert.equal((await skep('mcp', 'call', 'ev', 'echo', '--json', '[1]')).code, 2);

    // Unknown and stopped workloads say so; a stopped workload forgets its tools.
    const unknown = await skep('mcp', 'list', 'tools', 'nope');
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^error: workload 'nope' not found$/m);
    await ok('stop', 'only-echo');
    assert.equal(ctx.workloads.rows.get('only-echo')?.tools, undefined);
    const stopped = await skep('mcp', 'call', 'only-echo', 'echo', '--arg', 'message=hi');
    assert.equal(stopped.code, 1);
    assert.match(
      stopped.stderr,
      /^error: workload 'only-echo' is stopped: start it with 'skep restart only-echo'$/m,
    );
    // Not reported (stopped): the API shows the configured filter.
    const after = JSON.parse(await ok('list', '--all', '--json')) as {
      workloads: { name: string; tools: string[] }[];
    };
    assert.deepEqual(after.workloads.find((w) => w.name === 'only-echo')?.tools, ['echo']);
  },
);
