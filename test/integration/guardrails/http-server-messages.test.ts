/**
 * Guardrails on what a server that speaks HTTP itself sends on its own, through a real runner:
 * the fixture (test/fixtures/mcp/guardrails-http-server.mjs, official MCP SDK) as a
 * streamable-HTTP server and as a legacy HTTP+SSE server, with the workload's secret forwarded
 * to it as a `header_forward` header (so guardrails watch it as an own secret). Its tool
 * `chatty` sends a log line with the secret on the stream of its call, asks the client
 * `sampling/createMessage` with the secret and `elicitation/create` with a credential-shaped
 * string, and logs the secret on the stream of no request (streamable HTTP: the GET stream).
 * The official SDK client, which answers both requests, talks to the proxy. By default each is
 * redacted; with `block` the log lines are dropped, the requests never reach the client, the
 * server gets the guardrails error (without the matched text) and the call still completes.
 * A hand-written server that puts such messages in a JSON body beside its answer (which the
 * official client acts on) is screened the same way.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { GUARDRAILS_BLOCKED } from '../../../src/dataplane/middleware/guardrails/index.js';
import { recordingClient } from './recording-client.js';
import { runConfiguredInProcess, waitFor } from '../workloads/helpers.js';

const FIXTURE = fileURLToPath(new URL('../../fixtures/mcp/guardrails-http-server.mjs', import.meta.url));
const SECRET = 'fixture-Secret/Value+0123 456789';
const CREDENTIAL = 'AKIA' + 'IOSFODNN7EXAMPLE';
const lookup = async (name: string): Promise<string | undefined> =>
  name === 'fixture-key' ? SECRET : undefined;

type Transport = 'streamable-http' | 'sse';
const TRANSPORTS: readonly Transport[] = ['streamable-http', 'sse'];

/** The fixture's modes: SDK servers of each transport, and hand-written JSON bodies. */
type Mode = 'http' | 'sse' | 'json';

/** The fixture as an HTTP server in this mode; its URL. */
async function httpFixture(t: TestContext, mode: Mode): Promise<string> {
  const child: ChildProcess = spawn(process.execPath, [FIXTURE, mode], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, GUARDRAILS_SECRET: SECRET },
  });
  t.after(() => child.kill());
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.stdout?.once('data', (chunk: Buffer) => resolve(chunk.toString('utf8').trim()));
  });
}

/**
 * Runs the fixture of `transport` (or `mode`) as workload `name` with the run-configuration
 * fields `extra` gives for its home; its proxy's URL, the home, and a stop that ends the runner.
 */
async function workload(
  t: TestContext,
  name: string,
  transport: Transport,
  extra: (dir: string) => Record<string, unknown>,
  mode: Mode = transport === 'sse' ? 'sse' : 'http',
) {
  const upstream = await httpFixture(t, mode);
  return runConfiguredInProcess(
    t,
    name,
    { url: upstream, transport },
    (dir) => ({
      header_forward: { add_headers_from_secret: { 'x-api-key': 'fixture-key' } },
      ...extra(dir),
    }),
    { secretLookup: lookup, path: transport === 'sse' ? '/sse' : '/mcp' },
  );
}

/** What the client saw while calling `chatty`, and the tool's answer (parsed). */
interface Seen {
  logs: unknown[];
  sampling: unknown[];
  elicitation: unknown[];
  answer: { sampling: unknown; elicitation: unknown };
}

async function callChatty(t: TestContext, url: string, transport: Transport): Promise<Seen> {
  const { client: c, recorded: seen } = recordingClient();
  const endpoint = new URL(url);
  await c.connect(
    transport === 'sse' ? new SSEClientTransport(endpoint) : new StreamableHTTPClientTransport(endpoint),
  );
  t.after(() => c.close());
  // The client opens the stream of no request (the GET stream) on its own after initializing:
  // a `hello` logged there shows it is open before `chatty` writes to it.
  await waitFor('the stream of no request to be open', async () => {
    if (seen.logs.includes('hello')) return true;
    await c.callTool({ name: 'hello', arguments: {} });
    return seen.logs.includes('hello') ? true : undefined;
  });
  const result = await c.callTool({ name: 'chatty', arguments: {} });
  // `chatty done` is logged on that stream after the leaking line: once it is here, the leak
  // came (or was dropped) before it.
  await waitFor('chatty done', () => (seen.logs.includes('chatty done') ? true : undefined), 30_000);
  const content = result.content as { type: string; text: string }[];
  // A later `hello` may still have been on its way when the barrier passed.
  seen.logs = seen.logs.filter((l) => l !== 'hello');
  return { ...seen, answer: JSON.parse(content[0]?.text ?? '{}') as Seen['answer'] };
}

for (const transport of TRANSPORTS) {
  test(
    `${transport}: default guardrails redact the secret and the credential in log lines, sampling and elicitation requests, on every stream`,
    { timeout: 120_000 },
    async (t) => {
      const { url } = await workload(t, `chatty-redact-${transport}`, transport, () => ({
        guardrails_config: {},
      }));
      const seen = await callChatty(t, url, transport);
      // The server's requests reached the client (redacted) and were answered.
      assert.deepEqual(seen.answer, { sampling: 'answered', elicitation: 'answered' }, transport);
      assert.deepEqual(
        seen.logs,
        ['key [REDACTED:secret]', 'unrelated [REDACTED:secret]', 'chatty done'],
        transport,
      );
      assert.equal(seen.sampling.length, 1, transport);
      assert.deepEqual((seen.sampling[0] as { messages: unknown }).messages, [
        { role: 'user', content: { type: 'text', text: 'Summarise [REDACTED:secret]' } },
      ]);
      assert.equal(seen.elicitation.length, 1, transport);
      assert.equal(
        (seen.elicitation[0] as { message: string }).message,
        'Confirm the key [REDACTED:aws_access_key_id]',
        transport,
      );
      const said = JSON.stringify(seen);
      assert.ok(!said.includes(SECRET) && !said.includes(CREDENTIAL), transport);
    },
  );

  test(
    `${transport}: block drops the log lines and answers the requests to the client with the guardrails error, each audited`,
    { timeout: 120_000 },
    async (t) => {
      const { url, dir, stop } = await workload(t, `chatty-block-${transport}`, transport, (home) => ({
        guardrails_config: { ownSecrets: { results: 'block' }, credentials: { results: 'block' } },
        audit_config: { logFile: join(home, 'audit.log') },
      }));
      const seen = await callChatty(t, url, transport);
      // The call completed: the server saw both requests answered with the guardrails error,
      // which names the detector and never the matched text.
      const answer = seen.answer as Record<string, { code: number; message: string }>;
      for (const [request, detector] of [
        ['sampling', 'ownSecrets'],
        ['elicitation', 'credentials'],
      ] as const) {
        assert.equal(answer[request]?.code, GUARDRAILS_BLOCKED, `${transport} ${request}`);
        assert.match(
          answer[request]?.message ?? '',
          new RegExp(`Blocked by guardrails \\(detector ${detector}, `),
        );
        assert.ok(!answer[request]?.message.includes(SECRET), `${transport} ${request}`);
        assert.ok(!answer[request]?.message.includes('IOSFODNN7'), `${transport} ${request}`);
      }
      // The leaking log lines were sent before `chatty done` on their streams: dropped.
      assert.deepEqual(seen.logs, ['chatty done'], transport);
      assert.deepEqual(seen.sampling, [], transport);
      assert.deepEqual(seen.elicitation, [], transport);
      await stop();
      const text = readFileSync(join(dir, 'audit.log'), 'utf8');
      assert.ok(!text.includes(SECRET) && !text.includes(CREDENTIAL), 'the audit log holds no matched text');
      const events = text
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as { type: string; outcome: string; target: Record<string, string> })
        .filter((e) => e.type === 'guardrails_finding');
      assert.deepEqual(
        events.map((e) => [e.target['method'], e.target['type'], e.outcome]).sort(),
        [
          ['elicitation/create', 'server_message', 'denied'],
          ['notifications/message', 'server_message', 'denied'],
          ['notifications/message', 'server_message', 'denied'],
          ['sampling/createMessage', 'server_message', 'denied'],
        ],
        transport,
      );
    },
  );
}

/** The recording client on the JSON-bodies fixture. */
async function jsonClient(t: TestContext, url: string) {
  const { client: c, recorded: seen } = recordingClient();
  await c.connect(new StreamableHTTPClientTransport(new URL(url)));
  t.after(() => c.close());
  const text = async (name: string): Promise<string> => {
    const r = await c.callTool({ name, arguments: {} });
    return (r.content as { text: string }[])[0]?.text ?? '';
  };
  return { seen, text };
}

/** The JSON-RPC responses the JSON-bodies fixture received, once one answers `json-1`. */
async function answersToServer(text: (name: string) => Promise<string>) {
  return waitFor(
    'the answer to the server’s request',
    async () => {
      const answers = JSON.parse(await text('answers')) as {
        id: string;
        error?: { code: number; message: string };
      }[];
      return answers.some((a) => a.id === 'json-1') ? answers : undefined;
    },
    30_000,
  );
}

test(
  'a log line and a request to the client in a JSON body beside the answer are screened too',
  { timeout: 120_000 },
  async (t) => {
    const redacted = await workload(
      t,
      'json-redact',
      'streamable-http',
      () => ({ guardrails_config: {} }),
      'json',
    );
    const r = await jsonClient(t, redacted.url);
    assert.equal(await r.text('chatty'), 'chatty answered');
    // The client acts on the body's messages in order, before the answer settles the call.
    assert.deepEqual(r.seen.logs, ['key [REDACTED:secret]']);
    assert.deepEqual((r.seen.sampling[0] as { messages: unknown } | undefined)?.messages, [
      { role: 'user', content: { type: 'text', text: 'Summarise [REDACTED:secret]' } },
    ]);
    const relayed = await answersToServer(r.text);
    assert.equal(relayed.find((a) => a.id === 'json-1')?.error, undefined, 'the client answered it');

    const blocked = await workload(
      t,
      'json-block',
      'streamable-http',
      () => ({ guardrails_config: { ownSecrets: { results: 'block' } } }),
      'json',
    );
    const b = await jsonClient(t, blocked.url);
    assert.equal(await b.text('chatty'), 'chatty answered', 'the call still completes');
    assert.deepEqual(b.seen.logs, []);
    assert.deepEqual(b.seen.sampling, []);
    const error = (await answersToServer(b.text)).find((a) => a.id === 'json-1')?.error;
    assert.equal(error?.code, GUARDRAILS_BLOCKED);
    assert.ok(!error.message.includes(SECRET));
  },
);
