import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SERVER_ENV_ALLOWLIST, serverEnvironment } from '../../../src/dataplane/runtime/index.js';

const SKEP_ENV = {
  PATH: '/usr/bin:/bin',
  HOME: '/home/u',
  USER: 'u',
  LANG: 'C.UTF-8',
  LC_ALL: 'C.UTF-8',
  LC_TIME: 'en_GB.UTF-8',
  TZ: 'UTC',
  TMPDIR: '/tmp',
  HTTPS_PROXY: 'http://proxy:3128',
  no_proxy: 'localhost',
  npm_config_cache: '/home/u/.npm',
  UV_CACHE_DIR: '/home/u/.cache/uv',
  SKEP_SECRETS_PASSWORD: 'master-password',
  SKEP_API_TOKEN: 'api-token',
  SKEP_RUNNER_CONFIG: '{}',
  SKEP_SECRET_GITHUB: 'ghp_x',
  AWS_SECRET_ACCESS_KEY: 'aws-secret',
  AWS_ACCESS_KEY_ID: 'AKIA',
  GITHUB_TOKEN: 'ghp_y',
  OPENAI_API_KEY: 'sk-z',
  DB_SECRET: 's',
  npm_config__authToken: 'npm-token',
  'npm_config_//registry.npmjs.org/:_authToken': 'npm-token',
  UV_PUBLISH_TOKEN: 'pypi-token',
  NODE_OPTIONS: '--require /tmp/evil.js',
  TERM: 'xterm',
  XDG_RUNTIME_DIR: '/run/user/1000',
};

test('a server inherits only allow-listed variables of Skep’s environment', () => {
  const env = serverEnvironment(SKEP_ENV, {}, 'linux');
  assert.deepEqual(Object.keys(env).sort(), [
    'HOME',
    'HTTPS_PROXY',
    'LANG',
    'LC_ALL',
    'LC_TIME',
    'PATH',
    'TMPDIR',
    'TZ',
    'USER',
    'UV_CACHE_DIR',
    'no_proxy',
    'npm_config_cache',
  ]);
});

test('what the run configuration names is passed, even a credential, and wins', () => {
  const env = serverEnvironment(
    SKEP_ENV,
    { GITHUB_TOKEN: 'from-config', PATH: '/opt/bin', CUSTOM: 'x' },
    'linux',
  );
  assert.equal(env['GITHUB_TOKEN'], 'from-config');
  assert.equal(env['PATH'], '/opt/bin');
  assert.equal(env['CUSTOM'], 'x');
  assert.equal(env['AWS_SECRET_ACCESS_KEY'], undefined);
});

test('the allow-list names no Skep variable and no credential-shaped name', () => {
  for (const name of SERVER_ENV_ALLOWLIST) {
    assert.doesNotMatch(name, /^SKEP_/i, name);
    assert.doesNotMatch(name, /(TOKEN|_KEY|SECRET|PASSWORD|AUTH)/i, name);
    assert.doesNotMatch(name, /^AWS_/i, name);
  }
});

test('Windows names are matched without regard to case (Path, SystemRoot)', () => {
  const env = serverEnvironment(
    { Path: 'C:\\bin', SystemRoot: 'C:\\Windows', Skep_Api_Token: 't' },
    {},
    'win32',
  );
  assert.deepEqual(env, { Path: 'C:\\bin', SystemRoot: 'C:\\Windows' });
  // POSIX names are case-sensitive: `Path` is not `PATH` there.
  assert.deepEqual(serverEnvironment({ Path: '/x' }, {}, 'linux'), {});
});
