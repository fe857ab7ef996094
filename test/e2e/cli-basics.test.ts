import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli } from '../helpers/cli.js';
import { tempHome } from '../helpers/home.js';

test('skep version and --json', (t) => {
  const home = tempHome(t);
  const text = runCli(['version'], home.env);
  assert.equal(text.status, 0, text.stderr);
  assert.match(text.stdout, /^skep \d+\.\d+\.\d+/);
  const json = runCli(['version', '--json'], home.env);
  assert.match(JSON.parse(json.stdout).version, /^\d+\.\d+\.\d+/);
});

test('skep group create / list --json / rm, with clear errors', (t) => {
  const home = tempHome(t);
  assert.equal(runCli(['group', 'create', 'team'], home.env).status, 0);
  const list = runCli(['group', 'list', '--json'], home.env);
  assert.deepEqual(
    JSON.parse(list.stdout).groups.map((g: { name: string }) => g.name),
    ['default', 'team'],
  );
  const dup = runCli(['group', 'create', 'team'], home.env);
  assert.equal(dup.status, 1);
  assert.match(dup.stderr, /already exists/);
  const bad = runCli(['group', 'create', 'Bad!'], home.env);
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /invalid group name/);
  const protectedDefault = runCli(['group', 'rm', 'default'], home.env);
  assert.equal(protectedDefault.status, 1);
  assert.equal(runCli(['group', 'rm', 'team'], home.env).status, 0);
  const after = runCli(['group', 'list'], home.env);
  assert.doesNotMatch(after.stdout, /team/);
});

test('--help is available everywhere and unknown commands exit 2', (t) => {
  const home = tempHome(t);
  const help = runCli(['--help'], home.env);
  assert.equal(help.status, 0);
  assert.match(help.stdout, /serve/);
  const groupHelp = runCli(['group', '--help'], home.env);
  assert.match(groupHelp.stdout, /create/);
  const unknown = runCli(['no-such-command'], home.env);
  assert.equal(unknown.status, 2);
});

test('a mistyped serve flag or catalog name gets a suggestion, not a silent start', (t) => {
  const home = tempHome(t);
  const flag = runCli(['serve', '--prot', '1'], home.env);
  assert.equal(flag.status, 2);
  assert.match(flag.stderr, /^error: unknown option '--prot'\n\(Did you mean --port\?\)/);
  const name = runCli(['run', 'everythin'], home.env);
  assert.equal(name.status, 1);
  assert.equal(
    name.stderr.split('\n')[0],
    "error: server 'everythin' is not in the registry; did you mean everything?",
  );
});

test('skep skill validate says error: and warning: like every other command', (t) => {
  const home = tempHome(t);
  const empty = mkdtempSync(join(tmpdir(), 'skep-skill-'));
  t.after(() => rmSync(empty, { recursive: true, force: true }));
  const run = runCli(['skill', 'validate', empty], home.env);
  assert.equal(run.status, 1);
  assert.match(run.stdout, /^error: SKILL\.md not found/);
  assert.doesNotMatch(run.stdout, /Error:|Warning:/);
});

test('an empty skep list says what to do; a failed start is counted, and times are short', (t) => {
  const home = tempHome(t);
  const empty = runCli(['list'], home.env);
  assert.equal(empty.status, 0);
  assert.equal(empty.stdout.split('\n')[0]?.split(/\s+/)[0], 'NAME');
  assert.equal(
    empty.stderr,
    'no workloads; start one with skep run <server> (skep registry list shows the catalog)\n',
  );

  const failed = runCli(['run', 'cmd:///bin/false', '--name', 'f1', '--keep-on-failure'], home.env);
  assert.equal(failed.status, 1, failed.stderr);
  const running = runCli(['list'], home.env);
  assert.equal(running.stderr, 'no running workloads; 1 stopped or failed: skep list --all\n');
  const all = runCli(['list', '--all'], home.env);
  assert.equal(all.stderr, '');
  const row = all.stdout.split('\n').find((l) => l.startsWith('f1 '));
  assert.match(row ?? '', /\s\d{4}-\d{2}-\d{2} \d{2}:\d{2}$/);
  runCli(['rm', 'f1'], home.env);
});
