/**
 * Webhooks on the wire (as ToolHive's webhook middlewares call them): the official MCP SDK client →
 * the proxy with the webhook stages → server-everything as a stdio child, and webhook receivers on
 * loopback (HTTP with insecure_skip_verify, HTTPS with a self-signed CA, mutual TLS). One proxy and
 * one client session serve every case; each case installs its own stages. Every row of the §3.3
 * failure_policy table is driven with a real failure: a dead port, a receiver that never answers,
 * HTTP 500, HTTP 422, a body that is not JSON, bad patches.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { generateSelfSignedCert } from '../../../src/control/operator/certs.js';
import { localUserClaims } from '../../../src/dataplane/pipeline/identity.js';
import {
  mutatingWebhookStage,
  validatingWebhookStage,
} from '../../../src/dataplane/pipeline/stages/webhooks.js';
import type { Stage, StageFactory } from '../../../src/dataplane/pipeline/types.js';
import type { ProxyMiddleware } from '../../../src/dataplane/proxy/index.js';
import { silentLogger } from '../../../src/shared/index.js';
import { parseRunConfig } from '../../../src/workloads/index.js';
import { freePort } from '../../helpers/net.js';
import { proxyFor, spawnEverything } from '../proxy/helpers.js';
import { ALLOW, type Answer, DENY, startReceiver } from './receiver.js';

const deps = {
  config: parseRunConfig({ name: 'everything', image: 'cmd://node' }),
  logger: silentLogger,
  secretLookup: async () => undefined,
};

interface Refusal {
  status: number;
  body: { jsonrpc: string; id?: unknown; error: { code: number; message: string } };
}

/** The HTTP status and JSON-RPC body of a call the proxy refused (the SDK's StreamableHTTPError). */
async function refused(call: Promise<unknown>): Promise<Refusal> {
  try {
    await call;
  } catch (err) {
    const e = err as { code?: number; message: string };
    const text = e.message.slice(e.message.indexOf('{'));
    return { status: e.code ?? 0, body: JSON.parse(text) as Refusal['body'] };
  }
  assert.fail('the call was not refused');
}

function echoText(result: unknown): string {
  return (result as { content: { text: string }[] }).content[0]?.text ?? '';
}

test('webhooks through the proxy with the MCP SDK client', { timeout: 180_000 }, async (t) => {
  const child = spawnEverything(t);
  let stages: Stage[] = [];
  const switchable: ProxyMiddleware = {
    name: 'webhooks-under-test',
    async handle(ctx) {
      for (const stage of stages) {
        const rejected = await stage.handle(ctx);
        if (rejected !== undefined) return rejected;
      }
      return undefined;
    },
  };
  const proxy = await proxyFor(t, child, { middlewares: [switchable], serverName: 'everything' });
  const client = new Client({ name: 'webhook-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`)));
  t.after(() => client.close());

  let id = 0;
  const echo = (message: string) => client.callTool({ name: 'echo', arguments: { message } });

  /** Installs the stages for one case (mutating first, as in the pipeline); removed after it. */
  async function install(
    st: TestContext,
    config: { mutating?: unknown[]; validating?: unknown[] },
  ): Promise<void> {
    const built: Stage[] = [];
    const pairs: Array<[StageFactory, unknown[] | undefined]> = [
      [mutatingWebhookStage, config.mutating],
      [validatingWebhookStage, config.validating],
    ];
    for (const [factory, webhooks] of pairs) {
      if (webhooks === undefined) continue;
      const stage = await factory.create({ webhooks, server_name: 'everything', transport: 'stdio' }, deps);
      assert.ok(stage !== undefined);
      built.push(stage);
    }
    stages = built;
    st.after(async () => {
      stages = [];
      await Promise.all(built.map((s) => s.close?.()));
    });
  }

  const plain = (url: string, failure_policy: 'fail' | 'ignore', extra: Record<string, unknown> = {}) => ({
    name: `hook-${++id}`,
    url,
    failure_policy,
    tls_config: { insecure_skip_verify: true },
    ...extra,
  });

  await t.test(
    'validating, allowed: the receiver gets the reference envelope; the call goes through',
    async (st) => {
      const receiver = await startReceiver(st, { respond: () => ALLOW });
      await install(st, { validating: [plain(receiver.url, 'fail')] });
      const before = Date.now();
      assert.equal(echoText(await echo('hello')), 'Echo: hello');
      assert.equal(receiver.calls.length, 1);
      const call = receiver.calls[0]!;
      assert.equal(call.headers['content-type'], 'application/json');
      assert.equal(call.headers['x-toolhive-signature'], undefined, 'no key, no signature');
      const body = call.body;
      assert.deepEqual(Object.keys(body), [
        'version',
        'uid',
        'timestamp',
        'principal',
        'mcp_request',
        'context',
      ]);
      assert.equal(body['version'], 'v0.1.0');
      assert.match(
        String(body['uid']),
        /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      );
      const at = Date.parse(String(body['timestamp']));
      assert.ok(at >= before - 1000 && at <= Date.now(), 'timestamp is now, UTC RFC 3339');
      assert.equal(body.mcp_request['method'], 'tools/call');
      assert.deepEqual(body.mcp_request.params?.['arguments'], { message: 'hello' });
      assert.equal(body.mcp_request.params?.['name'], 'echo');
      assert.deepEqual(body.context, {
        server_name: 'everything',
        source_ip: '127.0.0.1',
        transport: 'stdio',
      });
      // No inbound auth here: the principal is the local user, credential-free.
      const local = localUserClaims();
      assert.equal(body.principal?.['sub'], local['sub']);
      assert.equal(body.principal?.['email'], local['email']);
      assert.equal((body.principal?.['claims'] as Record<string, unknown>)['iss'], 'toolhive-local');
      assert.equal(body.principal?.['platform_user_id'], undefined);
    },
  );

  await t.test(
    'validating, allowed:false → 403, JSON-RPC 403 "Request denied by policy", id echoed',
    async (st) => {
      const receiver = await startReceiver(st, { respond: () => DENY });
      await install(st, { validating: [plain(receiver.url, 'ignore')] });
      const { status, body } = await refused(echo('x'));
      assert.equal(status, 403);
      assert.equal(body.error.code, 403);
      assert.equal(body.error.message, 'Request denied by policy');
      assert.equal(typeof body.id, 'number', 'the request id is echoed');
      assert.ok(
        !JSON.stringify(body).includes('internal policy detail'),
        "the webhook's message is not passed on",
      );
    },
  );

  await t.test('validating webhooks run in order; the first denial stops the chain', async (st) => {
    const first = await startReceiver(st, { respond: () => ALLOW });
    const second = await startReceiver(st, { respond: () => DENY });
    const third = await startReceiver(st, { respond: () => ALLOW });
    await install(st, {
      validating: [plain(first.url, 'fail'), plain(second.url, 'fail'), plain(third.url, 'fail')],
    });
    assert.equal((await refused(echo('x'))).status, 403);
    assert.deepEqual([first.calls.length, second.calls.length, third.calls.length], [1, 1, 0]);
  });

  /** Failures that `failure_policy` governs, each produced for real. */
  async function failures(st: TestContext): Promise<Array<[string, string, Record<string, unknown>]>> {
    const deadPort = await freePort();
    const hang = await startReceiver(st, { respond: () => 'hang' });
    const error500 = await startReceiver(st, { respond: () => ({ status: 500, json: { error: 'boom' } }) });
    const notJson = await startReceiver(st, { respond: () => ({ status: 200, text: 'allowed: yes' }) });
    const redirect = await startReceiver(st, { respond: () => ({ status: 307, text: '' }) });
    return [
      ['dead port', `http://127.0.0.1:${deadPort}/hook`, {}],
      ['timeout', hang.url, { timeout: '1s' }],
      ['HTTP 500', error500.url, {}],
      ['bad JSON', notJson.url, {}],
      ['a redirect', redirect.url, {}],
    ];
  }

  await t.test(
    'validating failures: fail → 403 "Request denied by policy"; ignore → the call goes through',
    async (st) => {
      for (const [what, url, extra] of await failures(st)) {
        await st.test(what, async (sst) => {
          await install(sst, { validating: [plain(url, 'fail', extra)] });
          const { status, body } = await refused(echo('x'));
          assert.equal(status, 403, what);
          assert.deepEqual(body.error, { code: 403, message: 'Request denied by policy' });
        });
        await st.test(`${what} (ignore)`, async (sst) => {
          await install(sst, { validating: [plain(url, 'ignore', extra)] });
          assert.equal(echoText(await echo('through')), 'Echo: through');
        });
      }
    },
  );

  await t.test('validating, HTTP 422 → 403 whatever failure_policy says', async (st) => {
    const receiver = await startReceiver(st, { respond: () => ({ status: 422, json: { allowed: true } }) });
    for (const policy of ['fail', 'ignore'] as const) {
      await install(st, { validating: [plain(receiver.url, policy)] });
      const { status, body } = await refused(echo('x'));
      assert.equal(status, 403);
      assert.deepEqual(body.error, { code: 403, message: 'Request denied by policy' });
    }
  });

  const patchAnswer = (patch: unknown, patch_type = 'json_patch'): Answer => ({
    status: 200,
    json: { version: 'v0.1.0', allowed: true, patch_type, patch },
  });

  await t.test(
    'mutating: a patch changes a tool argument, the server sees it, the validating webhook too',
    async (st) => {
      const mutator = await startReceiver(st, {
        respond: () =>
          patchAnswer([
            { op: 'test', path: '/mcp_request/params/name', value: 'echo' },
            { op: 'replace', path: '/mcp_request/params/arguments/message', value: 'patched by webhook' },
          ]),
      });
      const validator = await startReceiver(st, { respond: () => ALLOW });
      await install(st, {
        mutating: [plain(mutator.url, 'fail')],
        validating: [plain(validator.url, 'fail')],
      });
      assert.equal(echoText(await echo('original')), 'Echo: patched by webhook');
      assert.deepEqual(mutator.calls[0]?.body.mcp_request.params?.['arguments'], { message: 'original' });
      assert.deepEqual(validator.calls[0]?.body.mcp_request.params?.['arguments'], {
        message: 'patched by webhook',
      });
    },
  );

  await t.test("mutating webhooks chain: the second sees the first one's patch", async (st) => {
    const first = await startReceiver(st, {
      respond: () =>
        patchAnswer([{ op: 'replace', path: '/mcp_request/params/arguments/message', value: 'one' }]),
    });
    const second = await startReceiver(st, {
      respond: (call) =>
        patchAnswer([
          {
            op: 'replace',
            path: '/mcp_request/params/arguments/message',
            value: `${String((call.body.mcp_request.params?.['arguments'] as { message: string }).message)}+two`,
          },
        ]),
    });
    await install(st, { mutating: [plain(first.url, 'fail'), plain(second.url, 'fail')] });
    assert.equal(echoText(await echo('zero')), 'Echo: one+two');
  });

  await t.test(
    'mutating, allowed:false → 403 "Request denied by webhook policy" whatever the policy',
    async (st) => {
      const receiver = await startReceiver(st, { respond: () => DENY });
      for (const policy of ['fail', 'ignore'] as const) {
        await install(st, { mutating: [plain(receiver.url, policy)] });
        const { status, body } = await refused(echo('x'));
        assert.equal(status, 403);
        assert.deepEqual(body.error, { code: 403, message: 'Request denied by webhook policy' });
      }
    },
  );

  await t.test('mutating, HTTP 422 → 422, JSON-RPC 403, whatever the policy', async (st) => {
    const receiver = await startReceiver(st, { respond: () => ({ status: 422, json: {} }) });
    for (const policy of ['fail', 'ignore'] as const) {
      await install(st, { mutating: [plain(receiver.url, policy)] });
      const { status, body } = await refused(echo('x'));
      assert.equal(status, 422);
      assert.deepEqual(body.error, { code: 403, message: 'Request denied by webhook policy' });
    }
  });

  await t.test('mutating failures: fail → 500 "Webhook error"; ignore → the body unchanged', async (st) => {
    for (const [what, url, extra] of await failures(st)) {
      await st.test(what, async (sst) => {
        await install(sst, { mutating: [plain(url, 'fail', extra)] });
        const { status, body } = await refused(echo('x'));
        assert.equal(status, 500, what);
        assert.deepEqual(body.error, { code: -32603, message: 'Webhook error' });
      });
      await st.test(`${what} (ignore)`, async (sst) => {
        await install(sst, { mutating: [plain(url, 'ignore', extra)] });
        assert.equal(echoText(await echo('unchanged')), 'Echo: unchanged');
      });
    }
  });

  await t.test(
    'mutating, bad patches: fail → 500 with the reason; ignore → the body unchanged',
    async (st) => {
      const cases: Array<[unknown, string, string]> = [
        [{ op: 'replace' }, 'json_patch', 'Malformed patch from webhook'],
        [
          [{ op: 'merge', path: '/mcp_request/params', value: {} }],
          'json_patch',
          'Invalid patch from webhook',
        ],
        [
          [{ op: 'replace', path: '/principal/sub', value: 'root' }],
          'json_patch',
          'Patch must be scoped to mcp_request',
        ],
        [
          [{ op: 'remove', path: '/mcp_request/params/nothing' }],
          'json_patch',
          'Failed to apply patch from webhook',
        ],
        [
          [{ op: 'add', path: '/mcp_request/x', value: 1 }],
          'strategic_merge',
          'Unsupported patch type from webhook',
        ],
      ];
      for (const [patch, type, message] of cases) {
        const receiver = await startReceiver(st, { respond: () => patchAnswer(patch, type) });
        await st.test(message, async (sst) => {
          await install(sst, { mutating: [plain(receiver.url, 'fail')] });
          const { status, body } = await refused(echo('x'));
          assert.equal(status, 500);
          assert.deepEqual(body.error, { code: -32603, message });
        });
        await st.test(`${message} (ignore)`, async (sst) => {
          await install(sst, { mutating: [plain(receiver.url, 'ignore')] });
          assert.equal(echoText(await echo('unchanged')), 'Echo: unchanged');
        });
      }
    },
  );

  await t.test(
    'mutating: a patch that leaves no MCP request → 500 "Webhook produced an invalid MCP request"',
    async (st) => {
      const receiver = await startReceiver(st, {
        respond: () => patchAnswer([{ op: 'remove', path: '/mcp_request/method' }]),
      });
      await install(st, { mutating: [plain(receiver.url, 'ignore')] });
      const { status, body } = await refused(echo('x'));
      assert.equal(status, 500);
      assert.deepEqual(body.error, { code: -32603, message: 'Webhook produced an invalid MCP request' });
    },
  );

  await t.test('a request body over 1 MiB → 413, JSON-RPC -32600, no webhook called', async (st) => {
    const receiver = await startReceiver(st, { respond: () => ALLOW });
    await install(st, { validating: [plain(receiver.url, 'ignore')] });
    const { status, body } = await refused(echo('x'.repeat(1024 * 1024)));
    assert.equal(status, 413);
    assert.deepEqual(body.error, { code: -32600, message: 'Request body exceeds maximum size' });
    assert.equal(receiver.calls.length, 0);
  });

  await t.test(
    'HTTPS: a self-signed CA given as ca_bundle_path is trusted; HMAC verified by the receiver',
    async (st) => {
      const dir = mkdtempSync(join(tmpdir(), 'skep-webhook-tls-'));
      st.after(() => rmSync(dir, { recursive: true, force: true }));
      const server = generateSelfSignedCert(['127.0.0.1']);
      writeFileSync(join(dir, 'ca.crt'), server.cert);
      const key = Buffer.from('a shared webhook key');
      const keyFile = join(dir, 'hmac');
      writeFileSync(keyFile, key);
      const receiver = await startReceiver(st, { tls: server, key, respond: () => ALLOW });
      await install(st, {
        validating: [
          {
            name: 'tls-hook',
            url: receiver.url,
            failure_policy: 'fail',
            tls_config: { ca_bundle_path: join(dir, 'ca.crt') },
            hmac_secret_ref: keyFile,
          },
        ],
      });
      assert.equal(echoText(await echo('over tls')), 'Echo: over tls');
      assert.equal(receiver.calls.length, 1);
      assert.equal(receiver.calls[0]?.signatureValid, true);
      assert.match(String(receiver.calls[0]?.headers['x-toolhive-signature']), /^sha256=[0-9a-f]{64}$/);
      assert.match(String(receiver.calls[0]?.headers['x-toolhive-timestamp']), /^\d{10}$/);
    },
  );

  await t.test(
    'HTTPS: an untrusted certificate fails the call (fail → 403); insecure_skip_verify accepts it',
    async (st) => {
      const receiver = await startReceiver(st, {
        tls: generateSelfSignedCert(['127.0.0.1']),
        respond: () => ALLOW,
      });
      await install(st, { validating: [{ name: 'untrusted', url: receiver.url, failure_policy: 'fail' }] });
      assert.equal((await refused(echo('x'))).status, 403);
      assert.equal(receiver.calls.length, 0, 'the TLS handshake failed before any request');
      await install(st, { validating: [plain(receiver.url, 'fail')] });
      assert.equal(echoText(await echo('skip verify')), 'Echo: skip verify');
    },
  );

  await t.test(
    'mutual TLS: client_cert_path/client_key_path are presented to a receiver that requires them',
    async (st) => {
      const dir = mkdtempSync(join(tmpdir(), 'skep-webhook-mtls-'));
      st.after(() => rmSync(dir, { recursive: true, force: true }));
      const server = generateSelfSignedCert(['127.0.0.1']);
      const clientCert = generateSelfSignedCert(['skep-proxy']);
      for (const [file, text] of [
        ['ca.crt', server.cert],
        ['client.crt', clientCert.cert],
        ['client.key', clientCert.key],
      ] as const)
        writeFileSync(join(dir, file), text);
      const receiver = await startReceiver(st, {
        tls: { ...server, ca: clientCert.cert, requestCert: true, rejectUnauthorized: true },
        respond: () => ALLOW,
      });
      const tls = { ca_bundle_path: join(dir, 'ca.crt') };
      await install(st, {
        validating: [{ name: 'no-cert', url: receiver.url, failure_policy: 'fail', tls_config: tls }],
      });
      assert.equal(
        (await refused(echo('x'))).status,
        403,
        'without the client certificate the receiver refuses',
      );
      await install(st, {
        validating: [
          {
            name: 'with-cert',
            url: receiver.url,
            failure_policy: 'fail',
            tls_config: {
              ...tls,
              client_cert_path: join(dir, 'client.crt'),
              client_key_path: join(dir, 'client.key'),
            },
          },
        ],
      });
      assert.equal(echoText(await echo('mtls')), 'Echo: mtls');
      assert.equal(receiver.calls.length, 1);
    },
  );
});
