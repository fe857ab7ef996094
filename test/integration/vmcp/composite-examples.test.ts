/**
 * The reference's composite tool examples (`examples/operator/virtual-mcps/composite_tool_*.yaml`)
 * run end to end: each file's backends are local stand-ins under the same workload names
 * (test/fixtures/vmcp-workflow/standin.ts), its `VirtualMCPServer`'s `spec.config` (with the
 * `compositeToolRefs` folded into `compositeTools`, as the operator does) configures a real
 * virtual workload, and the composite tool is called with the official MCP SDK client.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { parseAllDocuments } from 'yaml';
import { addGroup, connect, type Lab, lab, virtual } from './helpers.js';

const DIR = fileURLToPath(new URL('../../fixtures/operator-examples/virtual-mcps/', import.meta.url));
const STANDIN = fileURLToPath(new URL('../../fixtures/vmcp-workflow/standin.ts', import.meta.url));
const TSX = import.meta.resolve('tsx');

type Doc = { kind: string; metadata: { name: string }; spec: Record<string, unknown> };

/** The file's vMCP config with its referenced definitions folded in. */
function configOf(file: string): Record<string, unknown> {
  const all = parseAllDocuments(readFileSync(DIR + file, 'utf8'))
    .map((d) => d.toJSON() as Doc | null)
    .filter((d): d is Doc => d !== null);
  const defs = new Map(
    all.filter((d) => d.kind === 'VirtualMCPCompositeToolDefinition').map((d) => [d.metadata.name, d.spec]),
  );
  const server = all.find((d) => d.kind === 'VirtualMCPServer')!;
  const config = Object.assign({}, server.spec['config'] as Record<string, unknown>);
  config['compositeTools'] = (config['compositeToolRefs'] as Array<{ name: string }>).map((r) =>
    defs.get(r.name),
  );
  delete config['compositeToolRefs'];
  return config;
}

async function standin(l: Lab, name: string, group: string, tools?: string): Promise<void> {
  await l.manager.create({
    name,
    group,
    image: `cmd://${process.execPath}`,
    cmd_arguments: ['--import', TSX, STANDIN, name, ...(tools === undefined ? [] : [tools])],
  });
  await l.run(name);
}

type Result = { content: Array<{ text: string }>; isError?: boolean };
const STAMP = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/;

test("the reference's composite examples run against stand-in backends", { timeout: 300_000 }, async (t) => {
  // Workload names are unique per home: each example gets its own.
  await t.test('composite_tool_simple.yaml: fetch, validate, confirm', async (t) => {
    const l = lab(t);
    await addGroup(l, 'my-services');
    await standin(l, 'fetch', 'my-services', 'fetch');
    await standin(l, 'yardstick-sse', 'my-services', 'echo,add');
    await virtual(l, 'vmcp-simple-composite', 'my-services', configOf('composite_tool_simple.yaml'));
    const client = await connect(t, l.url('vmcp-simple-composite'));
    const tool = (await client.listTools()).tools.find((x) => x.name === 'fetch_and_validate_data');
    assert.equal(tool?.annotations?.title, 'Fetch and Validate Data');
    const r = (await client.callTool({
      name: 'fetch_and_validate_data',
      arguments: { url: 'https://example.test/x' },
    })) as Result;
    assert.equal(r.isError, undefined, JSON.stringify(r));
    const text = r.content[0]!.text;
    assert.match(
      text,
      /^yardstick-sse echo: Successfully fetched and validated data from https:\/\/example\.test\/x at /,
    );
    assert.match(text, STAMP);
  });

  await t.test('composite_tool_complex.yaml: parallel fetches, validation, math, LLM, report', async (t) => {
    const l = lab(t);
    await addGroup(l, 'data-processing-services');
    await standin(l, 'fetch', 'data-processing-services', 'fetch');
    await standin(l, 'yardstick-sse', 'data-processing-services', 'echo,add');
    await standin(l, 'yardstick-streamable', 'data-processing-services', 'longecho,sampleLLM');
    await virtual(
      l,
      'vmcp-data-processor',
      'data-processing-services',
      configOf('composite_tool_complex.yaml'),
    );
    const client = await connect(t, l.url('vmcp-data-processor'));
    const r = (await client.callTool({
      name: 'process_multi_source_data',
      arguments: {
        source_url_1: 'https://a.test',
        source_url_2: 'https://b.test',
        analysis_prompt: 'Summarise.',
      },
    })) as Result;
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.match(r.content[0]!.text, /^yardstick-sse echo: Report generation completed successfully at /);
  });

  await t.test('composite_tool_with_elicitations.yaml: build, confirm, choose, deploy, notify', async (t) => {
    const l = lab(t);
    await addGroup(l, 'deployment-services');
    await standin(l, 'yardstick-streamable', 'deployment-services', 'echo');
    await virtual(
      l,
      'vmcp-interactive-deploy',
      'deployment-services',
      configOf('composite_tool_with_elicitations.yaml'),
    );
    const client = await connect(t, l.url('vmcp-interactive-deploy'), { capabilities: { elicitation: {} } });
    const answers = [
      { action: 'accept', content: { proceed: true } },
      { action: 'accept', content: { environment: 'staging' } },
    ];
    const asked: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params.message);
      return answers.shift() as never;
    });
    const r = (await client.callTool({ name: 'interactive_deployment', arguments: {} })) as Result;
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(r.content[0]!.text, 'yardstick-streamable echo: DeploymentCompletedSuccessfully');
    assert.equal(asked.length, 2);
    assert.match(asked[1]!, /staging or production/);
  });
});
