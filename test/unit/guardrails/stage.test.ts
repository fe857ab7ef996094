/**
 * The `guardrails` pipeline stage: built from `guardrails_config` or a `middleware_configs`
 * entry, refused with the field named, absent when disabled, and the own secrets it watches
 * (the run configuration's `secrets`, `header_forward` secret headers, the remote bearer
 * token), resolved from the secrets provider.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planPipeline } from '../../../src/dataplane/pipeline/index.js';
import { guardrailsStage, ownSecretValues } from '../../../src/dataplane/pipeline/stages/guardrails.js';
import { isSkepError, silentLogger } from '../../../src/shared/index.js';
import { parseRunConfig } from '../../../src/workloads/index.js';

const base = { name: 'w', image: 'cmd://x' };
const lookup = async (name: string) =>
  ({ one: 'value-one-123456', two: 'value-two-123456', bearer: 'bearer-abcdefgh' })[name];

test('guardrails_config becomes the guardrails stage; absent: no stage', () => {
  assert.deepEqual(
    planPipeline(parseRunConfig({ ...base, guardrails_config: { enabled: true } })).map((e) => e.type),
    ['guardrails'],
  );
  assert.deepEqual(planPipeline(parseRunConfig(base)), []);
});

test('a bad configuration is refused naming the field; enabled false builds no stage', async () => {
  await assert.rejects(
    guardrailsStage.check?.(
      { config: { credentials: { results: 'hide' } } },
      parseRunConfig(base),
    ) as Promise<void>,
    (err: unknown) =>
      isSkepError(err) && /guardrails_config\.credentials\.results must be one of/.test(err.message),
  );
  await assert.rejects(
    guardrailsStage.check?.({ configuration: {} }, parseRunConfig(base)) as Promise<void>,
    (err: unknown) => isSkepError(err) && /unknown key\(s\) configuration/.test(err.message),
  );
  const config = parseRunConfig(base);
  const deps = { config, logger: silentLogger, secretLookup: lookup };
  assert.equal(await guardrailsStage.create({ config: { enabled: false } }, deps), undefined);
  const stage = await guardrailsStage.create({ config: {} }, deps);
  assert.equal(stage?.name, 'guardrails');
});

test('the own secrets: injected secrets, header_forward secrets and the remote bearer token', async () => {
  const config = parseRunConfig({
    ...base,
    secrets: ['one,target=ONE'],
    header_forward: { add_headers_from_secret: { 'x-api-key': 'two' } },
    remote_auth_config: { bearer_token: 'bearer,target=bearer_token' },
  });
  const values = await ownSecretValues(config, { config, logger: silentLogger, secretLookup: lookup });
  assert.deepEqual([...values.keys()].sort(), ['one', 'remote_auth_config.bearer_token', 'two']);
  assert.equal(values.get('two'), 'value-two-123456');
});
