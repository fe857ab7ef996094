/**
 * `skep secret` through the real CLI and `skep serve` processes on one temp home, with
 * debug logging on; afterwards no secret value appears in any file under SKEP_HOME (state
 * dir, logs, config, data) nor in the server's log output.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { passwordFilePath } from '../../../src/secrets/index.js';
import { runCli, startServe } from '../../helpers/cli.js';
import { tempHome } from '../../helpers/home.js';

function filesContaining(dir: string, needle: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((entry) => {
    const path = join(dir, entry);
    return statSync(path).isFile() && readFileSync(path).includes(needle);
  });
}

test(
  'skep secret setup|set|get|list|rm, the API beside it, and no value left in files or logs',
  {
    timeout: 600_000,
  },
  async (t) => {
    const home = tempHome(t);
    const env: NodeJS.ProcessEnv = { ...home.env, SKEP_LOG_LEVEL: 'debug' };
    delete env['SKEP_SECRETS_PASSWORD'];
    const values = [1, 2, 3].map((i) => `cli-secret-${i}-${randomBytes(10).toString('hex')}`) as [
      string,
      string,
      string,
    ];

    const before = runCli(['secret', 'list'], env);
    assert.equal(before.status, 1);
    assert.match(before.stderr, /skep secret setup/);

    const setup = runCli(['secret', 'setup'], env, '');
    assert.equal(setup.status, 0, setup.stderr);
    assert.match(
      setup.stdout,
      /a strong password was generated and saved to .*secrets-password \(mode 0600\)/,
    );

    // The value comes from stdin; a value on argv is refused (argv is visible in `ps`).
    assert.equal(runCli(['secret', 'set', 'api-key', values[0]], env).status, 2);
    const set1 = runCli(['secret', 'set', 'api-key'], env, `${values[0]}\n`);
    assert.equal(set1.status, 0, set1.stderr);
    assert.match(set1.stdout, /secret api-key created/);
    const set2 = runCli(['secret', 'set', 'api-key'], env, values[1]);
    assert.match(set2.stdout, /secret api-key updated/);
    const got = runCli(['secret', 'get', 'api-key'], env);
    assert.equal(got.stdout, `${values[1]}\n`);
    const listed = runCli(['secret', 'list', '--json'], env);
    assert.deepEqual(JSON.parse(listed.stdout), { keys: [{ key: 'api-key' }] });

    // The API server in another process sees the same store and password.
    const serve = await startServe(t, env, home.config.paths.discoveryFile);
    const post = await fetch(`${serve.url}/api/v1beta/secrets/default/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...serve.auth },
      body: JSON.stringify({ key: 'from-api', value: values[2] }),
    });
    assert.equal(post.status, 201);
    const keys = await (
      await fetch(`${serve.url}/api/v1beta/secrets/default/keys`, { headers: serve.auth })
    ).json();
    assert.deepEqual(keys, { keys: [{ key: 'api-key' }, { key: 'from-api' }] });
    assert.equal(runCli(['secret', 'get', 'from-api'], env).stdout, `${values[2]}\n`);
    assert.equal(await serve.stop(), 0);

    // Wrong password: a clear error, nothing changed.
    const wrong = runCli(['secret', 'get', 'api-key'], { ...env, SKEP_SECRETS_PASSWORD: 'not-the-password' });
    assert.equal(wrong.status, 1);
    assert.match(wrong.stderr, /wrong password/);

    // Changing the password re-encrypts everything; the saved password follows.
    const change = runCli(['secret', 'setup', '--change-password'], env, 'a-brand-new-password\n');
    assert.equal(change.status, 0, change.stderr);
    assert.match(change.stdout, /2 secret\(s\) were re-encrypted/);
    assert.equal(readFileSync(passwordFilePath(home.config.paths), 'utf8').trim(), 'a-brand-new-password');
    assert.equal(runCli(['secret', 'get', 'api-key'], env).stdout, `${values[1]}\n`);

    assert.match(runCli(['secret', 'rm', 'from-api'], env).stdout, /secret from-api deleted/);
    const again = runCli(['secret', 'rm', 'from-api'], env);
    assert.equal(again.status, 1);
    assert.match(again.stderr, /does not exist/);

    // No value anywhere: every file under SKEP_HOME, and the server's debug log output.
    for (const value of values) {
      assert.deepEqual(filesContaining(home.dir, value), [], `value ${values.indexOf(value) + 1} in no file`);
      assert.ok(!serve.stderr().includes(value), 'not in the server log');
    }
    assert.ok(serve.stderr().length > 0, 'the server did log (positive control for the log check)');
  },
);
