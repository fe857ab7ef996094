/**
 * Code mode (`codeMode`): the virtual tool `execute_tool_script` runs a JavaScript script in a
 * QuickJS (WebAssembly) sandbox over a real virtual workload and real backends, called with the
 * official MCP SDK client: a script that calls two tools and combines their results, `parallel`
 * bounded by `parallelMaxConcurrency`, a tool error caught as an exception, a loop stopped at
 * `stepLimit`, I/O that does not exist in the sandbox, and each inner call audited like a
 * direct call and authorized one by one (Cedar).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { tempHome } from '../../helpers/home.js';
import { addGroup, connect, lab, waitFor } from './helpers.js';

const WF_SERVER = fileURLToPath(new URL('../../fixtures/vmcp-workflow/server.ts', import.meta.url));
const TSX = import.meta.resolve('tsx');

interface Result {
  content: Array<{ type: string; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

async function script(client: Client, source: string, data?: Record<string, unknown>): Promise<Result> {
  const args: Record<string, unknown> = { script: source };
  if (data !== undefined) args['data'] = data;
  return (await client.callTool({ name: 'execute_tool_script', arguments: args })) as Result;
}

test(
  'code mode: scripts over real backends, in a sandbox with limits, audited',
  { timeout: 300_000 },
  async (t) => {
    const l = lab(t);
    const file = join(tempHome(t, 'skep-codemode-audit-').dir, 'audit.log');
    await addGroup(l, 'cm');
    await l.manager.create({
      name: 'wf',
      group: 'cm',
      image: `cmd://${process.execPath}`,
      cmd_arguments: ['--import', TSX, WF_SERVER, 'wf'],
    });
    await l.run('wf');
    await l.manager.create({
      name: 'v-base',
      group: 'cm',
      vmcp: {
        codeMode: { enabled: true, stepLimit: 100_000, parallelMaxConcurrency: 2, toolCallTimeout: '5s' },
      },
    });
    await l.manager.createFromConfig(
      Object.assign({}, l.manager.exportConfig('v-base'), {
        audit_config: { logFile: file },
        // Every call allowed but wf_user: a script's inner calls are judged one by one.
        authz_config: {
          version: '1.0',
          type: 'cedarv1',
          cedar: {
            policies: [
              'permit(principal, action, resource);',
              'forbid(principal, action == Action::"call_tool", resource == Tool::"wf_user");',
            ],
          },
        },
      }),
      { name: 'v-code' },
    );
    await l.run('v-code');
    const client = await connect(t, l.url('v-code'));

    await t.test('listed, with the language and the callable tools in its description', async () => {
      const tool = (await client.listTools()).tools.find((x) => x.name === 'execute_tool_script');
      assert.ok(tool !== undefined);
      assert.match(tool.description ?? '', /JavaScript/);
      assert.match(tool.description ?? '', /wf_add\(args\)/);
      assert.deepEqual(tool.inputSchema.required, ['script']);
    });

    await t.test('a script calls two tools and combines their results', async () => {
      const r = await script(
        client,
        'const [sum, p] = await parallel([() => wf_add({ a: 1, b: n }), () => call_tool("wf_packages", { n: 2 })]);\nreturn { sum: sum.result, name: p.packages[1].name };',
        { n: 41 },
      );
      assert.equal(r.isError, undefined, JSON.stringify(r));
      assert.deepEqual(r.structuredContent, { sum: 42, name: 'pkg1' });
    });

    await t.test('parallel runs at most parallelMaxConcurrency calls at once', async () => {
      await client.callTool({ name: 'wf_stats', arguments: { reset: true } });
      const r = await script(
        client,
        'const out = await parallel([1, 2, 3, 4, 5].map((i) => () => wf_work({ label: "w" + i, ms: 100 })));\nreturn out.join(",");',
      );
      assert.equal(r.content[0]?.text, 'done w1,done w2,done w3,done w4,done w5');
      const s = (await client.callTool({ name: 'wf_stats', arguments: { reset: true } })) as Result;
      assert.equal(s.structuredContent?.['max'], 2);
    });

    await t.test('a tool error is an exception the script can catch', async () => {
      const r = await script(
        client,
        'try { await wf_fail(); return "no"; } catch (e) { return "caught " + e.message; }',
      );
      assert.equal(r.content[0]?.text, 'caught wf_fail failed: "boom"');
    });

    await t.test('each inner call is authorized: a forbidden tool throws in the script', async () => {
      const r = await script(
        client,
        'try { await wf_user({ id: 1 }); return "allowed"; } catch (e) { return "denied: " + e.message; }',
      );
      assert.match(r.content[0]!.text, /^denied: the call to wf_user was refused \(HTTP 403: Unauthorized\)/);
      const direct = await client.callTool({ name: 'wf_user', arguments: { id: 1 } }).catch((e: Error) => e);
      assert.ok(direct instanceof Error && /403/.test(direct.message), 'the direct call is denied alike');
    });

    await t.test('a loop that never ends is stopped at stepLimit', async () => {
      const started = Date.now();
      const r = await script(client, 'let i = 0; while (true) { i++; }');
      assert.equal(r.isError, true);
      assert.match(r.content[0]!.text, /stepLimit \(100000 steps\)/);
      assert.ok(Date.now() - started < 10_000);
    });

    await t.test('no I/O exists in the sandbox', async () => {
      for (const src of [
        'return await fetch("http://127.0.0.1/")',
        'return require("fs").readFileSync("/etc/passwd", "utf8")',
        'return process.env',
      ]) {
        const r = await script(client, src);
        assert.equal(r.isError, true, src);
        assert.match(
          r.content[0]!.text,
          /script failed: ReferenceError: '?(fetch|require|process)'? is not defined/,
          src,
        );
      }
      const r = await script(client, 'return await call_tool("nope", {})');
      assert.equal(r.isError, true);
      assert.match(r.content[0]!.text, /unknown tool "nope"/);
    });

    await t.test('each inner call is audited, linked to the script call', async () => {
      const lines = await waitFor('the audit events', () => {
        const all = readFileSync(file, 'utf8')
          .split('\n')
          .filter((x) => x.includes('"mcp_tool_call"'))
          .map(
            (x) =>
              JSON.parse(x) as { target: Record<string, string>; source: { extra: Record<string, string> } },
          );
        return all.filter((e) => e.target['name'] === 'wf_add').length >= 1 ? all : undefined;
      });
      const add = lines.find((e) => e.target['name'] === 'wf_add')!;
      const user = lines.find((e) => e.target['name'] === 'wf_packages')!;
      const outer = lines.filter((e) => e.target['name'] === 'execute_tool_script');
      assert.equal(add.source.extra['request_id'], user.source.extra['request_id']);
      assert.ok(outer.some((e) => e.source.extra['request_id'] === add.source.extra['request_id']));
    });
  },
);
