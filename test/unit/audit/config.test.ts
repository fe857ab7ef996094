import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  AUDIT_DEFAULTS,
  auditsEventType,
  loadAuditConfigFile,
  parseAuditConfig,
} from '../../../src/dataplane/middleware/audit/config.js';
import { isSkepError } from '../../../src/shared/index.js';

/** Asserts an `invalid_config` whose message matches `pattern`. */
function refuses(value: unknown, pattern: RegExp): void {
  assert.throws(
    () => parseAuditConfig(value),
    (err: unknown) => isSkepError(err) && err.code === 'invalid_config' && pattern.test(err.message),
  );
}

test('defaults — data capture off, detection on, maxDataSize 1024, depth 10, the runner log', () => {
  const config = parseAuditConfig({});
  assert.deepEqual(config, {
    enabled: true,
    component: undefined,
    eventTypes: [],
    excludeEventTypes: [],
    includeRequestData: false,
    includeResponseData: false,
    detectApplicationErrors: true,
    maxDataSize: 1024,
    maxDelegationDepth: 10,
    logFile: undefined,
  });
  assert.ok(Object.isFrozen(config));
  assert.equal(AUDIT_DEFAULTS.component, 'toolhive-api');
});

test('every camelCase key is read', () => {
  const config = parseAuditConfig({
    enabled: true,
    component: 'github',
    eventTypes: ['mcp_tool_call', 'sse_connection'],
    excludeEventTypes: ['mcp_ping'],
    includeRequestData: true,
    includeResponseData: true,
    detectApplicationErrors: false,
    maxDataSize: 4096,
    maxDelegationDepth: 3,
    logFile: '/var/log/skep/audit.log',
  });
  assert.equal(config.component, 'github');
  assert.deepEqual(config.eventTypes, ['mcp_tool_call', 'sse_connection']);
  assert.deepEqual(config.excludeEventTypes, ['mcp_ping']);
  assert.equal(config.includeRequestData, true);
  assert.equal(config.includeResponseData, true);
  assert.equal(config.detectApplicationErrors, false);
  assert.equal(config.maxDataSize, 4096);
  assert.equal(config.maxDelegationDepth, 3);
  assert.equal(config.logFile, '/var/log/skep/audit.log');
});

test('enabled: false is honoured (better than the reference); absent means on, like a present audit_config there', () => {
  assert.equal(parseAuditConfig({ enabled: false }).enabled, false);
  assert.equal(parseAuditConfig({ logFile: '/tmp/a.log' }).enabled, true);
});

test('maxDataSize 0 means the default; negative is refused naming the field', () => {
  assert.equal(parseAuditConfig({ maxDataSize: 0 }).maxDataSize, 1024);
  refuses({ maxDataSize: -1 }, /audit_config\.maxDataSize must not be negative/);
  refuses({ maxDataSize: 1.5 }, /audit_config\.maxDataSize must be an integer/);
});

test('maxDelegationDepth ≤ 0 is refused', () => {
  refuses({ maxDelegationDepth: 0 }, /audit_config\.maxDelegationDepth must be a positive integer/);
  refuses({ maxDelegationDepth: -3 }, /maxDelegationDepth must be a positive integer/);
});

test('an unknown event type is refused naming it, in either list', () => {
  refuses(
    { eventTypes: ['mcp_tool_call', 'tool_call'] },
    /audit_config\.eventTypes: unknown event type "tool_call"/,
  );
  refuses({ excludeEventTypes: ['nope'] }, /audit_config\.excludeEventTypes: unknown event type "nope"/);
  refuses({ eventTypes: 'mcp_tool_call' }, /eventTypes must be a list/);
});

test('sse_connection may be named in the filters (the reference refuses the name it emits)', () => {
  const config = parseAuditConfig({ excludeEventTypes: ['sse_connection'] });
  assert.equal(auditsEventType(config, 'sse_connection'), false);
  assert.equal(auditsEventType(config, 'mcp_tool_call'), true);
});

test('unknown keys are refused naming them (snake_case keys of old configs included)', () => {
  refuses({ max_data_size: 10 }, /unknown key "max_data_size"/);
  refuses({ excludeEventType: [], foo: 1 }, /unknown keys "excludeEventType", "foo"/);
});

test('wrong types are refused naming the field', () => {
  refuses({ enabled: 'yes' }, /audit_config\.enabled must be true or false/);
  refuses({ component: 7 }, /audit_config\.component must be a string/);
  refuses([], /audit_config must be a JSON object/);
});

test('logFile must be absolute', () => {
  refuses({ logFile: 'audit.log' }, /audit_config\.logFile must be an absolute path/);
});

test('filters: the denylist wins over the allowlist; an empty allowlist allows every type', () => {
  const config = parseAuditConfig({
    eventTypes: ['mcp_tool_call', 'mcp_ping'],
    excludeEventTypes: ['mcp_ping'],
  });
  assert.equal(auditsEventType(config, 'mcp_tool_call'), true);
  assert.equal(auditsEventType(config, 'mcp_ping'), false);
  assert.equal(auditsEventType(config, 'http_request'), false);
  assert.equal(auditsEventType(parseAuditConfig({}), 'http_request'), true);
});

test('the audit_config_path file is JSON only; a YAML file is refused saying so', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skep-audit-config-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const json = join(dir, 'audit.json');
  writeFileSync(json, JSON.stringify({ component: 'from-file', maxDataSize: 10 }));
  const config = await loadAuditConfigFile(json);
  assert.equal(config.component, 'from-file');
  assert.equal(config.maxDataSize, 10);

  const yaml = join(dir, 'audit.yaml');
  writeFileSync(yaml, 'component: from-file\n');
  await assert.rejects(
    loadAuditConfigFile(yaml),
    (err: unknown) => isSkepError(err) && /not valid JSON .*YAML is not supported/.test(err.message),
  );
  const invalid = join(dir, 'bad.json');
  writeFileSync(invalid, JSON.stringify({ eventTypes: ['bogus'] }));
  await assert.rejects(
    loadAuditConfigFile(invalid),
    (err: unknown) =>
      isSkepError(err) && err.message.includes(invalid) && /unknown event type "bogus"/.test(err.message),
  );
  await assert.rejects(
    loadAuditConfigFile(join(dir, 'missing.json')),
    (err: unknown) =>
      isSkepError(err) && /cannot read the audit configuration file .*ENOENT/.test(err.message),
  );
});
