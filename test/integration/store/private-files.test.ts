/**
 * Skep's folders and the store are the user's alone, against another account on the same
 * machine: a state folder left 0755 is narrowed to 0700 (with a warning) before anything is
 * written; one that others can write, or that another user owns, is refused with the fix in
 * the message; the SQLite store and the -wal and -shm files SQLite creates beside it are 0600
 * even under a permissive umask, and a store an older version left 0644 is narrowed. The real
 * CLI is run too, as a user would meet the check.
 */
import assert from 'node:assert/strict';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { createContext } from '../../../src/control/app/index.js';
import { loadConfig, resolvePaths } from '../../../src/config/index.js';
import { isSkepError } from '../../../src/shared/index.js';
import { openStore } from '../../../src/store/index.js';
import { runCli } from '../../helpers/cli.js';

const modeOf = (path: string) => statSync(path).mode & 0o777;

function skepHome(t: TestContext): { dir: string; env: NodeJS.ProcessEnv } {
  const dir = mkdtempSync(join(tmpdir(), 'skep-private-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return { dir, env: { ...process.env, SKEP_HOME: dir, SKEP_LOG_LEVEL: 'silent' } };
}

/** Runs `fn` under `mask`, the umask a user with a loose setup has. */
function withUmask<T>(mask: number, fn: () => T): T {
  const before = process.umask(mask);
  try {
    return fn();
  } finally {
    process.umask(before);
  }
}

test('missing folders are created 0700 even under umask 0', (t) => {
  const { env } = skepHome(t);
  const paths = withUmask(0, () => loadConfig(env, () => assert.fail('nothing to repair')).paths);
  for (const dir of [paths.configDir, paths.stateDir, paths.dataDir, paths.cacheDir])
    assert.equal(modeOf(dir), 0o700, dir);
});

test('a state folder that others can read (0755, 0750, 0711) is repaired to 0700, with a warning that names it', (t) => {
  for (const loose of [0o755, 0o750, 0o711]) {
    const { env } = skepHome(t);
    const paths = resolvePaths(env);
    mkdirSync(paths.stateDir, { recursive: true });
    chmodSync(paths.stateDir, loose);
    const warnings: string[] = [];
    loadConfig(env, (m) => warnings.push(m));
    assert.equal(modeOf(paths.stateDir), 0o700);
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.ok(warnings[0]?.includes(paths.stateDir), warnings[0]);
    assert.match(warnings[0] as string, new RegExp(`mode ${loose.toString(8)}\\); Skep changed it to 700`));
  }
});

test('a config folder that others can write (0775, 0777) is refused, unchanged, with the fix in the message', (t) => {
  for (const loose of [0o775, 0o777, 0o730]) {
    const { env } = skepHome(t);
    const paths = resolvePaths(env);
    mkdirSync(paths.configDir, { recursive: true });
    chmodSync(paths.configDir, loose);
    assert.throws(
      () => loadConfig(env, () => undefined),
      (err: unknown) =>
        isSkepError(err) &&
        err.message.includes(`can be written by other users (mode ${loose.toString(8)})`) &&
        err.message.includes(`chmod 700 ${paths.configDir}`),
    );
    assert.equal(modeOf(paths.configDir), loose, 'a refused folder is left as it is');
    assert.equal(existsSync(paths.stateDir), false, 'nothing after the refused folder was created');
  }
});

test("a data folder that belongs to another user is refused (Skep would keep the user's secrets there)", (t) => {
  if (process.getuid?.() !== 0) {
    t.skip('needs root to give a folder to another user');
    return;
  }
  const { env } = skepHome(t);
  const paths = resolvePaths(env);
  mkdirSync(paths.dataDir, { recursive: true, mode: 0o700 });
  chownSync(paths.dataDir, 65534, 65534);
  assert.throws(
    () => loadConfig(env, () => undefined),
    (err: unknown) =>
      isSkepError(err) &&
      err.message.includes(`${paths.dataDir} belongs to uid 65534, not to you (uid 0)`) &&
      err.message.includes('SKEP_HOME'),
  );
});

test('the store and its -wal and -shm files are 0600 after a write, under umask 0 in a 0755 folder', (t) => {
  const { env } = skepHome(t);
  const paths = resolvePaths(env);
  mkdirSync(paths.stateDir, { recursive: true });
  chmodSync(paths.stateDir, 0o755);
  const file = paths.databaseFile;
  withUmask(0, () => {
    // The whole context, as skep serve and the CLI open it: the workloads table holds env_vars.
    const config = loadConfig(env, () => undefined);
    const ctx = createContext(config);
    try {
      const store = openStore(file);
      store.migrate('probe', ['CREATE TABLE probe (secret TEXT)']);
      store.write(() => store.db.prepare('INSERT INTO probe VALUES (?)').run('sk-live-0123456789'));
      for (const path of [file, `${file}-wal`, `${file}-shm`]) {
        assert.ok(existsSync(path), `SQLite created ${path}`);
        assert.equal(modeOf(path), 0o600, path);
      }
      store.close();
    } finally {
      void ctx.close();
    }
  });
  assert.equal(modeOf(paths.stateDir), 0o700);
});

test('a store an older version left 0644 (with its -wal and -shm) is narrowed to 0600 when opened', (t) => {
  const { dir } = skepHome(t);
  const file = join(dir, 'skep.db');
  withUmask(0o022, () => {
    const first = openStore(file);
    first.migrate('probe', ['CREATE TABLE probe (x TEXT)']);
    first.write(() => first.db.prepare('INSERT INTO probe VALUES (?)').run('x'));
    for (const path of [file, `${file}-wal`, `${file}-shm`]) chmodSync(path, 0o644);
    const second = openStore(file);
    for (const path of [file, `${file}-wal`, `${file}-shm`]) assert.equal(modeOf(path), 0o600, path);
    second.close();
    first.close();
  });
});

test('the CLI: a 0755 state folder is repaired with a warning; a group-writable config folder stops the command', (t) => {
  const { env } = skepHome(t);
  const paths = resolvePaths(env);
  mkdirSync(paths.stateDir, { recursive: true });
  chmodSync(paths.stateDir, 0o755);
  const listed = runCli(['list'], env);
  assert.equal(listed.status, 0, listed.stderr);
  assert.match(
    listed.stderr,
    new RegExp(`warning: ${paths.stateDir} could be read by other users \\(mode 755\\)`),
  );
  assert.equal(modeOf(paths.stateDir), 0o700);
  assert.equal(modeOf(paths.databaseFile), 0o600);
  // --json: an empty table would add its hint on stderr.
  const again = runCli(['list', '--json'], env);
  assert.equal(again.stderr, '', 'repaired once, quiet afterwards');

  chmodSync(paths.configDir, 0o770);
  const refused = runCli(['list'], env);
  assert.equal(refused.status, 1);
  assert.equal(
    refused.stderr,
    `error: ${paths.configDir} can be written by other users (mode 770), so its files may not be yours: check them, then run 'chmod 700 ${paths.configDir}'\n`,
  );
});
