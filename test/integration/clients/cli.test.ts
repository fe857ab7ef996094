/** `skep client ...` as a real process on a temporary SKEP_HOME and HOME. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { tempHome } from '../../helpers/home.js';

test('skep client register|list|status|remove with --json', { timeout: 120_000 }, (t) => {
  const skep = tempHome(t, 'skep-clients-cli-');
  const home = join(skep.dir, 'user-home');
  mkdirSync(join(home, '.cursor'), { recursive: true });
  const env = { ...skep.env, HOME: home, XDG_CONFIG_HOME: '', APPDATA: '', CODEX_HOME: '' };
  const skepCli = (...args: string[]) => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/control/cli/main.ts', 'client', ...args], {
      env,
      encoding: 'utf8',
    });
    return { code: r.status, out: r.stdout, err: r.stderr };
  };
  let r = skepCli('register', 'cursor', '--json');
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(JSON.parse(r.out), { name: 'cursor', groups: ['default'] });
  r = skepCli('list', '--json');
  assert.deepEqual(JSON.parse(r.out), [{ name: 'cursor', groups: ['default'] }]);
  r = skepCli('status', '--json');
  const status = JSON.parse(r.out).clients as {
    client_type: string;
    installed: boolean;
    registered: boolean;
  }[];
  assert.equal(status.length, 25);
  assert.deepEqual(
    status.find((c) => c.client_type === 'cursor'),
    {
      client_type: 'cursor',
      installed: true,
      registered: true,
      supports_skills: true,
    },
  );
  r = skepCli('register', 'notepad');
  assert.equal(r.code, 1);
  assert.match(r.err, /unsupported client type 'notepad'/);
  r = skepCli('register', 'cursor', '--group', 'ghost');
  assert.equal(r.code, 1);
  assert.match(r.err, /ghost/);
  r = skepCli('remove', 'cursor', '--json');
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(JSON.parse(skepCli('list', '--json').out), []);
  // Nothing of Skep's is left (no empty mcp.json, no backup; the case with entries written is in
  // test/unit/clients/editors.test.ts); the client's own folder stays.
  assert.deepEqual(readdirSync(join(home, '.cursor')), []);
});
