/**
 * `skep service install|status|uninstall` on the built CLI, into a throw-away XDG_CONFIG_HOME.
 * PATH is an empty folder, so no systemctl is found and nothing touches this machine's service
 * manager; the unit the command writes is checked by `systemd-analyze verify`.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { findExecutable } from '../../src/shared/index.js';

const BUNDLE = resolve('dist/skep.mjs');

function skep(
  args: string[],
  env: NodeJS.ProcessEnv,
): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, [BUNDLE, ...args], { env, encoding: 'utf8', timeout: 60_000 });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

test('skep service writes a systemd user unit that verifies, reports it, and removes it', (t) => {
  assert.ok(existsSync(BUNDLE), 'run npm run build first');
  const root = mkdtempSync(join(tmpdir(), 'skep-service-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = {
    HOME: join(root, 'home'),
    XDG_CONFIG_HOME: join(root, 'config'),
    SKEP_HOME: join(root, 'skep home'),
    PATH: join(root, 'empty-bin'),
    SKEP_SECRETS_PASSWORD: 'never-in-a-unit',
  };
  const unitFile = join(root, 'config', 'systemd', 'user', 'skep.service');
  mkdirSync(join(root, 'empty-bin'));

  const before = skep(['service', 'status'], env);
  assert.equal(before.status, 0, before.stderr);
  assert.equal(before.stdout.trim(), `not installed (skep service install writes ${unitFile})`);

  const install = skep(['service', 'install'], env);
  assert.equal(install.status, 0, install.stderr);
  assert.match(install.stdout, new RegExp(`^wrote ${unitFile.replace(/[.]/g, '\\.')}\n`));
  assert.match(
    install.stdout,
    /systemctl is not on PATH\nto start it with your session, run:\n {2}systemctl --user daemon-reload\n {2}systemctl --user enable --now skep\.service/,
  );
  const unit = readFileSync(unitFile, 'utf8');
  assert.ok(unit.includes(`ExecStart="${process.execPath}" "${BUNDLE}" "serve"`), unit);
  assert.ok(unit.includes(`Environment="SKEP_HOME=${join(root, 'skep home')}"`), unit);
  assert.ok(!unit.includes('never-in-a-unit'));

  const analyze = findExecutable('systemd-analyze', process.env);
  if (analyze === undefined) {
    if (process.env['CI'] === 'true') assert.fail('systemd-analyze is missing (package systemd)');
    t.diagnostic('SKIPPED systemd-analyze verify: systemd-analyze is not installed');
  } else {
    const verify = spawnSync(analyze, ['verify', unitFile], { encoding: 'utf8' });
    assert.equal(verify.status, 0, verify.stderr);
    // systemd-analyze exits 0 on a bad setting and only warns: no warning either.
    assert.equal(verify.stderr, '');
  }

  const status = skep(['service', 'status', '--json'], env);
  assert.equal(status.status, 0, status.stderr);
  assert.deepEqual(JSON.parse(status.stdout), {
    file: unitFile,
    kind: 'systemd',
    installed: true,
    state: null,
  });

  const uninstall = skep(['service', 'uninstall'], env);
  assert.equal(uninstall.status, 0, uninstall.stderr);
  assert.equal(uninstall.stdout.trim(), `stopped and removed ${unitFile}`);
  assert.ok(!existsSync(unitFile));
  const again = skep(['service', 'uninstall'], env);
  assert.equal(again.stdout.trim(), `no service installed (${unitFile} does not exist)`);
});

// A stand-in systemctl (this machine's real user manager must not be touched by a test): it
// records its arguments and fails `daemon-reload` when asked to.
test('skep service install enables and starts the unit through systemctl --user, and says when that fails', (t) => {
  assert.ok(existsSync(BUNDLE), 'run npm run build first');
  const root = mkdtempSync(join(tmpdir(), 'skep-service-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const bin = join(root, 'bin');
  mkdirSync(bin);
  const calls = join(root, 'calls');
  writeFileSync(
    join(bin, 'systemctl'),
    `#!/bin/sh\necho "$*" >> '${calls}'\nif [ -n "$FAIL_RELOAD" ] && [ "$2" = daemon-reload ]; then echo 'Failed to connect to bus' >&2; exit 1; fi\n[ "$2" = is-enabled ] && echo enabled\n[ "$2" = is-active ] && echo active\nexit 0\n`,
    { mode: 0o755 },
  );
  const env: NodeJS.ProcessEnv = {
    HOME: join(root, 'home'),
    XDG_CONFIG_HOME: join(root, 'config'),
    PATH: `${bin}:/bin:/usr/bin`,
  };
  const unitFile = join(root, 'config', 'systemd', 'user', 'skep.service');

  const failed = skep(['service', 'install'], { ...env, FAIL_RELOAD: '1' });
  assert.equal(failed.status, 0, failed.stderr);
  assert.match(
    failed.stdout,
    /'systemctl --user daemon-reload' failed: Failed to connect to bus\nto start it with your session, run:\n/,
  );
  assert.ok(existsSync(unitFile));

  rmSync(calls, { force: true });
  const install = skep(['service', 'install', '--json'], env);
  assert.equal(install.status, 0, install.stderr);
  assert.deepEqual(JSON.parse(install.stdout), {
    file: unitFile,
    kind: 'systemd',
    activated: true,
    todo: [],
  });
  assert.deepEqual(readFileSync(calls, 'utf8').trim().split('\n'), [
    '--user daemon-reload',
    '--user enable --now skep.service',
  ]);

  const status = skep(['service', 'status'], env);
  assert.match(status.stdout, /^installed: .*\nruns: ".*" ".*skep\.mjs" "serve"\nstate: enabled, active\n$/);

  rmSync(calls, { force: true });
  assert.equal(skep(['service', 'uninstall'], env).status, 0);
  assert.deepEqual(readFileSync(calls, 'utf8').trim().split('\n'), [
    '--user disable --now skep.service',
    '--user daemon-reload',
  ]);
  assert.ok(!existsSync(unitFile));
});
