/**
 * `skep run --guardrails` and the GUARDRAILS column of `skep list`, as real `skep` processes
 * on a temporary home with real servers (server-everything as a local process): the default
 * and `off` are both shown, a bad value is refused before anything is created.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCliAsync } from '../../helpers/cli.js';
import { tempHome } from '../../helpers/home.js';
import { EVERYTHING_ENTRY } from '../workloads/helpers.js';
import { cleanupFirst } from './cleanup.js';

test('skep run --guardrails off|default, and skep list shows what is on', { timeout: 300_000 }, async (t) => {
  const later = cleanupFirst(t);
  const home = tempHome(t, 'skep-guardrails-cli-');
  const env = { ...home.env, SKEP_LOG_LEVEL: 'silent' };
  const skep = (...args: string[]) => runCliAsync(args, env, 150_000);
  const server = [`cmd://${process.execPath}`];
  const serverArgs = ['--', EVERYTHING_ENTRY, 'stdio'];
  later(async () => {
    await skep('rm', 'g-default', 'g-off');
  });

  const bad = await skep('run', ...server, '--name', 'g-bad', '--guardrails', 'on', ...serverArgs);
  assert.equal(bad.status, 2, bad.stderr);
  assert.match(bad.stderr, /^error: invalid --guardrails 'on': use default or off$/m);

  const byDefault = await skep('run', ...server, '--name', 'g-default', ...serverArgs);
  assert.equal(byDefault.status, 0, byDefault.stderr);
  const off = await skep('run', ...server, '--name', 'g-off', '--guardrails', 'off', ...serverArgs);
  assert.equal(off.status, 0, off.stderr);
  const explicit = await skep(
    'run',
    ...server,
    '--name',
    'g-explicit',
    '--guardrails',
    'default',
    ...serverArgs,
  );
  assert.equal(explicit.status, 0, explicit.stderr);
  later(async () => {
    await skep('rm', 'g-explicit');
  });

  const json = await skep('list', '--all', '--json');
  const rows = (JSON.parse(json.stdout) as { workloads: Array<{ name: string; guardrails: string }> })
    .workloads;
  assert.deepEqual(
    rows.map((w) => [w.name, w.guardrails]),
    [
      ['g-default', 'ownSecrets:redact credentials:redact'],
      ['g-explicit', 'ownSecrets:redact credentials:redact'],
      ['g-off', 'off'],
    ],
  );
  const table = (await skep('list', '--all')).stdout.split('\n');
  // The table says default/off/custom (the line itself is in --json, the API and the UI).
  assert.match(table[0] ?? '', /^NAME .* GUARDRAILS +CREATED$/);
  assert.match(
    table.find((l) => l.startsWith('g-default ')) ?? '',
    / default +\d{4}-\d{2}-\d{2} \d{2}:\d{2}$/,
  );
  assert.match(table.find((l) => l.startsWith('g-off ')) ?? '', / off +\d{4}-\d{2}-\d{2} \d{2}:\d{2}$/);
});
