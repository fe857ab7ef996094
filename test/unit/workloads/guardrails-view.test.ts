/**
 * The guardrails line of the workload views: the list row and the detail say what the
 * guardrails stage does, from the stored `guardrails_config` (a default is never silent), and
 * a create request's `guardrails_config` is what gets stored.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { configFromCreate, applyRequest } from '../../../src/workloads/config-builder.js';
import { parseRunConfig, type WorkloadRow } from '../../../src/workloads/index.js';
import { detailOf, summaryOf } from '../../../src/workloads/views.js';
import { tempHome } from '../../helpers/home.js';

function rowOf(config: Record<string, unknown>): WorkloadRow {
  return {
    name: String(config['name']),
    config: parseRunConfig(config),
    group: 'default',
    port: 0,
    desired: 'stopped',
    autostart: true,
    status: 'stopped',
    statusContext: '',
    runnerPid: undefined,
    createdAt: '2026-01-01T00:00:00.000Z',
    startedAt: undefined,
    updatedAt: '2026-01-01T00:00:00.000Z',
    accessToken: '',
    tools: undefined,
  };
}

test('summary and detail carry the guardrails line of the stored configuration', (t) => {
  const skep = tempHome(t, 'skep-guardrails-view-').config;
  const cases: Array<[Record<string, unknown> | undefined, string]> = [
    // Workloads made before guardrails, and configurations from the reference, have none.
    [undefined, 'off'],
    [{ enabled: false }, 'off'],
    [{ credentials: { results: 'block', arguments: 'audit' } }, 'ownSecrets:redact credentials:block/audit'],
    [{ ownSecrets: { results: 'off' }, credentials: { results: 'off' } }, 'off'],
  ];
  for (const [guardrails, line] of cases) {
    const row = rowOf({
      name: 'w',
      remote_url: 'https://mcp.example.com/mcp',
      ...(guardrails === undefined ? {} : { guardrails_config: guardrails }),
    });
    assert.equal(summaryOf(skep, row).guardrails, line, JSON.stringify(guardrails));
    assert.equal(detailOf(skep, row).guardrails, line, JSON.stringify(guardrails));
  }
});

test('a create gets the default unless it sets guardrails_config; an update replaces it', (t) => {
  const skep = tempHome(t, 'skep-guardrails-view-').config;
  const created = configFromCreate({ name: 'a', url: 'https://mcp.example.com/mcp' }, undefined);
  assert.equal(summaryOf(skep, rowOf(created)).guardrails, 'ownSecrets:redact credentials:redact');
  const off = configFromCreate(
    { name: 'b', url: 'https://mcp.example.com/mcp', guardrails_config: { enabled: false } },
    undefined,
  );
  assert.deepEqual(off.guardrails_config, { enabled: false });
  const updated = applyRequest(created, { guardrails_config: { personalData: { results: 'audit' } } });
  assert.deepEqual(updated.guardrails_config, { personalData: { results: 'audit' } });
  assert.equal(
    summaryOf(skep, rowOf(updated)).guardrails,
    'ownSecrets:redact credentials:redact personalData:audit',
  );
  // An update that leaves it out keeps it.
  assert.deepEqual(applyRequest(off, { env_vars: {} }).guardrails_config, { enabled: false });
});
