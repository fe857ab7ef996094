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

test('the wall-clock limit stops a busy script and one blocked on a slow tool call', async () => {
  // Busy: no step limit in reach, only the clock stops it (checked by the interrupt handler).
  const started = Date.now();
  const busy = await runScript(
    'for (;;) {}',
    {},
    [],
    Object.assign({}, settings, { stepLimit: 1e15 }),
    host,
    new AbortController().signal,
    300,
  );
  assert.deepEqual(busy, { ok: false, error: 'the script ran past its time limit (0.3 s)' });
  // Blocked: the tool answers only when its call is cancelled; the limit ends the script and
  // cancels the call in flight.
  let cancelled: (() => void) | undefined;
  const callCancelled = new Promise<void>((resolve) => {
    cancelled = resolve;
  });
  const slow = {
    call: (_name: string, _args: Record<string, unknown>, signal?: AbortSignal) =>
      new Promise<{ content: Array<{ type: string; text: string }> }>((_resolve, reject) => {
        signal?.addEventListener('abort', () => {
          cancelled?.();
          reject(new Error('cancelled'));
        });
      }),
  };
  const blocked = await runScript(
    'return await my_tool({});',
    {},
    [{ name: 'my-tool', description: 'A slow tool.' }],
    settings,
    slow,
    new AbortController().signal,
    300,
  );
  assert.deepEqual(blocked, { ok: false, error: 'the script ran past its time limit (0.3 s)' });
  await callCancelled;
  // Both ended on the clock, far from the default minute (generous bound for a loaded machine).
  assert.ok(Date.now() - started < 20_000, `took ${Date.now() - started} ms`);
});
