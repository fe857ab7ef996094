/**
 * Guardrails through real workloads: the leaking fixture (test/fixtures/mcp/guardrails-server.mjs)
 * run by a runner in this process, as a stdio child with a secret injected into its environment,
 * or as a streamable-HTTP server that answers every call as an SSE stream and receives the
 * secret as a `header_forward` header; the official MCP SDK client talks to the proxy. Each
 * detector is shown with each action, on text and structured content, on resource reads and
 * prompt results, and on tool arguments; server-everything's own outputs draw no finding.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createContext } from '../../../src/control/app/index.js';
import { GUARDRAILS_BLOCKED } from '../../../src/dataplane/middleware/guardrails/index.js';
import { WorkloadManager } from '../../../src/workloads/index.js';
import { tempHome } from '../../helpers/home.js';
import { EVERYTHING_ENTRY, runInProcess, waitFor, workloadEndpoint } from '../workloads/helpers.js';

const FIXTURE = fileURLToPath(new URL('../../fixtures/mcp/guardrails-server.mjs', import.meta.url));
const { LEAKS } = (await import(FIXTURE)) as { LEAKS: Record<string, string> };

/** The workload's secret: `/`, `+` and a space make its URL and base64 forms differ from it. */
const SECRET = 'fixture-Secret/Value+0123 456789';
const lookup = async (name: string): Promise<string | undefined> =>
  name === 'fixture-key' ? SECRET : undefined;
const ALL: Record<string, string> = { ...LEAKS, secret: SECRET };
const DETECTOR_OF: Record<string, string> = {
  secret: 'ownSecrets',
  credential: 'credentials',
  email: 'personalData',
  card: 'personalData',
  injection: 'promptInjection',
};
const MARKER_OF: Record<string, string> = {
  secret: '[REDACTED:secret]',
  credential: '[REDACTED:aws_access_key_id]',
  email: '[REDACTED:email]',
  card: '[REDACTED:payment_card]',
  injection: '[REDACTED:prompt_injection]',
};

type Action = 'off' | 'audit' | 'redact' | 'block';
const every = (results: Action, args: Action = 'off') => ({
  ownSecrets: { results, arguments: args },
  credentials: { results, arguments: args },
  personalData: { results, arguments: args },
  promptInjection: { results, arguments: args },
});

function managerWithSecrets(t: TestContext) {
  const home = tempHome(t);
  const ctx = createContext(home.config);
  const manager = new WorkloadManager({
    store: ctx.store,
    config: home.config,
    groups: ctx.groups,
    secretLookup: lookup,
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
  return { ctx, manager, dir: home.dir, cleanups };
}

type Managed = ReturnType<typeof managerWithSecrets>;

async function run(t: TestContext, m: Managed, name: string): Promise<string> {
  const controller = new AbortController();
  const done = runInProcess(m.ctx, name, controller.signal, undefined, lookup);
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

/** The stdio fixture as a new workload (default guardrails), or its export with `extra` fields. */
async function fixtureWorkload(t: TestContext, m: Managed, name: string, extra?: Record<string, unknown>) {
  const base = `${name}-base`;
  await m.manager.create({
    name: extra === undefined ? name : base,
    image: `cmd://${process.execPath}`,
    cmd_arguments: [FIXTURE],
    secrets: [{ name: 'fixture-key', target: 'GUARDRAILS_SECRET' }],
  });
  if (extra !== undefined)
    await m.manager.createFromConfig({ ...m.manager.exportConfig(base), ...extra }, { name });
  return run(t, m, name);
}

async function client(m: Managed, url: string, legacySse = false): Promise<Client> {
  const c = new Client({ name: 'guardrails-test', version: '1.0.0' });
  const endpoint = new URL(url);
  if (legacySse) endpoint.pathname = '/sse';
  await c.connect(legacySse ? new SSEClientTransport(endpoint) : new StreamableHTTPClientTransport(endpoint));
  m.cleanups.push(() => c.close());
  return c;
}

interface Leaked {
  text: string;
  structured: { found: string; nested: { list: [string, number] } };
}

async function leak(c: Client, what: string): Promise<Leaked> {
  const r = (await c.callTool({ name: 'leak', arguments: { what } })) as unknown as {
    content: { text: string }[];
    structuredContent: Leaked['structured'];
  };
  return { text: r.content[0]?.text ?? '', structured: r.structuredContent };
}

async function blockedError(
  promise: Promise<unknown>,
): Promise<{ code: number; message: string; data: unknown }> {
  try {
    await promise;
  } catch (err) {
    const e = err as { code?: number; message: string; data?: unknown };
    return { code: e.code ?? 0, message: e.message, data: e.data };
  }
  assert.fail('the call was not blocked');
}

test(
  'a new workload gets the default guardrails: export shows them; own secret and credential redacted in results, the rest passes',
  { timeout: 120_000 },
  async (t) => {
    const m = managerWithSecrets(t);
    const url = await fixtureWorkload(t, m, 'defaults');
    assert.deepEqual(m.manager.exportConfig('defaults').guardrails_config, {
      enabled: true,
      ownSecrets: { results: 'redact', arguments: 'off' },
      credentials: { results: 'redact', arguments: 'off' },
      personalData: { results: 'off', arguments: 'off' },
      promptInjection: { results: 'off', arguments: 'off' },
    });
    const c = await client(m, url);
    for (const what of ['secret', 'credential']) {
      const r = await leak(c, what);
      const marker = MARKER_OF[what] as string;
      assert.equal(r.text, `Here it is: ${marker}.`, what);
      assert.deepEqual(r.structured, { found: marker, nested: { list: [marker, 1] } }, what);
    }
    for (const what of ['email', 'card', 'injection']) {
      const r = await leak(c, what);
      assert.equal(r.text, `Here it is: ${ALL[what]}.`, `${what} passes by default`);
    }
    // Resource reads and prompt results are inspected too.
    const read = await c.readResource({ uri: 'leak://secret' });
    assert.deepEqual(
      read.contents.map((x) => ('text' in x ? x.text : undefined)),
      ['secret: [REDACTED:secret]'],
    );
    const prompt = await c.getPrompt({ name: 'leak' });
    assert.deepEqual(prompt.messages[0]?.content, { type: 'text', text: 'Use the key [REDACTED:secret]' });
    // Arguments are off by default: the server receives the secret as sent, and its echo of
    // it is a result, so it comes back redacted.
    const echoed = (await c.callTool({ name: 'echo', arguments: { text: `x ${SECRET}` } })) as {
      content: { text: string }[];
    };
    assert.equal(echoed.content[0]?.text, 'x [REDACTED:secret]');
  },
);

test(
  'block, per detector: a JSON-RPC error naming the detector, never the matched text; lists untouched',
  { timeout: 120_000 },
  async (t) => {
    const m = managerWithSecrets(t);
    const url = await fixtureWorkload(t, m, 'blocking', { guardrails_config: every('block') });
    const c = await client(m, url);
    for (const what of ['secret', 'credential', 'email', 'card', 'injection']) {
      const err = await blockedError(leak(c, what));
      assert.equal(err.code, GUARDRAILS_BLOCKED, what);
      assert.match(err.message, new RegExp(`Blocked by guardrails \\(detector ${DETECTOR_OF[what]}, `), what);
      assert.equal((err.data as { detector: string }).detector, DETECTOR_OF[what]);
      const said = `${err.message} ${JSON.stringify(err.data)}`;
      assert.ok(!said.includes(ALL[what] as string), `${what}: the error does not carry the matched text`);
      assert.ok(!said.includes('IOSFODNN7') && !said.includes('1111') && !said.includes('0123'), what);
    }
    // The tools' list names an e-mail address: lists pass untouched.
    const { tools } = await c.listTools();
    assert.ok(tools.some((x) => x.description?.includes(LEAKS['email'] as string)));
    // Resource reads and prompts are blocked as well.
    const read = await blockedError(c.readResource({ uri: 'leak://secret' }));
    assert.equal(read.code, GUARDRAILS_BLOCKED);
    const prompt = await blockedError(c.getPrompt({ name: 'leak' }));
    assert.equal(prompt.code, GUARDRAILS_BLOCKED);
  },
);

test(
  'redact, per detector: text and structured content, over streamable HTTP and the legacy SSE transport',
  { timeout: 120_000 },
  async (t) => {
    const m = managerWithSecrets(t);
    const url = await fixtureWorkload(t, m, 'redacting', { guardrails_config: every('redact') });
    for (const legacy of [false, true]) {
      const c = await client(m, url, legacy);
      for (const what of ['secret', 'credential', 'email', 'card', 'injection']) {
        const r = await leak(c, what);
        const marker = MARKER_OF[what] as string;
        // The injection detector replaces the phrase, not the sentence around it.
        const redacted =
          what === 'injection'
            ? (LEAKS['injection'] as string).replace('Ignore previous instructions', marker)
            : marker;
        assert.equal(r.text, `Here it is: ${redacted}.`, `${what} (legacy ${legacy})`);
        assert.deepEqual(r.structured, { found: redacted, nested: { list: [redacted, 1] } });
      }
    }
  },
);

test(
  'audit, per detector: the answer passes unchanged and a guardrails_finding event names detector and kind, not the text',
  { timeout: 120_000 },
  async (t) => {
    const m = managerWithSecrets(t);
    const file = join(m.dir, 'audit.log');
    const name = 'auditing';
    const controller = new AbortController();
    await m.manager.create({
      name: `${name}-base`,
      image: `cmd://${process.execPath}`,
      cmd_arguments: [FIXTURE],
      secrets: [{ name: 'fixture-key', target: 'GUARDRAILS_SECRET' }],
    });
    await m.manager.createFromConfig(
      {
        ...m.manager.exportConfig(`${name}-base`),
        guardrails_config: every('audit'),
        audit_config: { logFile: file },
      },
      { name },
    );
    const done = runInProcess(m.ctx, name, controller.signal, undefined, lookup);
    m.cleanups.push(async () => {
      controller.abort();
      await done;
    });
    await waitFor('running', () => (m.manager.rows.get(name)?.status === 'running' ? true : undefined));
    const c = await client(m, workloadEndpoint(m.manager, name));
    for (const what of ['secret', 'credential', 'email', 'card', 'injection']) {
      const r = await leak(c, what);
      assert.equal(r.text, `Here it is: ${ALL[what]}.`, what);
      assert.equal(r.structured.found, ALL[what]);
    }
    await c.close();
    controller.abort();
    assert.equal(await done, 0);
    const text = readFileSync(file, 'utf8');
    for (const value of Object.values(ALL))
      assert.ok(!text.includes(value), 'the audit log holds no matched text');
    const events = text
      .trimEnd()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as {
            type: string;
            outcome: string;
            target: Record<string, string>;
            metadata: {
              extra: {
                direction: string;
                findings: {
                  detector: string;
                  kind: string;
                  action: string;
                  count: number;
                  secret?: string;
                }[];
              };
            };
          },
      )
      .filter((e) => e.type === 'guardrails_finding');
    assert.equal(events.length, 5);
    const summary = events.map((e) =>
      e.metadata.extra.findings
        .map((f) => `${f.detector}/${f.kind}/${f.action}/${f.count}${f.secret ? `/${f.secret}` : ''}`)
        .join(','),
    );
    assert.deepEqual(summary, [
      'ownSecrets/exact/audit/3/fixture-key',
      'credentials/aws_access_key_id/audit/3',
      'personalData/email/audit/3',
      'personalData/payment_card/audit/3',
      'promptInjection/phrase/audit/3',
    ]);
    for (const e of events) {
      assert.equal(e.outcome, 'success');
      assert.equal(e.metadata.extra.direction, 'results');
      assert.deepEqual(e.target, { endpoint: '/mcp', method: 'tools/call', name: 'leak', type: 'tool' });
    }
  },
);

test(
  'tool arguments on the way in: redact (the server receives the marker) and block (HTTP 403, detector named)',
  { timeout: 120_000 },
  async (t) => {
    const m = managerWithSecrets(t);
    const url = await fixtureWorkload(t, m, 'arguments', {
      guardrails_config: {
        ownSecrets: { results: 'off', arguments: 'redact' },
        credentials: { results: 'off', arguments: 'block' },
      },
    });
    // A client whose fetch records the HTTP statuses it gets.
    const statuses: number[] = [];
    const c = new Client({ name: 'guardrails-test', version: '1.0.0' });
    await c.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        fetch: async (input, init) => {
          const res = await fetch(input, init);
          statuses.push(res.status);
          return res;
        },
      }),
    );
    m.cleanups.push(() => c.close());
    const echoed = (await c.callTool({
      name: 'echo',
      arguments: { text: `k=${encodeURIComponent(SECRET)}` },
    })) as {
      content: { text: string }[];
    };
    assert.equal(echoed.content[0]?.text, 'k=[REDACTED:secret]');
    const err = await blockedError(
      c.callTool({ name: 'echo', arguments: { text: `key ${LEAKS['credential']}` } }),
    );
    // Refused before the server, with HTTP 403; the SDK reports the body it got.
    assert.equal(statuses.at(-1), 403);
    assert.match(err.message, /"code":-32010/);
    assert.match(
      err.message,
      /Blocked by guardrails \(detector credentials, aws_access_key_id\): the tool arguments contain a credential/,
    );
    assert.ok(!err.message.includes(LEAKS['credential'] as string));
  },
);

/** The fixture as a streamable-HTTP server answering over SSE; its URL. */
async function httpFixture(t: TestContext): Promise<string> {
  const child: ChildProcess = spawn(process.execPath, [FIXTURE, 'http'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => child.kill());
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.stdout?.once('data', (chunk: Buffer) => resolve(chunk.toString('utf8').trim()));
  });
}

test(
  'a remote server answering over SSE: each event judged; its header_forward secret is an own secret',
  { timeout: 120_000 },
  async (t) => {
    const m = managerWithSecrets(t);
    const upstream = await httpFixture(t);
    await m.manager.create({
      name: 'remote',
      url: upstream,
      transport: 'streamable-http',
    });
    await m.manager.createFromConfig(
      {
        ...m.manager.exportConfig('remote'),
        header_forward: { add_headers_from_secret: { 'x-api-key': 'fixture-key' } },
        guardrails_config: { personalData: { results: 'redact' }, promptInjection: { results: 'block' } },
      },
      { name: 'remote-guarded' },
    );
    const url = await run(t, m, 'remote-guarded');
    const c = await client(m, url);
    // A progress token makes the fixture send a progress event before the answer.
    const progress: number[] = [];
    const r = (await c.callTool({ name: 'leak', arguments: { what: 'secret' } }, undefined, {
      onprogress: (p) => progress.push(p.progress),
    })) as unknown as { content: { text: string }[]; structuredContent: Leaked['structured'] };
    assert.deepEqual(progress, [1], 'the progress event passed');
    assert.equal(r.content[0]?.text, 'Here it is: [REDACTED:secret].');
    assert.equal(r.structuredContent.found, '[REDACTED:secret]');
    assert.equal((await leak(c, 'credential')).text, 'Here it is: [REDACTED:aws_access_key_id].');
    assert.equal((await leak(c, 'email')).text, 'Here it is: [REDACTED:email].');
    const err = await blockedError(leak(c, 'injection'));
    assert.equal(err.code, GUARDRAILS_BLOCKED);
    assert.ok(!err.message.toLowerCase().includes('ignore previous'));
  },
);

test(
  'a 10 MiB result is redacted, with the runner’s memory growth measured',
  { timeout: 180_000 },
  async (t) => {
    const m = managerWithSecrets(t);
    const url = await fixtureWorkload(t, m, 'big');
    const c = await client(m, url);
    await c.callTool({ name: 'big', arguments: { mb: 1 } }); // warm up
    global.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 5);
    const started = Date.now();
    const r = (await c.callTool({ name: 'big', arguments: { mb: 10 } }, undefined, { timeout: 120_000 })) as {
      content: { text: string }[];
    };
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().rss);
    const text = r.content[0]?.text ?? '';
    assert.ok(text.length > 10_000_000);
    assert.ok(!text.includes(SECRET));
    const markers = text.split('[REDACTED:secret]').length - 1;
    assert.equal(markers, 160, '10 MiB / 64 KiB secrets, each redacted');
    const growthMb = (peak - before) / 2 ** 20;
    process.stdout.write(
      `# 10 MiB result through runner + client in one process: ${Date.now() - started} ms, peak RSS growth ${growthMb.toFixed(0)} MiB\n`,
    );
    // The proxy parses the answer, the stage redacts in place, the SDK client parses it again:
    // a few copies of 10 MiB, never unbounded.
    assert.ok(growthMb < 400, `${growthMb} MiB`);
  },
);

test(
  'server-everything’s own outputs draw no finding, with every detector set to block',
  { timeout: 180_000 },
  async (t) => {
    const m = managerWithSecrets(t);
    await m.manager.create({
      name: 'everything-base',
      image: `cmd://${process.execPath}`,
      cmd_arguments: [EVERYTHING_ENTRY, 'stdio'],
    });
    await m.manager.createFromConfig(
      { ...m.manager.exportConfig('everything-base'), guardrails_config: every('block', 'block') },
      { name: 'everything' },
    );
    const c = await client(m, await run(t, m, 'everything'));
    const calls: [string, Record<string, unknown>][] = [
      ['echo', { message: 'hello from the guardrails test' }],
      ['get-annotated-message', { messageType: 'error', includeImage: true }],
      ['get-annotated-message', { messageType: 'success', includeImage: false }],
      ['get-annotated-message', { messageType: 'debug', includeImage: true }],
      ['get-resource-links', { count: 10 }],
      ['get-resource-reference', { resourceType: 'Text', resourceId: 1 }],
      ['get-resource-reference', { resourceType: 'Blob', resourceId: 2 }],
      ['get-structured-content', { location: 'New York' }],
      ['get-structured-content', { location: 'Chicago' }],
      ['get-structured-content', { location: 'Los Angeles' }],
      ['get-sum', { a: 2, b: 3 }],
      ['get-tiny-image', {}],
    ];
    for (const [name, args] of calls) {
      const r = (await c.callTool({ name, arguments: args })) as { isError?: boolean };
      assert.notEqual(r.isError, true, name);
    }
    const { resources } = await c.listResources();
    assert.ok(resources.length > 0);
    for (const res of resources) await c.readResource({ uri: res.uri });
    await c.getPrompt({ name: 'simple-prompt' });
    await c.getPrompt({ name: 'args-prompt', arguments: { city: 'Paris', state: 'Texas' } });
    await c.getPrompt({ name: 'resource-prompt', arguments: { resourceType: 'Text', resourceId: '1' } });
  },
);
