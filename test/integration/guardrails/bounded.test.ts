/**
 * Guardrails on large and streamed answers, through real runners and the leaking fixture
 * (test/fixtures/mcp/guardrails-server.mjs) with the official MCP SDK client: a 1 MiB result
 * with a credential at its very end is redacted (a stdio line, and one SSE event of a
 * streamable-HTTP server); a long-lived legacy SSE stream carries many answers, each judged
 * on its own as it arrives; an answer over `maxInspectBytes` gets the guardrails error naming
 * the limit; and the proxy reads no more of one message than `maxUpstreamMessageBytes` (a
 * stdio line; a judged JSON body or SSE event of an HTTP server), answering the waiting
 * request with an error naming that limit instead.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createContext } from '../../../src/control/app/index.js';
import {
  Guard,
  GUARDRAILS_BLOCKED,
  parseGuardrailsConfig,
} from '../../../src/dataplane/middleware/guardrails/index.js';
import { type ProxyUpstream, startProxy } from '../../../src/dataplane/proxy/index.js';
import { INTERNAL_ERROR } from '../../../src/protocol/index.js';
import { WorkloadManager } from '../../../src/workloads/index.js';
import { tempHome } from '../../helpers/home.js';
import { runInProcess, waitFor, workloadEndpoint } from '../workloads/helpers.js';

const FIXTURE = fileURLToPath(new URL('../../fixtures/mcp/guardrails-server.mjs', import.meta.url));
const { LEAKS } = (await import(FIXTURE)) as { LEAKS: Record<string, string> };
const CREDENTIAL = LEAKS['credential'] as string;
const MARKER = '[REDACTED:aws_access_key_id]';

function managed(t: TestContext) {
  const home = tempHome(t);
  const ctx = createContext(home.config);
  const manager = new WorkloadManager({
    store: ctx.store,
    config: home.config,
    groups: ctx.groups,
    secretLookup: async () => undefined,
    spawnRunner: () => 99_999_999,
  });
  ctx.groups.attachMembers(manager);
  /** Clients, then runners: closed before the store they write their status to. */
  const cleanups: (() => Promise<unknown>)[] = [];
  t.after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    await manager.close();
    await ctx.close();
  });
  return { ctx, manager, cleanups };
}
type Managed = ReturnType<typeof managed>;

/** Creates `name` (with `extra` run-configuration fields through an export), runs it, gives its URL. */
async function runWorkload(
  t: TestContext,
  m: Managed,
  name: string,
  create: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Promise<string> {
  await m.manager.create({ name: `${name}-base`, ...create });
  await m.manager.createFromConfig({ ...m.manager.exportConfig(`${name}-base`), ...extra }, { name });
  const controller = new AbortController();
  const done = runInProcess(m.ctx, name, controller.signal);
  m.cleanups.push(async () => {
    controller.abort();
    await done;
  });
  await waitFor(`${name} to be running`, () => {
    const row = m.manager.rows.get(name);
    if (row?.status === 'error') throw new Error(`${name}: ${row.statusContext}`);
    return row?.status === 'running' ? true : undefined;
  });
  return workloadEndpoint(m.manager, name);
}

const stdioFixture = { image: `cmd://${process.execPath}`, cmd_arguments: [FIXTURE] };

/**
 * The fixture as an HTTP server (`http`: streamable HTTP answering over SSE, `http-json`:
 * answering with JSON bodies, `sse`: legacy SSE); its URL.
 */
async function httpFixture(t: TestContext, mode: 'http' | 'http-json' | 'sse'): Promise<string> {
  const child: ChildProcess = spawn(process.execPath, [FIXTURE, mode], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => child.kill());
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.stdout?.once('data', (chunk: Buffer) => resolve(chunk.toString('utf8').trim()));
  });
}

async function connect(cleanups: Managed['cleanups'], url: string, legacySse = false): Promise<Client> {
  const c = new Client({ name: 'guardrails-bounded-test', version: '1.0.0' });
  const endpoint = new URL(url);
  if (legacySse) endpoint.pathname = '/sse';
  await c.connect(legacySse ? new SSEClientTransport(endpoint) : new StreamableHTTPClientTransport(endpoint));
  cleanups.push(() => c.close());
  return c;
}

async function padded(c: Client, kb: number, what = 'credential'): Promise<string> {
  const r = (await c.callTool({ name: 'padded', arguments: { kb, what } }, undefined, {
    timeout: 60_000,
  })) as {
    content: { text: string }[];
  };
  return r.content[0]?.text ?? '';
}

async function failure(promise: Promise<unknown>): Promise<{ code: number; message: string; data: unknown }> {
  try {
    await promise;
  } catch (err) {
    const e = err as { code?: number; message: string; data?: unknown };
    return { code: e.code ?? 0, message: e.message, data: e.data };
  }
  assert.fail('the call did not fail');
}

/** The fixture as a stdio child of this process. */
function stdioChild(t: TestContext): ProxyUpstream {
  const child = spawn(process.execPath, [FIXTURE], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.after(() => child.kill());
  return { kind: 'stdio', stdin: child.stdin, stdout: child.stdout };
}

async function httpUpstream(t: TestContext, mode: 'http' | 'http-json' | 'sse'): Promise<ProxyUpstream> {
  const url = await httpFixture(t, mode);
  return { kind: 'http', url, transport: mode === 'sse' ? 'sse' : 'streamable-http' };
}

const rssMiB = (): number => process.memoryUsage().rss / 2 ** 20;

test(
  'a 1 MiB result with a credential at its very end is redacted: a stdio line, and one SSE event of an HTTP server',
  { timeout: 120_000 },
  async (t) => {
    const m = managed(t);
    const stdio = await runWorkload(t, m, 'big-stdio', stdioFixture);
    const upstream = await httpFixture(t, 'http');
    const remote = await runWorkload(t, m, 'big-remote', { url: upstream, transport: 'streamable-http' });
    for (const url of [stdio, remote]) {
      const text = await padded(await connect(m.cleanups, url), 1024);
      assert.ok(text.length > 1024 * 1024, url);
      assert.ok(text.endsWith(` ${MARKER}.`), `${url}: the credential at the end is redacted`);
      assert.ok(!text.includes(CREDENTIAL), url);
    }
  },
);

test(
  'a long-lived legacy SSE stream: 200 answers of 64 KiB, each redacted on its own as it arrives',
  { timeout: 180_000 },
  async (t) => {
    const m = managed(t);
    const upstream = await httpFixture(t, 'sse');
    const url = await runWorkload(t, m, 'stream', { url: upstream, transport: 'sse' });
    const c = await connect(m.cleanups, url, true);
    await padded(c, 64); // warm up
    const before = rssMiB();
    let peak = before;
    const answers = 200;
    for (let i = 0; i < answers; i++) {
      const text = await padded(c, 64, i % 2 === 0 ? 'credential' : 'email');
      // Default guardrails: credentials redacted, e-mail addresses pass. Each event is judged
      // alone: a finding in one answer changes nothing in the next.
      if (i % 2 === 0) assert.ok(text.endsWith(` ${MARKER}.`), `answer ${i}`);
      else assert.ok(text.endsWith(` ${LEAKS['email']}.`), `answer ${i}`);
      assert.ok(!text.includes(CREDENTIAL), `answer ${i}`);
      peak = Math.max(peak, rssMiB());
    }
    // Context only (the runner, the fixture's client and the test share this process): what
    // ~13 MiB through one stream did to memory.
    process.stdout.write(
      `# ${answers} x 64 KiB on one SSE stream: RSS ${before.toFixed(0)} MiB before, ` +
        `peak ${peak.toFixed(0)} MiB, ${rssMiB().toFixed(0)} MiB after\n`,
    );
  },
);

test(
  'an answer over guardrails_config.maxInspectBytes is blocked with the error naming the limit; smaller ones are inspected',
  { timeout: 120_000 },
  async (t) => {
    const m = managed(t);
    const url = await runWorkload(t, m, 'limited', stdioFixture, {
      guardrails_config: {
        maxInspectBytes: 65_536,
        ownSecrets: { results: 'redact' },
        credentials: { results: 'redact' },
      },
    });
    const c = await connect(m.cleanups, url);
    assert.ok((await padded(c, 32)).endsWith(` ${MARKER}.`));
    const err = await failure(padded(c, 128));
    assert.equal(err.code, GUARDRAILS_BLOCKED);
    assert.match(
      err.message,
      /Blocked by guardrails: the answer is \d+ bytes, more than guardrails_config\.maxInspectBytes \(65536\) lets guardrails inspect/,
    );
    assert.ok(!err.message.includes(CREDENTIAL) && !JSON.stringify(err.data).includes(CREDENTIAL));
    assert.equal((err.data as { limit: string }).limit, 'maxInspectBytes');
    // The session goes on.
    assert.ok((await padded(c, 1)).endsWith(` ${MARKER}.`));
  },
);

test(
  'the proxy reads at most maxUpstreamMessageBytes of one answer (stdio line, JSON body, SSE event): a JSON-RPC error names the limit',
  { timeout: 120_000 },
  async (t) => {
    const cleanups: Managed['cleanups'] = [];
    t.after(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup();
    });
    const guard = new Guard({ config: parseGuardrailsConfig({}), secrets: new Map(), report: () => {} });
    const max = 256 * 1024;
    for (const mode of ['stdio', 'http', 'http-json', 'sse'] as const) {
      const proxy = await startProxy({
        port: 0,
        upstream: mode === 'stdio' ? stdioChild(t) : await httpUpstream(t, mode),
        middlewares: [{ name: 'guardrails', handle: async (ctx) => guard.handle(ctx) }],
        limits: { maxUpstreamMessageBytes: max },
      });
      cleanups.push(() => proxy.close());
      const c = await connect(cleanups, `${proxy.url}/mcp`, mode === 'sse');
      assert.ok((await padded(c, 64)).endsWith(` ${MARKER}.`), mode);
      const err = await failure(padded(c, 512));
      assert.equal(err.code, INTERNAL_ERROR, mode);
      assert.match(
        err.message,
        /The server's answer is larger than 262144 bytes, the most the proxy reads of one message \(maxUpstreamMessageBytes\); it was not relayed/,
        mode,
      );
      assert.deepEqual(err.data, { maxUpstreamMessageBytes: max });
    }
  },
);
