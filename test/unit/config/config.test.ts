import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseConfig, resolvePaths } from '../../../src/config/index.js';
import { SkepError } from '../../../src/shared/index.js';

test('an empty config takes every default', () => {
  const config = parseConfig('');
  assert.equal(config.server.host, '127.0.0.1');
  assert.equal(config.server.port, 8080);
  assert.equal(config.runtime.type, 'auto');
  assert.equal(config.workloads.port_range_start, 20000);
});

test('a bad config names the field and the file', () => {
  assert.throws(
    () => parseConfig('server:\n  port: 99999\n', '/etc/skep.yaml'),
    (err: unknown) =>
      err instanceof SkepError && /\/etc\/skep\.yaml/.test(err.message) && /server\.port/.test(err.message),
  );
  assert.throws(() => parseConfig('server:\n  prot: 1\n'), /server\.prot: is not a known field/);
  assert.throws(() => parseConfig('runtime: { type: vm }'), /runtime\.type/);
  assert.throws(() => parseConfig('server: [unclosed'), /not valid YAML/);
});

test('SKEP_HOME moves every directory', () => {
  const paths = resolvePaths({ SKEP_HOME: '/tmp/h', HOME: '/home/u' }, 'linux');
  assert.equal(paths.configFile, '/tmp/h/config/config.yaml');
  assert.equal(paths.databaseFile, '/tmp/h/state/skep.db');
  assert.equal(paths.discoveryFile, '/tmp/h/state/server/server.json');
  assert.equal(paths.apiTokenFile, '/tmp/h/state/api-token');
  assert.equal(paths.logsDir, '/tmp/h/data/logs');
});

test('XDG variables and their Linux defaults', () => {
  const defaults = resolvePaths({ HOME: '/home/u' }, 'linux');
  assert.equal(defaults.configDir, '/home/u/.config/skep');
  assert.equal(defaults.stateDir, '/home/u/.local/state/skep');
  assert.equal(defaults.dataDir, '/home/u/.local/share/skep');
  assert.equal(defaults.cacheDir, '/home/u/.cache/skep');
  const xdg = resolvePaths({ HOME: '/home/u', XDG_STATE_HOME: '/s', XDG_CONFIG_HOME: '/c' }, 'linux');
  assert.equal(xdg.stateDir, '/s/skep');
  assert.equal(xdg.configDir, '/c/skep');
});

test('macOS defaults to Application Support', () => {
  const mac = resolvePaths({ HOME: '/Users/u' }, 'darwin');
  assert.equal(mac.configDir, '/Users/u/Library/Application Support/skep');
  assert.equal(mac.cacheDir, '/Users/u/Library/Caches/skep');
});

test('a config mistake is invalid_config, every bad field listed; defaults fill what is missing', () => {
  assert.throws(
    () => parseConfig('server:\n  port: -1\n  prot: 1\nruntime:\n  sandbox: maybe\n', 'c.yaml'),
    (err: unknown) => {
      assert.ok(err instanceof SkepError);
      assert.equal(err.code, 'invalid_config');
      assert.match(err.message, /^invalid c\.yaml: /);
      assert.match(err.message, /server\.prot: is not a known field/);
      assert.match(err.message, /server\.port: must be >= 0/);
      assert.match(err.message, /runtime\.sandbox: must match pattern/);
      return true;
    },
  );
  assert.throws(
    () => parseConfig('a: [', 'c.yaml'),
    (err: unknown) => {
      assert.ok(err instanceof SkepError);
      assert.equal(err.code, 'invalid_config');
      return true;
    },
  );
  const config = parseConfig('server:\n  port: 9000\nworkloads: {}\n');
  assert.equal(config.server.port, 9000);
  assert.equal(config.server.host, '127.0.0.1');
  assert.deepEqual(config.server.allowed_hosts, []);
  assert.equal(config.workloads.log_files, 3);
  assert.equal(config.runtime.allow_privileged, false);
});
