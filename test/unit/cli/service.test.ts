// `skep service`: where the unit goes, what it runs, what it carries, and how it is quoted.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  renderLaunchdPlist,
  renderSystemdUnit,
  serveCommand,
  serviceTarget,
} from '../../../src/control/cli/actions/service.js';
import { SkepError } from '../../../src/shared/index.js';

test('the unit goes under XDG_CONFIG_HOME on Linux and LaunchAgents on macOS', () => {
  assert.deepEqual(serviceTarget({ HOME: '/home/u', XDG_CONFIG_HOME: '/x/conf' }, 'linux'), {
    kind: 'systemd',
    file: '/x/conf/systemd/user/skep.service',
  });
  assert.deepEqual(serviceTarget({ HOME: '/home/u' }, 'linux'), {
    kind: 'systemd',
    file: '/home/u/.config/systemd/user/skep.service',
  });
  assert.deepEqual(serviceTarget({ HOME: '/Users/u' }, 'darwin'), {
    kind: 'launchd',
    file: '/Users/u/Library/LaunchAgents/dev.skep.serve.plist',
  });
  assert.throws(
    () => serviceTarget({ HOME: 'C:\\u' }, 'win32'),
    (err: unknown) =>
      err instanceof SkepError &&
      /supports Linux \(systemd\) and macOS \(launchd\), not win32/.test(err.message),
  );
});

test('the unit runs the built CLI and carries only the folder variables and PATH', () => {
  const cmd = serveCommand(
    {
      PATH: '/opt/node/bin:/usr/bin',
      SKEP_HOME: '/data/skep',
      XDG_CACHE_HOME: '',
      SKEP_SECRETS_PASSWORD: 'hunter2',
      SKEP_API_TOKEN: 'tok',
      GITHUB_TOKEN: 'ghp_x',
    },
    '/opt/skep/dist/skep.mjs',
  );
  assert.deepEqual(cmd.argv, [process.execPath, '/opt/skep/dist/skep.mjs', 'serve']);
  assert.deepEqual(cmd.env, [
    ['SKEP_HOME', '/data/skep'],
    ['PATH', '/opt/node/bin:/usr/bin'],
  ]);
  const unit = renderSystemdUnit(cmd);
  for (const secret of ['hunter2', 'tok', 'ghp_x']) assert.ok(!unit.includes(secret), secret);
});

test('a service from the TypeScript sources is refused with the way to build', () => {
  assert.throws(
    () => serveCommand({}, '/src/skep/src/control/cli/main.ts'),
    (err: unknown) =>
      err instanceof SkepError &&
      err.message ===
        "a service must run the built CLI, not /src/skep/src/control/cli/main.ts: run 'npm run build', then 'node dist/skep.mjs service install'",
  );
});

test('systemd words are quoted: backslash, quote, % specifiers and $ expansions', () => {
  const unit = renderSystemdUnit({
    argv: ['/usr/bin/node', '/home/a b/50% "x"/$HOME\\skep.mjs', 'serve'],
    env: [['SKEP_HOME', '/tmp/a b%c$d']],
  });
  const lines = unit.split('\n');
  assert.ok(lines.includes('Environment="SKEP_HOME=/tmp/a b%%c$$d"'), unit);
  assert.ok(
    lines.includes('ExecStart="/usr/bin/node" "/home/a b/50%% \\"x\\"/$$HOME\\\\skep.mjs" "serve"'),
    unit,
  );
  assert.ok(lines.includes('WantedBy=default.target'));
  assert.ok(lines.includes('Restart=on-failure'));
});

test('the launchd agent escapes XML and runs at load', () => {
  const plist = renderLaunchdPlist(
    { argv: ['/usr/local/bin/node', '/opt/a&b/<skep>.mjs', 'serve'], env: [['PATH', '/usr/bin']] },
    '/Users/u/Library/Logs/skep-serve.log',
  );
  assert.match(plist, /<string>\/opt\/a&amp;b\/&lt;skep&gt;\.mjs<\/string>/);
  assert.match(plist, /<key>RunAtLoad<\/key>\s*<true\/>/);
  assert.match(plist, /<key>PATH<\/key>\s*<string>\/usr\/bin<\/string>/);
  assert.ok(!plist.includes('<skep>'));
});
