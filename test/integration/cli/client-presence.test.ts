/**
 * `skep client status`: a client counts as installed from its own traces —
 * its config directory holding something Skep did not put there, or its program on PATH —
 * never from the directory and config file that registering it made Skep create (the
 * reference's plain `stat` would say "installed" from then on). Real CLI processes on a
 * temporary SKEP_HOME and HOME; the workload is server-everything as a local process.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CLI_ARGS } from '../../helpers/cli.js';
import { tempHome } from '../../helpers/home.js';
import { EVERYTHING_ENTRY } from '../workloads/helpers.js';
import { cleanupFirst } from './cleanup.js';

interface Status {
  client_type: string;
  installed: boolean;
  registered: boolean;
}

test(
  'client status: installed from the client’s own presence, not from files Skep created',
  { timeout: 180_000 },
  (t) => {
    const later = cleanupFirst(t);
    const skep = tempHome(t, 'skep-presence-');
    const home = join(skep.dir, 'user-home');
    const bin = join(skep.dir, 'bin');
    mkdirSync(home);
    mkdirSync(bin);
    // Only this folder and the system's: no client program of this machine is found by accident.
    const path = `${bin}:/usr/bin:/bin`;
    for (const program of ['cursor', 'claude', 'windsurf'])
      assert.equal(existsSync(join('/usr/bin', program)) || existsSync(join('/bin', program)), false);
    const env = {
      ...skep.env,
      HOME: home,
      PATH: path,
      XDG_CONFIG_HOME: '',
      APPDATA: '',
      CODEX_HOME: '',
      SKEP_LOG_LEVEL: 'silent',
    };
    const cli = (...args: string[]) => {
      const r = spawnSync(process.execPath, [...CLI_ARGS, ...args], {
        env,
        encoding: 'utf8',
        timeout: 120_000,
      });
      assert.equal(r.status, 0, `skep ${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    const status = (): Map<string, Status> =>
      new Map(
        (JSON.parse(cli('client', 'status', '--json')) as { clients: Status[] }).clients.map((c) => [
          c.client_type,
          c,
        ]),
      );
    later(() =>
      spawnSync(process.execPath, [...CLI_ARGS, 'rm', '--group', 'default'], { env, timeout: 60_000 }),
    );

    // windsurf is there already: its folder holds its own file.
    mkdirSync(join(home, '.codeium', 'windsurf'), { recursive: true });
    writeFileSync(join(home, '.codeium', 'windsurf', 'installation_id'), 'x');

    let s = status();
    assert.equal(s.get('cursor')?.installed, false);
    assert.equal(s.get('claude-code')?.installed, false);
    assert.equal(s.get('windsurf')?.installed, true);

    // A running workload, so that registering writes entries (and creates the files).
    cli('run', `cmd://${process.execPath}`, '--name', 'everything', '--', EVERYTHING_ENTRY, 'stdio');
    for (const client of ['cursor', 'claude-code', 'windsurf']) cli('client', 'register', client);
    assert.ok(existsSync(join(home, '.cursor', 'mcp.json')), 'Skep wrote cursor’s config');
    assert.ok(existsSync(join(home, '.claude.json')), 'Skep wrote claude-code’s config');
    s = status();
    assert.deepEqual(
      ['cursor', 'claude-code', 'windsurf'].map((c) => [c, s.get(c)?.installed, s.get(c)?.registered]),
      [
        ['cursor', false, true],
        ['claude-code', false, true],
        ['windsurf', true, true],
      ],
    );

    // The clients arrive: Cursor fills its folder, Claude Code's program is on PATH.
    mkdirSync(join(home, '.cursor', 'extensions'));
    writeFileSync(join(bin, 'claude'), '#!/bin/sh\nexit 0\n');
    chmodSync(join(bin, 'claude'), 0o755);
    s = status();
    assert.equal(s.get('cursor')?.installed, true);
    assert.equal(s.get('claude-code')?.installed, true);
    assert.equal(s.get('vscode')?.installed, false);
  },
);
