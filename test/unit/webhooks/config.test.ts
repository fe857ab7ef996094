import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { goDurationNs, isSkepError } from '../../../src/shared/index.js';
import { parseRunConfig } from '../../../src/workloads/index.js';
import {
  parseWebhookList,
  parseWebhookStageConfig,
  parseWebhookTimeout,
} from '../../../src/dataplane/middleware/webhooks/index.js';
import { TEST_CERT, TEST_KEY } from '../../fixtures/tls-self-signed.js';

const noSecrets = async (): Promise<string | undefined> => undefined;

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'skep-webhook-config-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const base = { name: 'policy', url: 'https://hooks.example/validate', failure_policy: 'fail' };

/** Asserts an invalid_config whose message names the webhook and contains every `parts`. */
async function rejects(entry: unknown, ...parts: string[]): Promise<void> {
  await assert.rejects(parseWebhookList([entry], 'validating', noSecrets), (err) => {
    assert.ok(isSkepError(err), String(err));
    assert.equal(err.code, 'invalid_config');
    for (const part of parts) assert.ok(err.message.includes(part), `"${err.message}" lacks "${part}"`);
    return true;
  });
}

test('timeout: Go duration strings and integer nanoseconds', () => {
  assert.equal(parseWebhookTimeout('5s'), 5000);
  assert.equal(parseWebhookTimeout('0.5m'), 30_000);
  assert.equal(parseWebhookTimeout('1500ms'), 1500);
  assert.equal(parseWebhookTimeout('1.5s'), 1500);
  assert.equal(parseWebhookTimeout('2s500ms'), 2500);
  assert.equal(parseWebhookTimeout(10_000_000_000), 10_000);
  assert.equal(goDurationNs('1h2m3.5s'), 3_723_500_000_000);
  assert.equal(goDurationNs('250us'), 250_000);
  assert.equal(goDurationNs('5'), undefined);
  assert.equal(goDurationNs('5 s'), undefined);
});

test('timeout: missing, null or 0 means 10 s', () => {
  for (const value of [undefined, null, 0, '0', '0s']) assert.equal(parseWebhookTimeout(value), 10_000);
});

test('timeout: bounds 1 s to 30 s, and nothing that is not a duration', () => {
  assert.equal(parseWebhookTimeout('1s'), 1000);
  assert.equal(parseWebhookTimeout('30s'), 30_000);
  for (const value of ['999ms', '31s', '1h', 500_000_000, 31_000_000_000])
    assert.throws(() => parseWebhookTimeout(value), /out of range: use 1s to 30s/);
  assert.throws(() => parseWebhookTimeout('-5s'), /must not be negative/);
  assert.throws(() => parseWebhookTimeout('soon'), /not a duration/);
  assert.throws(() => parseWebhookTimeout(1.5e9 + 0.5), /not an integer number of nanoseconds/);
  assert.throws(() => parseWebhookTimeout(true), /duration string/);
});

test('a valid entry becomes a frozen typed config', async () => {
  const [config] = await parseWebhookList([{ ...base, timeout: '5s' }], 'validating', noSecrets);
  assert.ok(config !== undefined);
  assert.equal(config.name, 'policy');
  assert.equal(config.url.href, 'https://hooks.example/validate');
  assert.equal(config.timeoutMs, 5000);
  assert.equal(config.failurePolicy, 'fail');
  assert.equal(config.tls, undefined);
  assert.equal(config.hmac, undefined);
  assert.ok(Object.isFrozen(config));
});

test('each entry error is an invalid_config naming the list, the webhook and the field', async () => {
  await rejects({ ...base, name: '' }, 'validating_webhooks[0].name is required');
  await rejects({ url: base.url, failure_policy: 'fail' }, 'validating_webhooks[0].name');
  await rejects({ ...base, url: undefined }, 'validating_webhooks[0] "policy"', 'url is required');
  await rejects({ ...base, url: 'not a url' }, '"policy"', 'not an absolute URL');
  await rejects({ ...base, url: 'ftp://hooks.example/' }, '"policy"', 'url must be https');
  await rejects({ ...base, url: 'http://hooks.example/' }, '"policy"', 'insecure_skip_verify');
  await rejects({ ...base, url: 'https://u:p@hooks.example/' }, '"policy"', 'credentials');
  await rejects({ ...base, failure_policy: undefined }, '"policy"', 'failure_policy is required');
  await rejects({ ...base, failure_policy: 'Fail' }, '"policy"', 'failure_policy must be "fail" or "ignore"');
  await rejects({ ...base, timeout: '45s' }, '"policy"', 'timeout 45s is out of range');
  await rejects({ ...base, failure_polcy: 'fail' }, '"policy"', 'failure_polcy is not a webhook field');
  await rejects({ ...base, tls_config: 'yes' }, '"policy"', 'tls_config must be an object');
  await rejects({ ...base, tls_config: { verify: false } }, '"policy"', 'tls_config.verify is not a field');
  await rejects(
    { ...base, tls_config: { insecure_skip_verify: 'yes' } },
    'insecure_skip_verify must be true or false',
  );
  await rejects({ ...base, hmac_secret_ref: '' }, '"policy"', 'hmac_secret_ref must be');
  await rejects('policy', 'validating_webhooks[0] must be an object');
});

test('http is allowed with insecure_skip_verify (the reference rule)', async () => {
  const [config] = await parseWebhookList(
    [{ ...base, url: 'http://127.0.0.1:9/x', tls_config: { insecure_skip_verify: true } }],
    'mutating',
    noSecrets,
  );
  assert.equal(config?.url.protocol, 'http:');
  assert.equal(config?.tls?.insecureSkipVerify, true);
  assert.equal(config?.kind, 'mutating');
});

test('the list must be non-empty and names unique', async () => {
  await assert.rejects(
    parseWebhookList([], 'mutating', noSecrets),
    /mutating_webhooks must be a non-empty list/,
  );
  await assert.rejects(
    parseWebhookList([base, { ...base, url: 'https://other.example/' }], 'validating', noSecrets),
    /validating_webhooks\[1\] "policy": the name is used twice/,
  );
});

test('tls_config: files must exist, be PEM, and cert and key go together', async (t) => {
  const dir = tempDir(t);
  const [cert, key] = [TEST_CERT, TEST_KEY];
  const certFile = join(dir, 'tls.crt');
  const keyFile = join(dir, 'tls.key');
  const junk = join(dir, 'junk.pem');
  writeFileSync(certFile, cert);
  writeFileSync(keyFile, key);
  writeFileSync(junk, 'not a certificate');
  await rejects(
    { ...base, tls_config: { ca_bundle_path: join(dir, 'missing.crt') } },
    'tls_config.ca_bundle_path',
    'does not exist',
  );
  await rejects(
    { ...base, tls_config: { ca_bundle_path: dir } },
    'tls_config.ca_bundle_path',
    'is not a file',
  );
  await rejects({ ...base, tls_config: { ca_bundle_path: junk } }, 'tls_config.ca_bundle_path');
  await rejects({ ...base, tls_config: { client_cert_path: certFile } }, 'set both or neither');
  await rejects({ ...base, tls_config: { client_key_path: keyFile } }, 'set both or neither');
  await rejects(
    { ...base, tls_config: { client_cert_path: certFile, client_key_path: junk } },
    'client_cert_path/client_key_path',
  );
  const [config] = await parseWebhookList(
    [
      {
        ...base,
        tls_config: { ca_bundle_path: certFile, client_cert_path: certFile, client_key_path: keyFile },
      },
    ],
    'validating',
    noSecrets,
  );
  assert.equal(config?.tls?.ca, cert);
  assert.equal(config?.tls?.cert, cert);
  assert.equal(config?.tls?.key, key);
  assert.equal(config?.tls?.insecureSkipVerify, false);
});

test('hmac_secret_ref: a store name (also name,target=X) is resolved once; missing or empty is an error', async () => {
  const asked: string[] = [];
  const lookup = async (name: string): Promise<string | undefined> => {
    asked.push(name);
    return { 'hook-key': 's3cret', blank: '' }[name];
  };
  const [byName] = await parseWebhookList([{ ...base, hmac_secret_ref: 'hook-key' }], 'validating', lookup);
  assert.deepEqual(byName?.hmac, { kind: 'value', key: Buffer.from('s3cret') });
  const [byRef] = await parseWebhookList(
    [{ ...base, hmac_secret_ref: 'hook-key,target=HOOK' }],
    'validating',
    lookup,
  );
  assert.deepEqual(byRef?.hmac, { kind: 'value', key: Buffer.from('s3cret') });
  assert.deepEqual(asked, ['hook-key', 'hook-key']);
  await assert.rejects(
    parseWebhookList([{ ...base, hmac_secret_ref: 'nope' }], 'validating', lookup),
    (err) =>
      isSkepError(err) &&
      err.code === 'invalid_config' &&
      /"policy": hmac_secret_ref: secret 'nope' is not in the secrets provider/.test(err.message),
  );
  await assert.rejects(
    parseWebhookList([{ ...base, hmac_secret_ref: 'blank' }], 'validating', lookup),
    /hmac_secret_ref: secret 'blank' is empty/,
  );
  const failing = async (): Promise<string | undefined> => {
    throw new Error('provider locked');
  };
  await assert.rejects(
    parseWebhookList([{ ...base, hmac_secret_ref: 'hook-key' }], 'validating', failing),
    /cannot read secret 'hook-key'.*provider locked/,
  );
});

test('hmac_secret_ref: an absolute path is a file, which must exist and not be empty', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'hmac');
  writeFileSync(file, 'k');
  const [config] = await parseWebhookList([{ ...base, hmac_secret_ref: file }], 'validating', noSecrets);
  assert.deepEqual(config?.hmac, { kind: 'file', path: file });
  await rejects(
    { ...base, hmac_secret_ref: join(dir, 'missing') },
    'hmac_secret_ref: cannot read the file',
    'ENOENT',
  );
  writeFileSync(join(dir, 'empty'), '');
  await rejects({ ...base, hmac_secret_ref: join(dir, 'empty') }, 'hmac_secret_ref: the file', 'is empty');
});

test('stage parameters: {webhooks, server_name, transport}; unknown keys and wrong types refused', async () => {
  const config = await parseWebhookStageConfig(
    { webhooks: [base], server_name: 'github', transport: 'stdio' },
    'validating',
    noSecrets,
  );
  assert.equal(config.serverName, 'github');
  assert.equal(config.transport, 'stdio');
  assert.equal(config.webhooks.length, 1);
  const bare = await parseWebhookStageConfig({ webhooks: [base] }, 'mutating', noSecrets);
  assert.equal(bare.serverName, undefined);
  assert.equal(bare.transport, undefined);
  await assert.rejects(
    parseWebhookStageConfig([base], 'validating', noSecrets),
    /validating-webhook parameters must be an object/,
  );
  await assert.rejects(
    parseWebhookStageConfig({ webhooks: [base], hooks: [] }, 'validating', noSecrets),
    /validating-webhook parameters: hooks is not a field/,
  );
  await assert.rejects(
    parseWebhookStageConfig({ webhooks: [base], server_name: 3 }, 'mutating', noSecrets),
    /mutating-webhook parameters: server_name must be a string/,
  );
  await assert.rejects(
    parseWebhookStageConfig({}, 'mutating', noSecrets),
    /mutating_webhooks must be a non-empty list/,
  );
});

test('run-config schema: timeout as integer ns or duration string; unknown webhook keys refused at create', () => {
  const withHook = (hook: Record<string, unknown>) =>
    parseRunConfig({ name: 'x', image: 'npx://x', validating_webhooks: [{ ...base, ...hook }] });
  assert.equal(withHook({ timeout: '5s' }).validating_webhooks?.[0]?.timeout, '5s');
  assert.equal(withHook({ timeout: 5_000_000_000 }).validating_webhooks?.[0]?.timeout, 5_000_000_000);
  for (const [hook, field] of [
    [{ colour: 'red' }, 'validating_webhooks.0.colour'],
    [{ tls_config: { verify: false } }, 'validating_webhooks.0.tls_config.verify'],
    [{ timeout: 1.5 }, 'validating_webhooks.0.timeout'],
  ] as const)
    assert.throws(
      () => withHook(hook),
      (err) => isSkepError(err) && err.code === 'bad_request' && err.message.includes(field),
    );
});

test('null timeout, tls_config and hmac_secret_ref (how ToolHive writes unset) read as absent', async () => {
  const [config] = await parseWebhookList(
    [{ ...base, timeout: null, tls_config: null, hmac_secret_ref: null }],
    'validating',
    noSecrets,
  );
  assert.equal(config?.timeoutMs, 10_000);
  assert.equal(config?.tls, undefined);
  assert.equal(config?.hmac, undefined);
  // Elsewhere null is a mistake that names the field.
  await rejects({ ...base, url: null }, '"policy": url is required');
  await rejects(
    { ...base, tls_config: { insecure_skip_verify: null } },
    'insecure_skip_verify must be true or false',
  );
});

test('the name labels every message, so an entry without one is told that first', async () => {
  await rejects(
    { url: 'ftp://x/', colour: 'red' },
    'validating_webhooks[0].name is required: give the webhook a name',
  );
  await rejects({ ...base, name: '  ', colour: 'red' }, 'validating_webhooks[0].name is required');
  // The second entry's mistake names its index.
  await assert.rejects(
    parseWebhookList([base, { ...base, name: 'other', timeout: true }], 'validating', noSecrets),
    (err) =>
      isSkepError(err) &&
      err.code === 'invalid_config' &&
      err.message ===
        'validating_webhooks[1] "other": timeout must be a duration string ("5s") or an integer number of nanoseconds',
  );
  await rejects(
    { ...base, failure_policy: 'deny' },
    'validating_webhooks[0] "policy": failure_policy must be "fail" or "ignore" (got "deny")',
  );
  await rejects(
    { ...base, tls_config: { verify: false } },
    'validating_webhooks[0] "policy": tls_config.verify is not a field (use ca_bundle_path, client_cert_path, client_key_path, insecure_skip_verify)',
  );
});
