/**
 * Code mode's sandbox (`src/dataplane/vmcp/codemode/sandbox.ts`) on its own: the settings'
 * defaults, the heap limit, the step limit, and a host call's result as the script sees it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseVmcpConfig } from '../../../src/dataplane/vmcp/config.js';
import { runScript } from '../../../src/dataplane/vmcp/codemode/sandbox.js';

const settings = { stepLimit: 100_000, parallelMaxConcurrency: 10, toolCallTimeoutMs: 1000 };
const host = {
  call: async (name: string, args: Record<string, unknown>) => ({
    content: [{ type: 'text', text: JSON.stringify({ name, args }) }],
  }),
};
const run = (src: string) =>
  runScript(
    src,
    { x: 2 },
    [{ name: 'my-tool', description: 'A tool.' }],
    settings,
    host,
    new AbortController().signal,
  );

test('codeMode: the reference defaults; enabled false with settings is refused', () => {
  const c = parseVmcpConfig({ codeMode: { enabled: true } }).codeMode;
  assert.deepEqual(c, { stepLimit: 100_000, parallelMaxConcurrency: 10, toolCallTimeoutMs: 30_000 });
  assert.equal(parseVmcpConfig({ codeMode: { enabled: false } }).codeMode, undefined);
  assert.throws(
    () => parseVmcpConfig({ codeMode: { enabled: true, toolCallTimeout: 'later' } }),
    /toolCallTimeout|pattern/,
  );
});

test('a script sees tool results as values, data as variables', async () => {
  const r = await run('const v = await my_tool({ a: x }); return v;');
  assert.deepEqual(r, { ok: true, value: { name: 'my-tool', args: { a: 2 } } });
});

test('limits: heap, steps, syntax errors', async () => {
  const mem = await runScript(
    'const a = []; for (let i = 0; i < 1e8; i++) a.push({ i }); return a.length;',
    {},
    [],
    Object.assign({}, settings, { stepLimit: 1e12 }),
    host,
    new AbortController().signal,
  );
  assert.equal(mem.ok, false);
  assert.match(mem.error ?? '', /InternalError: out of memory/);
  const loop = await run('for (;;) {}');
  assert.deepEqual(loop, { ok: false, error: 'the script passed its stepLimit (100000 steps)' });
  const syntax = await run('return (');
  assert.equal(syntax.ok, false);
  assert.match(syntax.error ?? '', /SyntaxError/);
  // The sandbox is usable again after each failure (each script gets a fresh runtime).
  assert.deepEqual(await run('return 1 + 1'), { ok: true, value: 2 });
});
