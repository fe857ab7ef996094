import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  mutatingWebhookStage,
  validatingWebhookStage,
} from '../../../../src/dataplane/pipeline/stages/webhooks.js';
import { newRequestContext } from '../../../../src/dataplane/proxy/index.js';
import { silentLogger } from '../../../../src/shared/index.js';
import { parseRunConfig } from '../../../../src/workloads/index.js';

const hook = { name: 'h', url: 'https://hooks.invalid/x', failure_policy: 'fail' };

test('fromRunConfig: parameters {webhooks, server_name, transport} only when the list is non-empty', () => {
  const config = parseRunConfig({
    name: 'github',
    image: 'npx://x',
    transport: 'stdio',
    validating_webhooks: [hook],
    mutating_webhooks: [],
  });
  assert.deepEqual(validatingWebhookStage.fromRunConfig?.(config), {
    webhooks: [hook],
    server_name: 'github',
    transport: 'stdio',
  });
  assert.equal(mutatingWebhookStage.fromRunConfig?.(config), undefined);
  assert.equal(
    mutatingWebhookStage.fromRunConfig?.(parseRunConfig({ name: 'g', image: 'npx://x' })),
    undefined,
  );
  assert.equal(mutatingWebhookStage.type, 'mutating-webhook');
  assert.equal(validatingWebhookStage.type, 'validating-webhook');
});

test('the stages judge only parsed MCP requests: a GET or a client response passes untouched', async () => {
  const deps = {
    config: parseRunConfig({ name: 'g', image: 'npx://x' }),
    logger: silentLogger,
    secretLookup: async () => undefined,
  };
  for (const factory of [mutatingWebhookStage, validatingWebhookStage]) {
    // failure_policy fail on an unreachable host: any call would end in a refusal.
    const stage = await factory.create({ webhooks: [hook] }, deps);
    assert.ok(stage !== undefined);
    const get = newRequestContext({
      method: 'GET',
      path: '/mcp',
      serverName: 'g',
      backendTransport: 'stdio',
    });
    assert.equal(await stage.handle(get.ctx), undefined);
    const response = newRequestContext({
      method: 'POST',
      path: '/mcp',
      body: { json: { jsonrpc: '2.0', id: 3, result: {} } },
      serverName: 'g',
      backendTransport: 'stdio',
    });
    assert.equal(response.ctx.mcp, undefined);
    assert.equal(await stage.handle(response.ctx), undefined);
    await stage.close?.();
    await stage.close?.();
  }
});

test('a bad webhook list is a start error naming the stage field', async () => {
  const deps = {
    config: parseRunConfig({ name: 'g', image: 'npx://x' }),
    logger: silentLogger,
    secretLookup: async () => undefined,
  };
  await assert.rejects(
    validatingWebhookStage.create({ webhooks: [{ ...hook, failure_policy: 'maybe' }] }, deps),
    /validating_webhooks\[0\] "h": failure_policy must be "fail" or "ignore"/,
  );
});
