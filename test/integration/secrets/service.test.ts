import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { type TestContext, test } from 'node:test';
import {
  createSecretLookup,
  PASSWORD_ENV,
  passwordFilePath,
  SecretsService,
  secretServiceKeyring,
} from '../../../src/secrets/index.js';
import { SkepError } from '../../../src/shared/index.js';
import { openStore, readSetting } from '../../../src/store/index.js';
import { tempHome } from '../../helpers/home.js';
import { fakeOp, fakeSecretTool } from './fakes.js';

/** No keyring and no inherited SKEP_* variables unless a test adds them. */
const BASE_ENV: NodeJS.ProcessEnv = { PATH: '/nonexistent-bin' };

function service(t: TestContext, env: NodeJS.ProcessEnv = BASE_ENV) {
  const home = tempHome(t);
  const store = openStore(home.config.paths.databaseFile);
  const make = (e: NodeJS.ProcessEnv = env) => {
    const s = new SecretsService({ store, paths: home.config.paths, env: e });
    t.after(() => s.close());
    return s;
  };
  t.after(() => store.close());
  return { home, store, paths: home.config.paths, secrets: make(), make };
}

const code = (c: string) => (err: unknown) => err instanceof SkepError && err.code === c;

test('no provider set up: every operation is secrets_not_setup (404) with a how-to message', async (t) => {
  const { secrets } = service(t);
  assert.throws(
    () => secrets.details(),
    (err: unknown) => {
      assert.ok(err instanceof SkepError);
      assert.equal(err.status, 404);
      assert.match(err.message, /skep secret setup/);
      assert.match(err.message, /POST \/api\/v1beta\/secrets/);
      return true;
    },
  );
  await assert.rejects(secrets.listKeys(), code('secrets_not_setup'));
  await assert.rejects(secrets.create('a', 'b'), code('secrets_not_setup'));
  await assert.rejects(secrets.get('a'), code('secrets_not_setup'));
});

test('setup without a password and no keyring: generates one into a 0600 file beside the config, and says so', async (t) => {
  const { secrets, paths, store } = service(t);
  const result = await secrets.setup({ provider_type: 'encrypted' });
  assert.equal(result.provider_type, 'encrypted');
  const file = passwordFilePath(paths);
  assert.match(result.message, /^Secrets provider setup successfully/);
  assert.ok(
    result.message.includes(`a strong password was generated and saved to ${file} (mode 0600)`),
    result.message,
  );
  assert.match(
    result.message,
    /no OS keyring is usable here \(`secret-tool` \(libsecret\) is not installed\)/,
  );
  assert.equal(statSync(file).mode & 0o777, 0o600);
  const password = readFileSync(file, 'utf8').trim();
  assert.ok(password.length >= 43, 'at least 256 bits, base64url');
  assert.ok(!result.message.includes(password), 'the password itself is never echoed');
  assert.deepEqual(readSetting(store, 'secrets.provider'), {
    provider_type: 'encrypted',
    setup_completed: true,
  });
  assert.deepEqual(secrets.details(), {
    name: 'default',
    provider_type: 'encrypted',
    capabilities: { can_read: true, can_write: true, can_delete: true, can_list: true, can_cleanup: true },
  });
  await secrets.create('k', 'v');
  const again = await secrets.setup({ provider_type: 'encrypted' });
  assert.match(again.message, /^Secrets provider reconfigured successfully; using the saved password/);
  assert.equal(readFileSync(file, 'utf8').trim(), password, 'the saved password is kept');
  assert.equal(await secrets.get('k'), 'v');
});

test('SKEP_SECRETS_PASSWORD always wins: nothing is saved, and a different setup password is refused', async (t) => {
  const env = { ...BASE_ENV, [PASSWORD_ENV]: 'password-from-env' };
  const { secrets, paths, make } = service(t, env);
  const result = await secrets.setup({ provider_type: 'encrypted' });
  assert.match(result.message, /the password comes from SKEP_SECRETS_PASSWORD/);
  assert.equal(existsSync(passwordFilePath(paths)), false);
  await secrets.create('k', 'v');
  await assert.rejects(
    secrets.setup({ provider_type: 'encrypted', password: 'something-else' }),
    code('secrets_password_from_env'),
  );
  await assert.rejects(
    secrets.setup({ provider_type: 'encrypted', new_password: 'new-password-1' }),
    code('secrets_password_from_env'),
  );
  // A process with another password in the environment cannot open the store.
  const other = make({ ...BASE_ENV, [PASSWORD_ENV]: 'another-password' });
  await assert.rejects(other.get('k'), code('secrets_locked'));
});

test('setup with a wrong password for an existing store: secrets_locked, nothing changes', async (t) => {
  const { secrets, paths, store } = service(t);
  await secrets.setup({ provider_type: 'encrypted', password: 'first-password' });
  await secrets.create('k', 'v');
  await secrets.setup({ provider_type: 'environment' });
  const fileBefore = readFileSync(secrets.secretsFile);
  const pwBefore = readFileSync(passwordFilePath(paths));
  await assert.rejects(
    secrets.setup({ provider_type: 'encrypted', password: 'wrong-password' }),
    code('secrets_locked'),
  );
  assert.deepEqual(readFileSync(secrets.secretsFile), fileBefore);
  assert.deepEqual(readFileSync(passwordFilePath(paths)), pwBefore);
  assert.deepEqual(readSetting(store, 'secrets.provider'), {
    provider_type: 'environment',
    setup_completed: true,
  });
});

test('password change through setup re-encrypts every secret and saves the new password', async (t) => {
  const { secrets, paths, make } = service(t);
  await secrets.setup({ provider_type: 'encrypted', password: 'first-password' });
  for (let i = 0; i < 3; i++) await secrets.create(`k${i}`, `v${i}`);
  await assert.rejects(
    secrets.setup({
      provider_type: 'encrypted',
      password: 'not-the-password',
      new_password: 'second-password',
    }),
    code('secrets_locked'),
  );
  await assert.rejects(
    secrets.setup({ provider_type: 'encrypted', new_password: 'short' }),
    code('bad_request'),
  );
  const result = await secrets.setup({ provider_type: 'encrypted', new_password: 'second-password' });
  assert.match(result.message, /3 secret\(s\) were re-encrypted under the new password/);
  assert.equal(readFileSync(passwordFilePath(paths), 'utf8').trim(), 'second-password');
  const fresh = make();
  for (let i = 0; i < 3; i++) assert.equal(await fresh.get(`k${i}`), `v${i}`);
  await assert.rejects(
    make({ ...BASE_ENV, [PASSWORD_ENV]: 'first-password' }).get('k0'),
    code('secrets_locked'),
  );
});

test('a password file readable by others is refused with a chmod hint', async (t) => {
  const { secrets, paths, make } = service(t);
  await secrets.setup({ provider_type: 'encrypted' });
  chmodSync(passwordFilePath(paths), 0o644);
  await assert.rejects(make().get('x'), (err: unknown) => {
    assert.ok(err instanceof SkepError);
    assert.equal(err.code, 'secrets_locked');
    assert.match(err.message, /chmod 600/);
    return true;
  });
});

test('setup validation: empty or unknown provider type, password on a non-encrypted provider, short new password', async (t) => {
  const { secrets } = service(t);
  await assert.rejects(secrets.setup({ provider_type: '' }), /provider type cannot be empty/);
  await assert.rejects(
    secrets.setup({ provider_type: 'vault' }),
    /invalid secrets provider type: vault \(valid types: encrypted, 1password, environment\)/,
  );
  await assert.rejects(
    secrets.setup({ provider_type: 'environment', password: 'x' }),
    code('invalid_config'),
  );
  await assert.rejects(
    secrets.setup({ provider_type: 'environment', save_password: true }),
    code('invalid_config'),
  );
  await assert.rejects(secrets.setup({ provider_type: 'vault' }), code('invalid_config'));
  await assert.rejects(secrets.setup({ provider_type: 'encrypted', password: 'short' }), code('bad_request'));
  await assert.rejects(secrets.setup({ provider_type: 'encrypted', password: '' }), code('bad_request'));
  assert.throws(() => secrets.details(), code('secrets_not_setup'), 'a failed setup records nothing');
});

test('key names: empty, commas and control characters are refused before anything is written', async (t) => {
  const { secrets } = service(t);
  await secrets.setup({ provider_type: 'encrypted' });
  for (const bad of ['', 'a,b', 'line\nbreak', 'x'.repeat(257)]) {
    await assert.rejects(secrets.create(bad, 'v'), code('invalid_name'), JSON.stringify(bad));
  }
  await assert.rejects(secrets.create('ok', ''), code('bad_request'));
  assert.deepEqual(await secrets.listKeys(), []);
});

test('environment provider through the service: reads, refuses writes and listing with 405', async (t) => {
  const { secrets } = service(t, { ...BASE_ENV, SKEP_SECRET_API_KEY: 'env-value' });
  await secrets.setup({ provider_type: 'environment' });
  assert.equal(await secrets.get('api-key'), 'env-value');
  assert.equal(secrets.details().capabilities.can_write, false);
  for (const op of [
    secrets.listKeys(),
    secrets.create('a', 'b'),
    secrets.update('a', 'b'),
    secrets.delete('a'),
  ]) {
    await assert.rejects(op, (err: unknown) => err instanceof SkepError && err.status === 405);
  }
});

test('1password setup: refused with the install hint when op is missing; works with a fake op on PATH', async (t) => {
  const { secrets, make } = service(t);
  await assert.rejects(secrets.setup({ provider_type: '1password' }), (err: unknown) => {
    assert.ok(err instanceof SkepError);
    assert.equal(err.code, 'secrets_provider_unavailable');
    assert.match(err.message, /`op`\) is not installed/);
    return true;
  });
  const withOp = make({ PATH: fakeOp(t), OP_SERVICE_ACCOUNT_TOKEN: 'fake-token' });
  await withOp.setup({ provider_type: '1password' });
  assert.equal(await withOp.get('op://vlt1/itm1/fld1'), 'ghp_from_1password');
  assert.equal((await withOp.listKeys()).length, 2);
  await assert.rejects(withOp.create('op://vlt1/itm1/x', 'v'), code('secrets_read_only'));
});

test('OS keyring: not usable here is detected cleanly (no secret-tool / no D-Bus session)', async (t) => {
  const none = await secretServiceKeyring({ PATH: '/nonexistent-bin' }).probe();
  assert.deepEqual(none, { usable: false, reason: '`secret-tool` (libsecret) is not installed' });
  const noBus = await secretServiceKeyring({ PATH: fakeSecretTool(t) }).probe();
  assert.equal(noBus.usable, false);
  assert.match((noBus as { reason: string }).reason, /D-Bus/);
});

test('OS keyring when usable: setup keeps the generated password there, not in a file (fake secret-tool stands in)', async (t) => {
  const env = { PATH: fakeSecretTool(t), DBUS_SESSION_BUS_ADDRESS: 'unix:path=/fake-bus' };
  const { secrets, paths, make } = service(t, env);
  const result = await secrets.setup({ provider_type: 'encrypted' });
  assert.match(result.message, /a strong password was generated and saved in the OS keyring/);
  assert.equal(existsSync(passwordFilePath(paths)), false);
  await secrets.create('k', 'v');
  assert.equal(await make().get('k'), 'v');
});

test('createSecretLookup reads the provider choice and password saved by setup', async (t) => {
  const { secrets, store, paths } = service(t);
  await secrets.setup({ provider_type: 'encrypted' });
  await secrets.create('token', 'looked-up');
  const lookup = createSecretLookup({ store, paths, env: BASE_ENV });
  assert.equal(await lookup('token'), 'looked-up');
  assert.equal(await lookup('missing'), undefined);
});

test('a password file written by hand with a trailing newline works', async (t) => {
  const { secrets, paths } = service(t);
  mkdirSync(paths.configDir, { recursive: true });
  writeFileSync(passwordFilePath(paths), 'hand-written-password\n', { mode: 0o600 });
  const result = await secrets.setup({ provider_type: 'encrypted' });
  assert.match(result.message, /using the saved password/);
  await secrets.create('k', 'v');
  assert.equal(await secrets.get('k'), 'v');
});

test('save_password false: a given password opens or creates the store and is written nowhere; a generated one is always saved', async (t) => {
  const { secrets, paths, make } = service(t);
  assert.deepEqual(await secrets.encryptedState(), { exists: false, saved: undefined });
  const result = await secrets.setup({
    provider_type: 'encrypted',
    password: 'kept-in-my-head-1',
    save_password: false,
  });
  assert.match(result.message, /the password was not saved anywhere/);
  assert.equal(existsSync(passwordFilePath(paths)), false);
  assert.deepEqual(await secrets.encryptedState(), { exists: true, saved: undefined });
  // Another process opens it with the password in the environment only.
  const other = make({ ...BASE_ENV, [PASSWORD_ENV]: 'kept-in-my-head-1' });
  await other.create('k', 'v');
  assert.equal(await other.get('k'), 'v');
  // Saved on request; then setup needs no password and says where it is.
  const saved = await secrets.setup({ provider_type: 'encrypted', password: 'kept-in-my-head-1' });
  assert.match(saved.message, /the password was saved to .*secrets-password \(mode 0600\)/);
  assert.deepEqual(await secrets.encryptedState(), { exists: true, saved: 'file' });

  const fresh = service(t);
  const generated = await fresh.secrets.setup({ provider_type: 'encrypted', save_password: false });
  assert.match(generated.message, /a strong password was generated and saved/);
  assert.equal(existsSync(passwordFilePath(fresh.paths)), true);
});
