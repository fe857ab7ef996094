import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Stage, StageDeps } from '../../../../src/dataplane/pipeline/types.js';
import { authorizationStage } from '../../../../src/dataplane/pipeline/stages/authorization.js';
import {
  newRequestContext,
  type ProxyRequestContext,
  type ReplyHook,
  runReplyHooks,
} from '../../../../src/dataplane/proxy/index.js';
import { createLineLogger } from '../../../../src/shared/index.js';
import { parseRunConfig, type RunConfig } from '../../../../src/workloads/index.js';

const BOB = { sub: 'bob', email: 'bob@secret.example', groups: ['eng'] };

const POLICIES = [
  'permit(principal in THVGroup::"eng", action == Action::"call_tool", resource == Tool::"echo");',
  'permit(principal, action == Action::"call_tool", resource) when { resource has readOnlyHint && resource.readOnlyHint };',
  'permit(principal, action == Action::"get_prompt", resource == Prompt::"simple");',
  'permit(principal, action == Action::"read_resource", resource) when { resource.uri like "test://static/*" };',
];

function cedarConfig(policies = POLICIES): Record<string, unknown> {
  return { version: '1.0', type: 'cedarv1', cedar: { policies } };
}

interface Harness {
  stage: Stage;
  logs: string[];
}

async function stageFor(
  t: { after(fn: () => Promise<void> | void): void },
  parameters: unknown,
  extra: Partial<StageDeps> = {},
  run: Partial<RunConfig> = {},
): Promise<Harness> {
  const logs: string[] = [];
  const deps: StageDeps = {
    config: { ...parseRunConfig({ name: 'everything', image: 'x', transport: 'stdio' }), ...run },
    logger: createLineLogger({ level: 'info', write: (l) => logs.push(l) }),
    secretLookup: async () => undefined,
    ...extra,
  };
  const stage = await authorizationStage.create(parameters, deps);
  assert.ok(stage !== undefined);
  t.after(() => stage.close?.());
  return { stage, logs };
}

function request(
  body: unknown,
  /** null: no inbound authentication (the local user). */
  claims: Record<string, unknown> | null = BOB,
  method = 'POST',
): { ctx: ProxyRequestContext; hooks: readonly ReplyHook[] } {
  const built = newRequestContext({
    method,
    path: '/mcp',
    ...(body === undefined ? {} : { body: { json: body } }),
    serverName: 'everything',
    backendTransport: 'stdio',
  });
  if (claims !== null) built.ctx.identity = { claims, subject: String(claims['sub']) };
  return { ctx: built.ctx, hooks: built.replyHooks };
}

/** id null: a notification. */
const rpc = (method: string, params: Record<string, unknown> = {}, id: number | null = 1) => ({
  jsonrpc: '2.0',
  ...(id === null ? {} : { id }),
  method,
  params,
});

test('fromRunConfig: authz_config → config_data; else authz_config_path → config_path (better than the reference); else absent', () => {
  const base = parseRunConfig({ name: 'w', image: 'x', transport: 'stdio' });
  assert.equal(authorizationStage.fromRunConfig?.(base), undefined);
  assert.deepEqual(authorizationStage.fromRunConfig?.({ ...base, authz_config_path: '/a.json' }), {
    config_path: '/a.json',
  });
  const data = cedarConfig();
  assert.deepEqual(
    authorizationStage.fromRunConfig?.({ ...base, authz_config: data, authz_config_path: '/a.json' }),
    {
      config_data: data,
    },
  );
});

test('create: config_data wins over config_path; a bad policy is an invalid_config naming it; unknown parameters are refused', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skep-authz-stage-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'deny.json');
  writeFileSync(file, JSON.stringify(cedarConfig(['forbid(principal, action, resource);'])));
  const { stage } = await stageFor(t, { config_path: file, config_data: cedarConfig() });
  const { ctx } = request(rpc('tools/call', { name: 'echo', arguments: {} }));
  assert.equal(await stage.handle(ctx), undefined);
  const fromFile = await stageFor(t, { config_path: file });
  assert.equal((await fromFile.stage.handle(request(rpc('tools/call', { name: 'echo' })).ctx))?.status, 403);

  await assert.rejects(
    authorizationStage.create(
      { config_data: cedarConfig(['permit(']) },
      {
        config: parseRunConfig({ name: 'w', image: 'x', transport: 'stdio' }),
        logger: createLineLogger({ write: () => {} }),
        secretLookup: async () => undefined,
      },
    ),
    { code: 'invalid_config', message: /authz_config\.cedar\.policies\[0\] \(policy0\)/ },
  );
  await assert.rejects(
    authorizationStage.create(
      { config: {} },
      {
        config: parseRunConfig({ name: 'w', image: 'x', transport: 'stdio' }),
        logger: createLineLogger({ write: () => {} }),
        secretLookup: async () => undefined,
      },
    ),
    { code: 'invalid_config', message: /unknown keys 'config'/ },
  );
});

test('a denied call is HTTP 403 with JSON-RPC code 403 "Unauthorized" echoing the id; the WARN log has no claims', async (t) => {
  const { stage, logs } = await stageFor(t, { config_data: cedarConfig() });
  const denied = await stage.handle(
    request(rpc('tools/call', { name: 'printEnv', arguments: { x: 'arg-value' } }, 7)).ctx,
  );
  assert.deepEqual(denied, {
    status: 403,
    headers: { 'content-type': 'application/json' },
    body: { jsonrpc: '2.0', id: 7, error: { code: 403, message: 'Unauthorized' } },
  });
  assert.equal(
    await stage.handle(request(rpc('tools/call', { name: 'echo', arguments: { message: 'hi' } })).ctx),
    undefined,
  );
  const warn = logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l['level'] === 40);
  assert.ok(warn, 'a WARN line');
  assert.equal(warn['msg'], 'request denied by authorization policy');
  assert.match(String(warn['reason']), /no policy permits/);
  const all = logs.join('\n');
  assert.doesNotMatch(all, /bob@secret\.example/);
  assert.doesNotMatch(all, /arg-value/);
});

test('the method table — always-allowed, unfiltered, default-deny (a notification’s denial has no id)', async (t) => {
  const { stage } = await stageFor(t, { config_data: cedarConfig(['forbid(principal, action, resource);']) });
  for (const m of [
    'initialize',
    'ping',
    'logging/setLevel',
    'completion/complete',
    'resources/templates/list',
  ])
    assert.equal(await stage.handle(request(rpc(m)).ctx), undefined, m);
  assert.equal(await stage.handle(request(rpc('notifications/initialized', {}, null)).ctx), undefined);
  const tasks = await stage.handle(request(rpc('tasks/get', { taskId: 'x' })).ctx);
  assert.equal(tasks?.status, 403);
  const note = await stage.handle(request(rpc('notifications/elicitation/complete', {}, null)).ctx);
  assert.deepEqual(note?.body, { jsonrpc: '2.0', error: { code: 403, message: 'Unauthorized' } });
  assert.equal((await stage.handle(request(rpc('tools/call', { name: 'echo' })).ctx))?.status, 403);
  assert.equal(
    (await stage.handle(request(rpc('tools/call', {})).ctx))?.status,
    403,
    'a call without a name',
  );
});

test('better than the reference: GET, DELETE and a client’s JSON-RPC responses pass; anything else unparsed is 400', async (t) => {
  const { stage } = await stageFor(t, { config_data: cedarConfig(['forbid(principal, action, resource);']) });
  assert.equal(await stage.handle(request(undefined, BOB, 'GET').ctx), undefined);
  assert.equal(await stage.handle(request(undefined, BOB, 'DELETE').ctx), undefined);
  const sampling = {
    jsonrpc: '2.0',
    id: 'srv-1',
    result: { role: 'assistant', content: { type: 'text', text: 'x' } },
  };
  assert.equal(await stage.handle(request(sampling).ctx), undefined);
  assert.equal(
    await stage.handle(request({ jsonrpc: '2.0', id: 2, error: { code: -1, message: 'declined' } }).ctx),
    undefined,
  );
  const malformed = await stage.handle(request('just a string').ctx);
  assert.equal(malformed?.status, 400);
  assert.equal(malformed?.body, 'Invalid or malformed MCP request');
  assert.equal((await stage.handle(request([rpc('tools/call', { name: 'x' })]).ctx))?.status, 400);
});

async function reply(
  hooks: readonly ReplyHook[],
  message: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const copy = structuredClone(message) as unknown as Parameters<ReplyHook>[0];
  await runReplyHooks(hooks, copy);
  return copy as unknown as Record<string, unknown>;
}

test('tools/prompts/resources lists are filtered; nextCursor kept; an error answer passes', async (t) => {
  const { stage } = await stageFor(t, { config_data: cedarConfig() });
  const tools = request(rpc('tools/list'));
  assert.equal(await stage.handle(tools.ctx), undefined);
  const listed = await reply(tools.hooks, {
    jsonrpc: '2.0',
    id: 1,
    result: {
      tools: [
        { name: 'echo', inputSchema: {} },
        { name: 'printEnv', inputSchema: {} },
        { name: 'get-sum', inputSchema: {}, annotations: { readOnlyHint: true } },
        { inputSchema: {} },
      ],
      nextCursor: 'page2',
    },
  });
  assert.deepEqual(
    (listed['result'] as { tools: { name: string }[] }).tools.map((x) => x.name),
    ['echo', 'get-sum'],
  );
  assert.equal((listed['result'] as { nextCursor: string }).nextCursor, 'page2');

  const prompts = request(rpc('prompts/list'));
  await stage.handle(prompts.ctx);
  const p = await reply(prompts.hooks, {
    jsonrpc: '2.0',
    id: 1,
    result: { prompts: [{ name: 'simple' }, { name: 'complex' }] },
  });
  assert.deepEqual(p['result'], { prompts: [{ name: 'simple' }] });

  const resources = request(rpc('resources/list'));
  await stage.handle(resources.ctx);
  const r = await reply(resources.hooks, {
    jsonrpc: '2.0',
    id: 1,
    result: {
      resources: [
        { uri: 'test://static/resource/1', name: 'a' },
        { uri: 'test://other', name: 'b' },
      ],
    },
  });
  assert.deepEqual(r['result'], { resources: [{ uri: 'test://static/resource/1', name: 'a' }] });

  const failing = request(rpc('tools/list'));
  await stage.handle(failing.ctx);
  const err = { jsonrpc: '2.0', id: 1, error: { code: -32000, message: 'down' } };
  assert.deepEqual(await reply(failing.hooks, err), err);

  const both = request(rpc('tools/list'));
  await stage.handle(both.ctx);
  const closed = await reply(both.hooks, { ...err, result: { tools: [{ name: 'echo' }] } });
  assert.equal((closed['error'] as { code: number }).code, -32603, 'fail closed');
  assert.equal(closed['result'], undefined);
});

test('tools/list fills the annotation cache that tools/call policies read', async (t) => {
  const { stage } = await stageFor(t, { config_data: cedarConfig() });
  const call = () => stage.handle(request(rpc('tools/call', { name: 'get-sum', arguments: { a: 1 } })).ctx);
  assert.equal((await call())?.status, 403, 'annotations unknown before a list');
  const list = request(rpc('tools/list'));
  await stage.handle(list.ctx);
  await reply(list.hooks, {
    jsonrpc: '2.0',
    id: 1,
    result: {
      tools: [{ name: 'get-sum', inputSchema: {}, annotations: { readOnlyHint: true, title: 'x' } }],
    },
  });
  assert.equal(await call(), undefined);
});

test('without inbound auth the local user is the principal', async (t) => {
  const { userInfo } = await import('node:os');
  const { stage } = await stageFor(t, {
    config_data: cedarConfig([
      `permit(principal == Client::"${userInfo().username || 'local'}", action, resource) when { principal.claim_iss == "toolhive-local" };`,
    ]),
  });
  assert.equal(await stage.handle(request(rpc('tools/call', { name: 'echo' }), null).ctx), undefined);
  assert.equal((await stage.handle(request(rpc('tools/call', { name: 'echo' })).ctx))?.status, 403);
});

function jwt(payload: Record<string, unknown>): string {
  const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${enc({ alg: 'RS256' })}.${enc(payload)}.c2ln`;
}

test('with the embedded authorization server, the upstream access token’s claims are judged', async (t) => {
  const tokens = new Map<string, string>([
    ['s-admin', jwt({ sub: 'okta-user', groups: ['eng'] })],
    ['s-opaque', 'opaque-token'],
    ['s-bad', 'a.!!!.c'],
    ['s-bad-json', `x.${Buffer.from('not json').toString('base64url')}.y`],
  ]);
  const authServer: NonNullable<StageDeps['authServer']> = {
    issuer: 'http://as',
    verifyAccessToken: async () => ({}),
    upstreamToken: async (session, provider) => {
      assert.equal(provider, 'okta');
      const token = tokens.get(session);
      if (token === undefined) throw new Error('no upstream token');
      return token;
    },
  };
  const { stage } = await stageFor(
    t,
    { config_data: cedarConfig() },
    { authServer },
    { embedded_auth_server_config: { upstreams: [{ name: 'okta', type: 'oidc' }] } },
  );
  const echo = (claims: Record<string, unknown>) =>
    stage.handle(request(rpc('tools/call', { name: 'echo' }), claims).ctx);
  // The Skep token says nothing about groups: the upstream token's groups decide.
  assert.equal(await echo({ sub: 'skep-sub', tsid: 's-admin' }), undefined);
  assert.equal((await echo({ sub: 'skep-sub', tsid: 'missing' }))?.status, 403, 'no stored token');
  assert.equal((await echo({ sub: 'skep-sub' }))?.status, 403, 'no session');
  assert.equal(
    await echo({ sub: 'skep-sub', tsid: 's-opaque', groups: ['eng'] }),
    undefined,
    'opaque: own claims',
  );
  assert.equal((await echo({ sub: 'skep-sub', tsid: 's-bad-json', groups: ['eng'] }))?.status, 403);
  assert.equal((await echo({ sub: 'skep-sub', tsid: 's-bad', groups: ['eng'] }))?.status, 403);

  await assert.rejects(
    authorizationStage.create(
      { config_data: cedarConfig() },
      {
        config: {
          ...parseRunConfig({ name: 'w', image: 'x', transport: 'stdio' }),
          embedded_auth_server_config: { upstreams: [{ name: 'okta', type: 'oidc' }] },
        },
        logger: createLineLogger({ write: () => {} }),
        secretLookup: async () => undefined,
      },
    ),
    { code: 'invalid_config', message: /embedded authorization server, which is not running/ },
  );
});

test('check (create, update, --from-config): the inline authz_config or the file authz_config_path names is validated', async (t) => {
  const base = parseRunConfig({ name: 'w', image: 'x', transport: 'stdio' });
  const check = async (config: RunConfig) => {
    const parameters = authorizationStage.fromRunConfig?.(config);
    if (parameters !== undefined) await authorizationStage.check?.(parameters, config);
  };
  await check(base);
  await check({ ...base, authz_config: cedarConfig() });
  await assert.rejects(check({ ...base, authz_config: cedarConfig(['nope']) }), {
    code: 'invalid_config',
    message: /authz_config\.cedar\.policies\[0\] \(policy0\)/,
  });
  const dir = mkdtempSync(join(tmpdir(), 'skep-authz-check-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'a.json');
  writeFileSync(file, JSON.stringify(cedarConfig([POLICIES[0] as string, 'forbid('])));
  await assert.rejects(check({ ...base, authz_config_path: file }), {
    message: /authz_config_path\.cedar\.policies\[1\] \(policy1\)/,
  });
  await assert.rejects(check({ ...base, authz_config_path: join(dir, 'none.json') }), {
    message: /authz_config_path: cannot read/,
  });
  await assert.rejects(
    check({
      ...base,
      authz_config: {
        ...cedarConfig(),
        cedar: { policies: POLICIES, primary_upstream_provider: 'okta' },
      } as Record<string, unknown>,
    }),
    { message: /primary_upstream_provider needs the embedded authorization server/ },
  );
});
