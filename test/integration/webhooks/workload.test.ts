/**
 * Webhooks through a real workload: a run configuration with `validating_webhooks` and
 * `mutating_webhooks` imported like `skep run --from-config`, its runner run in this process
 * (the pipeline built from the run configuration, the proxy, server-everything as a stdio
 * child), the official MCP SDK client over streamable HTTP and legacy SSE. The validating
 * receiver is HTTPS with a self-signed CA and checks an HMAC whose key comes from Skep's
 * encrypted secrets store by reference (`name,target=X`); the mutating receiver is plain HTTP
 * (insecure_skip_verify) with a key file that is rotated between calls.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { generateSelfSignedCert } from '../../../src/control/operator/certs.js';
import {
  everythingBody,
  inProcessManager,
  runInProcess,
  waitFor,
  workloadEndpoint,
} from '../workloads/helpers.js';
import { ALLOW, DENY, type ReceivedCall, startReceiver } from './receiver.js';

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'skep-webhook-wl-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const messageOf = (call: ReceivedCall): string =>
  String((call.body.mcp_request.params?.['arguments'] as { message?: unknown } | undefined)?.message);

async function connect(t: TestContext, url: URL, sse = false): Promise<Client> {
  const client = new Client({ name: 'webhook-workload-test', version: '1.0.0' });
  await client.connect(sse ? new SSEClientTransport(url) : new StreamableHTTPClientTransport(url));
  t.after(() => client.close());
  return client;
}

async function echo(client: Client, message: string): Promise<string> {
  const result = (await client.callTool({ name: 'echo', arguments: { message } })) as {
    content: { text: string }[];
  };
  return result.content[0]?.text ?? '';
}

test(
  'run config webhooks in a real workload: HTTPS + secrets-store HMAC, HTTP + rotated key file',
  { timeout: 300_000 },
  async (t) => {
    const dir = tempDir(t);
    const { ctx, manager } = inProcessManager(t);

    // The validating key lives in Skep's encrypted secrets store; the run config names it only.
    await ctx.secrets.setup({ provider_type: 'encrypted', password: 'webhook-test-password' });
    const storeKey = 'validating key from the secrets store';
    await ctx.secrets.create('webhook-hmac', storeKey);

    const tls = generateSelfSignedCert(['127.0.0.1']);
    writeFileSync(join(dir, 'ca.crt'), tls.cert);
    const validator = await startReceiver(t, {
      tls,
      key: Buffer.from(storeKey),
      respond: (call) => (messageOf(call).includes('forbidden') ? DENY : ALLOW),
    });

    const keyFile = join(dir, 'mutating-hmac');
    let mutatingKey = Buffer.from('first mutating key');
    writeFileSync(keyFile, mutatingKey);
    const mutator = await startReceiver(t, {
      key: () => mutatingKey,
      respond: (call) =>
        call.body.mcp_request['method'] === 'tools/call'
          ? {
              status: 200,
              json: {
                version: 'v0.1.0',
                uid: call.body['uid'],
                allowed: true,
                patch_type: 'json_patch',
                patch: [
                  {
                    op: 'replace',
                    path: '/mcp_request/params/arguments/message',
                    value: `[checked] ${messageOf(call)}`,
                  },
                ],
              },
            }
          : ALLOW,
    });

    await manager.create(everythingBody('template'));
    const template = manager.exportConfig('template');
    await manager.createFromConfig(
      {
        ...template,
        mutating_webhooks: [
          {
            name: 'tagger',
            url: mutator.url,
            timeout: 5_000_000_000,
            failure_policy: 'fail',
            tls_config: { insecure_skip_verify: true },
            hmac_secret_ref: keyFile,
          },
        ],
        validating_webhooks: [
          {
            name: 'policy',
            url: validator.url,
            timeout: '5s',
            failure_policy: 'fail',
            tls_config: { ca_bundle_path: join(dir, 'ca.crt') },
            hmac_secret_ref: 'webhook-hmac,target=WEBHOOK_HMAC',
          },
        ],
      },
      { name: 'hooked' },
    );
    const controller = new AbortController();
    const done = runInProcess(ctx, 'hooked', controller.signal, undefined, ctx.secrets.lookup());
    // Stopped at the end of this test, before the home's store closes (`inProcessManager`'s
    // clean-up runs first among the after hooks).
    const stop = async (): Promise<void> => {
      controller.abort();
      assert.equal(await done, 0);
    };
    try {
      // The runner runs in this process under a pid no process has, so the manager's view (which
      // checks the runner is alive) would say unhealthy: read the record itself.
      await waitFor('hooked to be running', () =>
        manager.rows.get('hooked')?.status === 'running' ? true : undefined,
      );
      // Its working URLs, with the access token.
      const mcp = workloadEndpoint(manager, 'hooked');
      const sse = workloadEndpoint(manager, 'hooked', '/sse');

      await t.test(
        'streamable HTTP: the mutated call reaches the server; both receivers verified the HMAC',
        async (st) => {
          const client = await connect(st, new URL(mcp));
          const before = { m: mutator.calls.length, v: validator.calls.length };
          assert.equal(await echo(client, 'hello'), 'Echo: [checked] hello');
          const m = mutator.calls.slice(before.m).find((c) => c.body.mcp_request['method'] === 'tools/call');
          const v = validator.calls
            .slice(before.v)
            .find((c) => c.body.mcp_request['method'] === 'tools/call');
          assert.ok(m !== undefined && v !== undefined);
          assert.equal(messageOf(m), 'hello');
          assert.equal(messageOf(v), '[checked] hello', 'the validating webhook judges the mutated request');
          assert.equal(m.signatureValid, true);
          assert.equal(v.signatureValid, true);
          assert.deepEqual(v.body.context, {
            server_name: 'hooked',
            source_ip: '127.0.0.1',
            transport: 'stdio',
          });
          // As in ToolHive, every parsed request is sent, initialize and the initialized
          // notification included.
          const methods = validator.calls.map((c) => c.body.mcp_request['method']);
          assert.ok(methods.includes('initialize'), methods.join());
          assert.ok(methods.includes('notifications/initialized'), methods.join());
          assert.ok(validator.calls.every((c) => c.signatureValid === true));
        },
      );

      await t.test('a denial: HTTP 403 with JSON-RPC 403 "Request denied by policy"', async (st) => {
        const client = await connect(st, new URL(mcp));
        await assert.rejects(echo(client, 'forbidden thing'), (err: Error & { code?: number }) => {
          assert.equal(err.code, 403);
          const body = JSON.parse(err.message.slice(err.message.indexOf('{'))) as {
            error: { code: number; message: string };
          };
          assert.deepEqual(body.error, { code: 403, message: 'Request denied by policy' });
          return true;
        });
      });

      await t.test('a rotated key file is read on the next call', async (st) => {
        const client = await connect(st, new URL(mcp));
        mutatingKey = Buffer.from('second mutating key, after rotation');
        writeFileSync(keyFile, mutatingKey);
        const before = mutator.calls.length;
        assert.equal(await echo(client, 'after rotation'), 'Echo: [checked] after rotation');
        const rotated = mutator.calls.slice(before);
        assert.ok(rotated.length > 0);
        assert.ok(
          rotated.every((c) => c.signatureValid === true),
          'signed with the new key',
        );
      });

      await t.test('legacy SSE: the same webhooks apply', async (st) => {
        const client = await connect(st, new URL(sse), true);
        assert.equal(await echo(client, 'over sse'), 'Echo: [checked] over sse');
        await assert.rejects(echo(client, 'forbidden over sse'), /403|denied/i);
      });
    } finally {
      await stop();
    }
  },
);

test(
  'a webhook secret missing from the store stops the workload with an error naming it',
  { timeout: 120_000 },
  async (t) => {
    const { ctx, manager } = inProcessManager(t);
    await ctx.secrets.setup({ provider_type: 'encrypted', password: 'webhook-test-password' });
    await manager.create(everythingBody('template'));
    await manager.createFromConfig(
      {
        ...manager.exportConfig('template'),
        validating_webhooks: [
          {
            name: 'policy',
            url: 'https://127.0.0.1:9/hook',
            failure_policy: 'fail',
            hmac_secret_ref: 'no-such-key',
          },
        ],
      },
      { name: 'unsigned' },
    );
    const code = await runInProcess(
      ctx,
      'unsigned',
      new AbortController().signal,
      undefined,
      ctx.secrets.lookup(),
    );
    assert.notEqual(code, 0);
    const row = manager.rows.get('unsigned');
    assert.equal(row?.status, 'error');
    assert.match(
      row?.statusContext ?? '',
      /validating_webhooks\[0\] "policy": hmac_secret_ref: secret 'no-such-key' is not in the secrets provider/,
    );
  },
);
