/**
 * The virtual MCP server through the real CLI and real (detached) runner processes: `skep vmcp
 * <group> --config file.yaml` creates a virtual workload that is listed, exported, restarted
 * and removed like any other, and whose endpoint serves the group's workloads; a bad config
 * is refused naming the field.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli } from '../../helpers/cli.js';
import { tempHome } from '../../helpers/home.js';
import { cleanupFirst } from '../cli/cleanup.js';
import { callText, connect, TEAM_SERVER, toolNames, waitFor } from './helpers.js';
import { runnerV8Flags } from '../../../src/workloads/index.js';

/** The command line of the running runner of `name`, from /proc. */
function runnerArgv(name: string): string[] {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').slice(0, -1);
    } catch {
      continue; // gone
    }
    if (argv.at(-2) === 'runner' && argv.at(-1) === name) return argv;
  }
  throw new Error(`no runner process for ${name}`);
}

/** The flags right after the node binary: where the runner's V8 flags go. */
const leadingFlags = (name: string, count: number): string[] => runnerArgv(name).slice(1, 1 + count);

test(
  'skep vmcp: a virtual workload from a config file, managed like any workload',
  { timeout: 360_000 },
  async (t) => {
    const later = cleanupFirst(t);
    const home = tempHome(t);
    const cli = (...args: string[]) => runCli(args, home.env);
    later(() => cli('rm', 'alpha', 'crew-hub'));
    assert.equal(cli('group', 'create', 'crew').status, 0);
    const run = cli(
      'run',
      `cmd://${process.execPath}`,
      '--name',
      'alpha',
      '--group',
      'crew',
      '--',
      '--import',
      import.meta.resolve('tsx'),
      TEAM_SERVER,
      'alpha',
    );
    assert.equal(run.status, 0, run.stderr);

    const bad = join(home.dir, 'bad.yaml');
    writeFileSync(bad, 'aggregation:\n  conflictResolution: newest\n');
    const refused = cli('vmcp', 'crew', '--config', bad);
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /aggregation\/conflictResolution|conflictResolution/);

    // A composite tool whose steps wait on each other is refused before anything runs, naming the step.
    const cycle = join(home.dir, 'cycle.yaml');
    writeFileSync(
      cycle,
      [
        'compositeTools:',
        '  - name: loop',
        '    description: Two steps waiting on each other.',
        '    steps:',
        '      - {id: a, tool: alpha.search, dependsOn: [b]}',
        '      - {id: b, tool: alpha.search, dependsOn: [a]}',
      ].join('\n'),
    );
    const looped = cli('vmcp', 'crew', '--config', cycle);
    assert.equal(looped.status, 1);
    assert.match(looped.stderr, /compositeTools\[0\] \(loop\)\.steps: dependsOn forms a cycle: a → b → a/);

    const file = join(home.dir, 'vmcp.yaml');
    writeFileSync(
      file,
      [
        'aggregation:',
        '  conflictResolutionConfig:',
        '    prefixFormat: "{workload}."',
        'operational:',
        '  timeouts:',
        '    default: 10s',
        'codeMode: {enabled: true}',
        'compositeTools:',
        '  - name: twice',
        '    description: Searches twice, the second time for what the first found.',
        '    parameters: {type: object, properties: {q: {type: string}}}',
        '    steps:',
        '      - {id: first, tool: alpha.search, arguments: {query: "{{.params.q}}"}}',
        '      - {id: second, tool: alpha.search, dependsOn: [first], arguments: {query: "[{{.steps.first.output.text}}]"}}',
      ].join('\n'),
    );
    const made = cli('vmcp', 'crew', '--name', 'crew-hub', '--config', file, '--json');
    assert.equal(made.status, 0, made.stderr);
    const { port, url } = JSON.parse(made.stdout) as { port: number; url: string };
    // The working URL: the virtual workload answers only its owner, so it carries the token.
    assert.match(url, new RegExp(`^http://127\\.0\\.0\\.1:${port}/mcp\\?skep_token=[0-9a-f]{64}$`));

    const client = await connect(t, url);
    assert.ok((await toolNames(client)).includes('alpha.search'));
    assert.equal(await callText(client, 'alpha.search', { query: 'cli' }), 'alpha found cli');
    assert.equal(await callText(client, 'twice', { q: 'cli' }), 'alpha found [alpha found cli]');
    // Code mode from the built bundle: the QuickJS sandbox loads its WebAssembly.
    assert.equal(
      await callText(client, 'execute_tool_script', {
        script: 'const r = await call_tool("alpha.search", { query: "js" }); return r + "!";',
      }),
      'alpha found js!',
    );
    await client.close();

    // Each detached runner starts with the V8 flags of its kind (the virtual one's young
    // generation is larger), read from the processes themselves.
    const vmcpFlags = runnerV8Flags('vmcp');
    const serverFlags = runnerV8Flags('server');
    assert.deepEqual(leadingFlags('crew-hub', vmcpFlags.length), [...vmcpFlags]);
    assert.deepEqual(leadingFlags('alpha', serverFlags.length), [...serverFlags]);
    assert.ok(vmcpFlags.includes('--max-semi-space-size=16'), vmcpFlags.join(' '));
    assert.ok(serverFlags.includes('--max-semi-space-size=2'), serverFlags.join(' '));

    const listed = JSON.parse(cli('list', '--json').stdout) as {
      workloads: { name: string; group: string }[];
    };
    assert.ok(listed.workloads.some((w) => w.name === 'crew-hub' && w.group === 'crew'));
    const exported = JSON.parse(cli('export', 'crew-hub').stdout) as { vmcp?: unknown; image: string };
    assert.deepEqual(Object.keys(exported.vmcp as object), [
      'aggregation',
      'operational',
      'codeMode',
      'compositeTools',
    ]);

    assert.equal(cli('restart', 'crew-hub').status, 0);
    await waitFor('the restarted endpoint to serve', async () => {
      try {
        const again = await connect(t, url);
        const names = await toolNames(again);
        await again.close();
        return names.includes('alpha.search') ? true : undefined;
      } catch {
        return undefined;
      }
    });

    // A group that holds workloads (here a virtual one) is not deleted, and nothing moves to
    // `default` (where the virtual workload would then serve every workload of default).
    const refusedRm = cli('group', 'rm', 'crew');
    assert.equal(refusedRm.status, 1);
    assert.equal(
      refusedRm.stderr,
      'error: group crew still holds 2 workloads: alpha, crew-hub (virtual MCP server); nothing was changed\n' +
        "  'skep group rm crew --with-workloads' deletes them with the group; 'skep rm alpha crew-hub' removes them first\n",
    );
    const kept = JSON.parse(cli('list', '--all', '--json').stdout) as {
      workloads: { name: string; group: string }[];
    };
    assert.deepEqual(
      kept.workloads.map((w) => [w.name, w.group]),
      [
        ['alpha', 'crew'],
        ['crew-hub', 'crew'],
      ],
    );
    const removed = cli('group', 'rm', 'crew', '--with-workloads');
    assert.equal(removed.status, 0, removed.stderr);
    assert.equal(removed.stdout, 'group crew deleted\n');
    const none = JSON.parse(cli('list', '--all', '--json').stdout) as { workloads: unknown[] };
    assert.deepEqual(none.workloads, []);
    assert.doesNotMatch(cli('group', 'list').stdout, /crew/);
  },
);
