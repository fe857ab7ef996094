import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { auditStage } from '../../../../src/dataplane/pipeline/stages/audit.js';
import type { StageDeps } from '../../../../src/dataplane/pipeline/types.js';
import { type ExchangeEnd, newRequestContext } from '../../../../src/dataplane/proxy/index.js';
import { createLineLogger, isSkepError } from '../../../../src/shared/index.js';
import { parseRunConfig, type RunConfig } from '../../../../src/workloads/index.js';

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'skep-audit-stage-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function runConfig(extra: Record<string, unknown> = {}): RunConfig {
  return parseRunConfig({ name: 'weather', image: 'cmd://node', transport: 'stdio', ...extra });
}

function deps(config: RunConfig, logs: string[] = []): StageDeps {
  return {
    config,
    logger: createLineLogger({ write: (line) => logs.push(line) }),
    secretLookup: async () => undefined,
  };
}

/** One request through the stage: handle, then the answer (if any), then the end. */
async function exchange(
  stage: { handle: (ctx: ReturnType<typeof newRequestContext>['ctx']) => unknown },
  init: {
    headers?: Record<string, string>;
    status: number;
    claims?: Record<string, unknown>;
    method?: string;
  },
): Promise<unknown> {
  let fire: ((end: ExchangeEnd) => void) | undefined;
  const built = newRequestContext({
    method: init.method ?? 'POST',
    path: '/mcp',
    headers: init.headers ?? {},
    remoteAddress: '127.0.0.1',
    body: { json: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'forecast' } } },
    serverName: 'weather',
    backendTransport: 'stdio',
    whenEnded: (f) => (fire = f),
  });
  const rejected = await stage.handle(built.ctx);
  if (init.claims !== undefined) built.ctx.identity = { claims: init.claims };
  for (const hook of [...built.replyHooks].reverse())
    await hook({ jsonrpc: '2.0', id: 1, result: { content: [] } });
  fire?.({ status: init.status, completed: true });
  return rejected;
}

function lines(file: string): Array<Record<string, unknown>> {
  return readFileSync(file, 'utf8')
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

test('fromRunConfig: audit_config inline, else audit_config_path; component is the workload name', () => {
  assert.deepEqual(auditStage.fromRunConfig?.(runConfig({ audit_config: { maxDataSize: 10 } })), {
    config_data: { maxDataSize: 10 },
    component: 'weather',
    transport_type: 'stdio',
  });
  assert.deepEqual(auditStage.fromRunConfig?.(runConfig({ audit_config_path: '/etc/audit.json' })), {
    config_path: '/etc/audit.json',
    component: 'weather',
    transport_type: 'stdio',
  });
  assert.equal(auditStage.fromRunConfig?.(runConfig()), undefined);
});

test('enabled: false is honoured: no stage, no file, one INFO line saying audit is disabled', async (t) => {
  const file = join(tempDir(t), 'audit.log');
  const logs: string[] = [];
  const stage = await auditStage.create(
    { config_data: { enabled: false, logFile: file } },
    deps(runConfig(), logs),
  );
  assert.equal(stage, undefined);
  assert.equal(existsSync(file), false);
  const info = logs.map((l) => JSON.parse(l) as { level: number; msg: string });
  assert.equal(info.filter((l) => /audit is disabled/.test(l.msg)).length, 1);
  assert.equal(info.find((l) => /audit is disabled/.test(l.msg))?.level, 30);
});

test('the stage never rejects; component: config, else the parameter, else toolhive-api', async (t) => {
  const dir = tempDir(t);
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ config_data: { logFile: join(dir, 'a.log'), component: 'own' }, component: 'param' }, 'own'],
    [{ config_data: { logFile: join(dir, 'b.log') }, component: 'param' }, 'param'],
    [{ config_data: { logFile: join(dir, 'c.log') } }, 'toolhive-api'],
  ];
  for (const [params, component] of cases) {
    const stage = await auditStage.create(params, deps(runConfig()));
    assert.ok(stage);
    assert.equal(stage.name, 'audit');
    assert.equal(await exchange(stage, { status: 403 }), undefined);
    await stage.close?.();
    const file = (params['config_data'] as { logFile: string }).logFile;
    const [line] = lines(file);
    assert.equal(line?.['component'], component);
    assert.equal(line?.['outcome'], 'denied');
  }
});

test('config_path: the JSON file is read; a bad one is a start error naming it', async (t) => {
  const dir = tempDir(t);
  const logFile = join(dir, 'audit.log');
  const configFile = join(dir, 'audit.json');
  writeFileSync(configFile, JSON.stringify({ logFile, eventTypes: ['mcp_tool_call'] }));
  const stage = await auditStage.create({ config_path: configFile }, deps(runConfig()));
  assert.ok(stage);
  await exchange(stage, { status: 200 });
  await stage.close?.();
  assert.equal(lines(logFile)[0]?.['type'], 'mcp_tool_call');

  writeFileSync(configFile, JSON.stringify({ eventTypes: ['tool_call'] }));
  await assert.rejects(
    auditStage.create({ config_path: configFile }, deps(runConfig())),
    (err: unknown) =>
      isSkepError(err) && err.message.includes(configFile) && /unknown event type/.test(err.message),
  );
});

test('parameters: unknown keys and a wrong transport_type are refused; a log file that cannot be opened names it', async (t) => {
  const bad = (params: unknown, pattern: RegExp, code = 'invalid_config') =>
    assert.rejects(
      auditStage.create(params, deps(runConfig())),
      (err: unknown) => isSkepError(err) && err.code === code && pattern.test(err.message),
    );
  await bad({ config: {} }, /audit parameters: unknown key config/);
  await bad({ transport_type: 'websocket' }, /transport_type must be one of stdio, sse, streamable-http/);
  const missing = join(tempDir(t), 'no', 'such', 'dir', 'audit.log');
  await bad(
    { config_data: { logFile: missing } },
    new RegExp(`audit_config\\.logFile: cannot open ${missing}`),
    'invalid_path',
  );
});

test('trust_proxy_headers: X-Forwarded-For is believed only when the run configuration says so', async (t) => {
  const dir = tempDir(t);
  for (const trust of [false, true]) {
    const logFile = join(dir, `${trust}.log`);
    const stage = await auditStage.create(
      { config_data: { logFile } },
      deps(runConfig({ trust_proxy_headers: trust })),
    );
    assert.ok(stage);
    await exchange(stage, { status: 200, headers: { 'x-forwarded-for': '203.0.113.9' } });
    await stage.close?.();
    const source = lines(logFile)[0]?.['source'] as { value: string };
    assert.equal(source.value, trust ? '203.0.113.9' : '127.0.0.1');
  }
});

test('subjects: verified claims; without inbound auth the local user; with it, an unauthenticated caller is anonymous', async (t) => {
  const dir = tempDir(t);
  const local = join(dir, 'local.log');
  const open = await auditStage.create({ config_data: { logFile: local } }, deps(runConfig()));
  assert.ok(open);
  await exchange(open, { status: 200 });
  await exchange(open, { status: 200, claims: { sub: 'alice', preferred_username: 'alice' } });
  await open.close?.();
  const [first, second] = lines(local);
  assert.match(String((first?.['subjects'] as { user: string }).user), /^Local User: /);
  assert.deepEqual(second?.['subjects'], { user: 'alice', user_id: 'alice' });

  const guarded = join(dir, 'guarded.log');
  const oidc = { oidc_config: { issuer: 'https://idp.example', audience: 'mcp' } };
  const stage = await auditStage.create({ config_data: { logFile: guarded } }, deps(runConfig(oidc)));
  assert.ok(stage);
  await exchange(stage, { status: 401 });
  await stage.close?.();
  assert.deepEqual(lines(guarded)[0]?.['subjects'], { user: 'anonymous' });
});

test('without logFile the events go to the runner log, one structured line each', async () => {
  const logs: string[] = [];
  const stage = await auditStage.create({ config_data: {} }, deps(runConfig(), logs));
  assert.ok(stage);
  await exchange(stage, { status: 200 });
  await stage.close?.();
  const events = logs
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l['msg'] === 'audit_event');
  assert.equal(events.length, 1);
  assert.equal(events[0]?.['type'], 'mcp_tool_call');
  assert.equal(events[0]?.['component'], 'toolhive-api');
});
