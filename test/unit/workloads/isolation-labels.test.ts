/**
 * What the API (and `skep list`, which prints the same summary) says about a workload's
 * sandbox and network is what the runtime enforces: the labels come from the decisions the
 * runtime takes at start (the sandbox selection and the sandbox's or container's network).
 */
import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import type { SkepConfig } from '../../../src/config/index.js';
import { parseRunConfig, type WorkloadRow } from '../../../src/workloads/index.js';
import { detailOf, summaryOf } from '../../../src/workloads/views.js';
import { tempHome } from '../../helpers/home.js';

/**
 * A config whose sandbox is a stand-in bubblewrap that passes the probe (it exits 0), so the
 * sandbox selection is the same on every machine; nothing here starts a server.
 */
function processConfig(t: TestContext): SkepConfig {
  const home = tempHome(t, 'skep-labels-');
  const fakeBwrap = join(home.dir, 'bwrap');
  writeFileSync(fakeBwrap, '#!/bin/sh\nexit 0\n');
  chmodSync(fakeBwrap, 0o755);
  return { ...home.config, runtime: { ...home.config.runtime, type: 'process', sandbox: fakeBwrap } };
}

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

test('a sandboxed package server whose profile allows all outbound traffic says host, not isolated', (t) => {
  const skep = processConfig(t);
  const row = rowOf({
    name: 'files',
    image: 'npx://@modelcontextprotocol/server-filesystem',
    permission_profile_name_or_path: 'network',
    isolate_network: true,
  });
  const summary = summaryOf(skep, row);
  assert.equal(summary.sandbox, 'bwrap');
  assert.equal(summary.network, 'host');
  const detail = detailOf(skep, row);
  assert.equal(detail.network, 'host');
  assert.match(detail.network_detail, /this machine's network, unfiltered/);
  assert.match(detail.network_detail, /allows all outbound traffic/);
  // The setting asked for stays as the reference reports it.
  assert.equal(detail.network_isolation, true);
});

test('isolation off gives the host network, and says so', (t) => {
  const skep = processConfig(t);
  const detail = detailOf(skep, rowOf({ name: 'a', image: 'npx://pkg', isolate_network: false }));
  assert.equal(detail.network, 'host');
  assert.match(detail.network_detail, /network isolation is off/);
});

test('an allow-list profile says filtered, naming the hosts; network mode none says none', (t) => {
  const skep = processConfig(t);
  const filtered = detailOf(
    skep,
    rowOf({
      name: 'f',
      image: 'npx://pkg',
      permission_profile: { network: { outbound: { allow_host: ['api.example.com'], allow_port: [443] } } },
    }),
  );
  assert.equal(filtered.sandbox, 'bwrap');
  assert.equal(filtered.network, 'filtered');
  assert.match(filtered.network_detail, /^only api\.example\.com on port 443, through/);
  const none = detailOf(
    skep,
    rowOf({ name: 'n', image: 'npx://pkg', permission_profile_name_or_path: 'none' }),
  );
  assert.equal(none.network, 'none');
});

test('an unsandboxed process says none (with the reason) and the host network', (t) => {
  const base = processConfig(t);
  const skep = { ...base, runtime: { ...base.runtime, sandbox: 'off' } };
  const detail = detailOf(skep, rowOf({ name: 'p', image: 'npx://pkg' }));
  assert.equal(detail.sandbox, 'none');
  assert.equal(detail.sandbox_reason, 'runtime.sandbox is off');
  assert.equal(detail.network, 'host');
  assert.match(detail.network_detail, /not sandboxed/);
});

test('a virtual MCP server says not applicable, not container, even with no container engine', (t) => {
  const skep = processConfig(t);
  const row = rowOf({ name: 'team', vmcp: { groupRef: 'default' } });
  const summary = summaryOf(skep, row);
  assert.equal(summary.sandbox, 'n/a');
  assert.equal(summary.sandboxed, false);
  assert.equal(summary.network, 'n/a');
  const detail = detailOf(skep, row);
  assert.match(detail.sandbox_reason, /runs no server process/);
  assert.match(detail.network_detail, /^not applicable/);
});

test('a remote server says not applicable', (t) => {
  const skep = processConfig(t);
  const summary = summaryOf(skep, rowOf({ name: 'r', remote_url: 'https://mcp.example.com/mcp' }));
  assert.equal(summary.sandbox, 'n/a');
  assert.equal(summary.network, 'n/a');
});
