/**
 * As in ToolHive, a failed install is undone step by step, newest first. A step that
 * fails while committing or undoing must not stop the others, nor vanish: each is logged
 * with its error (the install's own error is what the caller sees).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SkillsContext } from '../../../src/skills/context.js';
import { commitInstall, type InstallTx, rollbackInstall } from '../../../src/skills/install.js';
import { createLineLogger } from '../../../src/shared/index.js';

function harness(): { ctx: SkillsContext; lines: Record<string, unknown>[]; tx: InstallTx; ran: string[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = createLineLogger({
    write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>),
  });
  // Committing and undoing use only the logger of the context.
  const ctx = { logger } as Partial<SkillsContext> as SkillsContext;
  const ran: string[] = [];
  const step = (what: string, fails = false) => ({
    what,
    run: async () => {
      ran.push(what);
      if (fails) throw new Error(`${what}: EACCES`);
    },
  });
  const tx: InstallTx = {
    scope: 'user',
    projectRoot: '',
    clients: ['claude-code'],
    group: 'default',
    force: false,
    undo: [step('restore lock'), step('restore /a', true), step('restore record')],
    commits: [step('drop backup of /a', true), step('drop backup of /b')],
    lock: undefined,
    visited: new Set(),
    stack: [],
  };
  return { ctx, lines, tx, ran };
}

test('rollback runs every undo step newest first and logs each failure with its error', async () => {
  const { ctx, lines, tx, ran } = harness();
  await rollbackInstall(ctx, 'demo', tx);
  assert.deepEqual(ran, ['restore record', 'restore /a', 'restore lock']);
  assert.equal(lines.length, 1);
  const line = lines[0]!;
  assert.equal(line['level'], 50);
  assert.equal(line['skill'], 'demo');
  assert.equal(line['step'], 'restore /a');
  assert.equal((line['err'] as { message: string }).message, 'restore /a: EACCES');
  assert.match((line['err'] as { stack: string }).stack, /restore \/a: EACCES/);
});

test('commit drops every backup even after one fails, and logs the failure', async () => {
  const { ctx, lines, tx, ran } = harness();
  await commitInstall(ctx, 'demo', tx);
  assert.deepEqual(ran, ['drop backup of /a', 'drop backup of /b']);
  assert.equal(lines.length, 1);
  assert.equal(lines[0]!['level'], 40);
  assert.equal(lines[0]!['step'], 'drop backup of /a');
  assert.equal((lines[0]!['err'] as { message: string }).message, 'drop backup of /a: EACCES');
});
