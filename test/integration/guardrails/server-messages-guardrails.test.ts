/**
 * Guardrails on what a server sends on its own, through a real runner: the leaking fixture
 * (test/fixtures/mcp/guardrails-server.mjs, tool `chatty`) as a stdio child with a secret in
 * its environment sends a log line (`notifications/message`) and a progress message with the
 * secret, and asks the client `sampling/createMessage` and `elicitation/create` with it; the
 * official MCP SDK client, which can answer both, talks to the proxy. By default the secret is
 * redacted in each; with `block` the notifications are dropped, the requests never reach the
 * client and the server gets the guardrails error, and audit events name each method.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { GUARDRAILS_BLOCKED } from '../../../src/dataplane/middleware/guardrails/index.js';
import { recordingClient } from './recording-client.js';
import { runConfiguredInProcess } from '../workloads/helpers.js';

const FIXTURE = fileURLToPath(new URL('../../fixtures/mcp/guardrails-server.mjs', import.meta.url));
const SECRET = 'fixture-Secret/Value+0123 456789';
const lookup = async (name: string): Promise<string | undefined> =>
  name === 'fixture-key' ? SECRET : undefined;

/** Runs the stdio fixture as workload `name` with the run-configuration fields `extra` gives for its home. */
function workload(t: TestContext, name: string, extra: (dir: string) => Record<string, unknown>) {
  return runConfiguredInProcess(
    t,
    name,
    {
      image: `cmd://${process.execPath}`,
      cmd_arguments: [FIXTURE],
      secrets: [{ name: 'fixture-key', target: 'GUARDRAILS_SECRET' }],
    },
    extra,
    { secretLookup: lookup },
  );
}

/** What the client saw while calling `chatty`. */
interface Seen {
  logs: unknown[];
  progress: (string | undefined)[];
  sampling: unknown[];
  elicitation: unknown[];
  answer: string;
}

async function callChatty(t: TestContext, url: string): Promise<Seen> {
  const { client: c, recorded } = recordingClient();
  const seen: Omit<Seen, 'answer'> = { ...recorded, progress: [] };
  await c.connect(new StreamableHTTPClientTransport(new URL(url)));
  t.after(() => c.close());
  const result = await c.callTool({ name: 'chatty', arguments: {} }, undefined, {
    onprogress: (p) => seen.progress.push(p.message),
  });
  const content = result.content as { type: string; text: string }[];
  return { ...seen, answer: content[0]?.text ?? '' };
}

test('default guardrails redact the secret in log lines, progress messages, sampling and elicitation requests', async (t) => {
  const { url } = await workload(t, 'chatty-redact', () => ({ guardrails_config: {} }));
  const seen = await callChatty(t, url);
  // The server's requests reached the client (redacted) and were answered.
  assert.equal(seen.answer, 'sampling answered, elicitation answered');
  assert.deepEqual(seen.logs, ['key [REDACTED:secret]']);
  assert.deepEqual(seen.progress, ['using [REDACTED:secret]']);
  assert.equal(seen.sampling.length, 1);
  assert.deepEqual((seen.sampling[0] as { messages: unknown }).messages, [
    { role: 'user', content: { type: 'text', text: 'Summarise [REDACTED:secret]' } },
  ]);
  assert.equal(seen.elicitation.length, 1);
  assert.equal((seen.elicitation[0] as { message: string }).message, 'Confirm the key [REDACTED:secret]');
  assert.ok(!JSON.stringify(seen).includes(SECRET));
});

test('block: notifications are dropped, requests to the client are answered with the guardrails error, each audited', async (t) => {
  const { url, dir, stop } = await workload(t, 'chatty-block', (home) => ({
    guardrails_config: { ownSecrets: { results: 'block' } },
    audit_config: { logFile: join(home, 'audit.log') },
  }));
  const seen = await callChatty(t, url);
  // The tool's own answer (no secret) passes: the server saw both requests refused.
  assert.equal(seen.answer, `sampling error ${GUARDRAILS_BLOCKED}, elicitation error ${GUARDRAILS_BLOCKED}`);
  // The notifications were written before the answer, on the same ordered pipe: had they
  // been relayed, the client would have them by now.
  assert.deepEqual(seen.logs, []);
  assert.deepEqual(seen.progress, []);
  assert.deepEqual(seen.sampling, []);
  assert.deepEqual(seen.elicitation, []);
  await stop();
  const text = readFileSync(join(dir, 'audit.log'), 'utf8');
  assert.ok(!text.includes(SECRET), 'the audit log holds no secret');
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
            extra: { findings: { detector: string; kind: string; action: string; secret?: string }[] };
          };
        },
    )
    .filter((e) => e.type === 'guardrails_finding');
  assert.deepEqual(events.map((e) => [e.target['method'], e.target['type'], e.outcome]).sort(), [
    ['elicitation/create', 'server_message', 'denied'],
    ['notifications/message', 'server_message', 'denied'],
    ['notifications/progress', 'server_message', 'denied'],
    ['sampling/createMessage', 'server_message', 'denied'],
  ]);
  for (const e of events)
    assert.deepEqual(
      e.metadata.extra.findings.map((f) => [f.detector, f.action, f.secret]),
      [['ownSecrets', 'block', 'fixture-key']],
    );
});
