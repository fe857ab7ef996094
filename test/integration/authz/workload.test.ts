/**
 * Authorization through a real workload: run configurations with `authz_config` imported like
 * `skep run --from-config`, each runner run in this process (the pipeline built from the run
 * configuration, the proxy, server-everything as a stdio child), and the official MCP SDK
 * client. Cedar (`cedarv1`) with the local user and with a real OIDC token (oidc-provider,
 * a `groups` claim), and an external decision point (`httpv1`) on loopback.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { userInfo } from 'node:os';
import { type TestContext, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { closeServer, PROXY_AUDIENCE, startIdp } from '../auth/harness.js';
import {
  everythingBody,
  inProcessManager,
  runInProcess,
  waitFor,
  workloadEndpoint,
} from '../workloads/helpers.js';

interface Running {
  /** The working URL of its `/mcp` (or `path`), with the access token when it asks for one. */
  url(path?: string): string;
  /** Stops the runner (before the store closes, which the manager's own clean-up does); checks it exited cleanly. */
  stop(): Promise<void>;
}

/** Imports server-everything with `extra` run-configuration fields and runs it in-process. */
async function workload(t: TestContext, name: string, extra: Record<string, unknown>): Promise<Running> {
  const { ctx, manager } = inProcessManager(t);
  await manager.create(everythingBody('template'));
  await manager.createFromConfig({ ...manager.exportConfig('template'), ...extra }, { name });
  const controller = new AbortController();
  const done = runInProcess(ctx, name, controller.signal);
  const stop = async () => {
    controller.abort();
    assert.equal(await done, 0);
  };
  await waitFor(`${name} to be running`, () => {
    const row = manager.rows.get(name);
    if (row?.status === 'error') throw new Error(`${name}: ${row.statusContext}`);
    return row?.status === 'running' ? true : undefined;
  });
  return { url: (path) => workloadEndpoint(manager, name, path), stop };
}

async function connect(
  t: TestContext,
  w: Running,
  options: { token?: string; transport?: 'streamable-http' | 'sse' } = {},
): Promise<Client> {
  const client = new Client({ name: 'authz-test', version: '1.0.0' });
  const init =
    options.token === undefined
      ? {}
      : { requestInit: { headers: { authorization: `Bearer ${options.token}` } } };
  await client.connect(
    options.transport === 'sse'
      ? new SSEClientTransport(new URL(w.url('/sse')), init)
      : new StreamableHTTPClientTransport(new URL(w.url()), init),
  );
  t.after(() => client.close());
  return client;
}

async function echo(client: Client, message: string): Promise<string> {
  const result = (await client.callTool({ name: 'echo', arguments: { message } })) as {
    content: { text: string }[];
  };
  return result.content[0]?.text ?? '';
}

/** What the SDK client surfaces for a denial: the HTTP status as `code`, the JSON-RPC 403 body in the message. */
async function assertDenied(call: Promise<unknown>, id?: number): Promise<void> {
  await assert.rejects(call, (err: Error & { code?: number }) => {
    assert.match(err.message, /403/);
    const body = JSON.parse(err.message.slice(err.message.indexOf('{'))) as Record<string, unknown>;
    assert.deepEqual(body['error'], { code: 403, message: 'Unauthorized' });
    assert.equal(body['jsonrpc'], '2.0');
    if (id !== undefined) assert.equal(body['id'], id);
    else assert.equal(typeof body['id'], 'number', 'the request id is echoed');
    return true;
  });
}

const cedar = (policies: string[]) => ({
  authz_config: { version: '1.0', type: 'cedarv1', cedar: { policies } },
});

const DOC = 'demo://resource/static/document/';

test(
  'cedarv1 through a real workload (local user): allowed and denied calls, a policy on an argument, forbid over permit, filtered lists',
  { timeout: 180_000 },
  async (t) => {
    const user = userInfo().username || 'local';
    const w = await workload(
      t,
      'cedar-local',
      cedar([
        `permit(principal == Client::"${user}", action == Action::"call_tool", resource == Tool::"echo");`,
        // The reference's number semantics: arguments are decimals.
        'permit(principal, action == Action::"call_tool", resource == Tool::"get-sum") when { resource has arg_a && resource.arg_a.lessThan(decimal("100.0")) };',
        'forbid(principal, action == Action::"call_tool", resource) when { context has arg_message && context.arg_message == "forbidden" };',
        'permit(principal, action == Action::"get_prompt", resource == Prompt::"simple-prompt");',
        `permit(principal, action == Action::"read_resource", resource in MCP::"cedar-local") when { resource.uri like "${DOC}*" };`,
      ]),
    );
    const client = await connect(t, w);

    await t.test('allowed call', async () => {
      assert.equal(await echo(client, 'hi'), 'Echo: hi');
    });
    await t.test('denied call: HTTP 403, JSON-RPC code 403 "Unauthorized" with the request id', async () => {
      await assertDenied(client.callTool({ name: 'get-env', arguments: {} }));
    });
    await t.test('a policy on an argument (decimal)', async () => {
      const sum = (await client.callTool({ name: 'get-sum', arguments: { a: 5, b: 2 } })) as {
        content: { text: string }[];
      };
      assert.match(sum.content[0]?.text ?? '', /7/);
      await assertDenied(client.callTool({ name: 'get-sum', arguments: { a: 500, b: 2 } }));
    });
    await t.test('forbid overrides permit', async () => {
      await assertDenied(client.callTool({ name: 'echo', arguments: { message: 'forbidden' } }));
    });
    await t.test('tools/list keeps what the caller may call with no arguments', async () => {
      const tools = await client.listTools();
      // get-sum is permitted only with an argument, so it is hidden (the reference's behaviour).
      assert.deepEqual(
        tools.tools.map((x) => x.name),
        ['echo'],
      );
    });
    await t.test('prompts: list filtered, get allowed and denied', async () => {
      const prompts = await client.listPrompts();
      assert.deepEqual(
        prompts.prompts.map((p) => p.name),
        ['simple-prompt'],
      );
      const got = await client.getPrompt({ name: 'simple-prompt' });
      assert.ok(got.messages.length > 0);
      await assertDenied(client.getPrompt({ name: 'args-prompt', arguments: { city: 'x' } }));
    });
    await t.test('resources: list filtered to the policy, read allowed and denied', async () => {
      const resources = await client.listResources();
      assert.ok(resources.resources.length > 0, 'some documents are listed');
      for (const r of resources.resources) assert.ok(r.uri.startsWith(DOC), r.uri);
      const first = resources.resources[0]?.uri as string;
      const read = await client.readResource({ uri: first });
      assert.equal(read.contents[0]?.uri, first);
      await assertDenied(client.readResource({ uri: 'demo://resource/dynamic/text/1' }));
    });
    await t.test('legacy SSE transport: the same decisions', async (st) => {
      const sse = await connect(st, w, { transport: 'sse' });
      assert.equal(await echo(sse, 'over sse'), 'Echo: over sse');
      await assertDenied(sse.callTool({ name: 'get-env', arguments: {} }));
      assert.deepEqual(
        (await sse.listTools()).tools.map((x) => x.name),
        ['echo'],
      );
    });
    await client.close();
    await w.stop();
  },
);

test(
  'cedarv1 with OIDC: the groups claim of a real token (oidc-provider) is the principal’s parent group',
  { timeout: 180_000 },
  async (t) => {
    const idp = await startIdp(t, { groups: ['eng', 'oncall'] });
    const w = await workload(t, 'cedar-oidc', {
      oidc_config: {
        issuer: idp.issuer,
        audience: PROXY_AUDIENCE,
        insecureAllowHTTP: true,
        resourceURL: PROXY_AUDIENCE,
      },
      ...cedar([
        'permit(principal in THVGroup::"eng", action == Action::"call_tool", resource == Tool::"echo") when { principal.claim_iss like "http://127.0.0.1:*" };',
        'permit(principal in THVGroup::"admins", action == Action::"call_tool", resource == Tool::"get-env");',
      ]),
    });
    const client = await connect(t, w, { token: await idp.clientToken(PROXY_AUDIENCE) });
    assert.equal(await echo(client, 'from eng'), 'Echo: from eng');
    await assertDenied(client.callTool({ name: 'get-env', arguments: {} }));
    assert.deepEqual(
      (await client.listTools()).tools.map((x) => x.name),
      ['echo'],
    );
    await client.close();
    await w.stop();
  },
);

interface Pdp {
  url: string;
  /** Every PORC body received, in order. */
  seen: Array<Record<string, unknown>>;
}

/**
 * A decision point on loopback: `echo` allowed, `get-env` denied, `get-sum` answers 500,
 * `get-tiny-image` never answers (the workload's timeout), anything else denied.
 */
async function startPdp(t: TestContext): Promise<Pdp> {
  const pdp: Pdp = { url: '', seen: [] };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      assert.equal(req.url, '/pdp/decision');
      assert.equal(req.method, 'POST');
      const porc = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      pdp.seen.push(porc);
      const resource = String(porc['resource']);
      if (resource.endsWith(':tool:get-tiny-image')) return; // hangs
      if (resource.endsWith(':tool:get-sum')) {
        res.writeHead(500).end('{"allow":true}');
        return;
      }
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ allow: resource.endsWith(':tool:echo') }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  pdp.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/pdp/`;
  t.after(() => closeServer(server));
  return pdp;
}

test(
  'httpv1 through a real workload: the decision point allows, denies; 500 and a timeout deny; lists are filtered; the PORC body',
  { timeout: 180_000 },
  async (t) => {
    const pdp = await startPdp(t);
    const w = await workload(t, 'pdp-guarded', {
      authz_config: {
        version: '1.0',
        type: 'httpv1',
        pdp: {
          http: { url: pdp.url, timeout: 0.5 },
          claim_mapping: 'mpe',
          context: { include_args: true, include_operation: true },
        },
      },
    });
    const client = await connect(t, w);

    const tools = await client.listTools();
    assert.deepEqual(
      tools.tools.map((x) => x.name),
      ['echo'],
      'the list keeps what the decision point allows (500 and the hang drop theirs)',
    );
    assert.equal(await echo(client, 'pdp'), 'Echo: pdp');
    await assertDenied(client.callTool({ name: 'get-env', arguments: {} }));
    await assertDenied(client.callTool({ name: 'get-sum', arguments: { a: 1, b: 2 } }));
    const started = Date.now();
    await assertDenied(client.callTool({ name: 'get-tiny-image', arguments: {} }));
    assert.ok(Date.now() - started < 10_000, 'the timeout (0.5 s) decides, not the client');

    const user = userInfo().username || 'local';
    const echoCall = pdp.seen.find(
      (p) =>
        p['resource'] === 'mrn:mcp:pdp-guarded:tool:echo' &&
        (p['context'] as { mcp: { args?: unknown } }).mcp.args,
    );
    assert.deepEqual(echoCall, {
      principal: { sub: user, mannotations: {} },
      operation: 'mcp:tool:call',
      resource: 'mrn:mcp:pdp-guarded:tool:echo',
      context: {
        mcp: {
          feature: 'tool',
          operation: 'call',
          resource_id: 'echo',
          args: { message: 'pdp' },
          // Annotations from the tools/list the proxy saw (as in ToolHive).
          annotations: {
            readOnlyHint: true,
            destructiveHint: false,
            idempotentHint: true,
            openWorldHint: false,
          },
        },
      },
    });
    await client.close();
    await w.stop();
  },
);
