/**
 * The reference's composite tool examples (`examples/operator/virtual-mcps/composite_tool_*.yaml`,
 * copied under test/fixtures/operator-examples): each `VirtualMCPCompositeToolDefinition` compiles,
 * and each `VirtualMCPServer`'s `spec.config`, with its `compositeToolRefs` folded into
 * `compositeTools` as the operator does, is a valid vMCP configuration.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { parseVmcpConfig } from '../../../src/dataplane/vmcp/config.js';

const DIR = fileURLToPath(new URL('../../fixtures/operator-examples/virtual-mcps/', import.meta.url));

type Doc = { kind: string; metadata: { name: string }; spec: Record<string, unknown> };

function docs(file: string): Doc[] {
  return parseAllDocuments(readFileSync(DIR + file, 'utf8'))
    .map((d) => d.toJSON() as Doc | null)
    .filter((d): d is Doc => d !== null);
}

for (const file of [
  'composite_tool_simple.yaml',
  'composite_tool_complex.yaml',
  'composite_tool_with_elicitations.yaml',
]) {
  test(`${file}: the definitions compile and the server's config validates with them folded in`, () => {
    const all = docs(file);
    const definitions = new Map(
      all.filter((d) => d.kind === 'VirtualMCPCompositeToolDefinition').map((d) => [d.metadata.name, d.spec]),
    );
    assert.ok(definitions.size > 0);
    const servers = all.filter((d) => d.kind === 'VirtualMCPServer');
    assert.equal(servers.length, 1);
    const config = Object.assign({}, servers[0]!.spec['config'] as Record<string, unknown>);
    const refs = (config['compositeToolRefs'] as Array<{ name: string }>).map((r) => {
      const spec = definitions.get(r.name);
      assert.ok(spec !== undefined, `${r.name} is defined in the file`);
      return spec;
    });
    delete config['compositeToolRefs'];
    config['compositeTools'] = refs;
    const resolved = parseVmcpConfig(config);
    assert.equal(resolved.composites.length, 1);
    const c = resolved.composites[0]!;
    assert.equal(c.name, (refs[0] as { name: string }).name);
    assert.equal(c.steps.length, (refs[0] as { steps: unknown[] }).steps.length);
    // Without the fold, the dataplane refuses refs it cannot resolve, naming what to do.
    assert.throws(
      () => parseVmcpConfig(servers[0]!.spec['config']),
      /compositeToolRefs .*put the definitions in compositeTools/,
    );
  });
}

test("the examples' retry settings are read as written (maxRetries is retryCount)", () => {
  const spec = docs('composite_tool_with_elicitations.yaml').find(
    (d) => d.kind === 'VirtualMCPCompositeToolDefinition',
  )!.spec;
  const c = parseVmcpConfig({ compositeTools: [spec] }).composites[0]!;
  const deploy = c.steps.find((s) => s.id === 'deploy_app')!;
  assert.deepEqual(deploy.onError, { action: 'retry', retryCount: 2, retryDelayMs: 30_000 });
  assert.equal(c.steps.find((s) => s.id === 'confirm_deployment')?.onDecline, 'skip_remaining');
  const simple = docs('composite_tool_simple.yaml').find(
    (d) => d.kind === 'VirtualMCPCompositeToolDefinition',
  )!.spec;
  const fetch = parseVmcpConfig({ compositeTools: [simple] }).composites[0]!.steps[0]!;
  // `action: abort, maxRetries: 2, retryDelay: 5s`: two retries, then abort.
  assert.deepEqual(fetch.onError, { action: 'abort', retryCount: 2, retryDelayMs: 5000 });
});

test('vmcp_codemode.yaml: the server config (code mode with every limit) validates', () => {
  const server = docs('vmcp_codemode.yaml').find((d) => d.kind === 'VirtualMCPServer')!;
  const resolved = parseVmcpConfig(server.spec['config']);
  assert.deepEqual(resolved.codeMode, {
    stepLimit: 100_000,
    parallelMaxConcurrency: 10,
    toolCallTimeoutMs: 30_000,
  });
});
