/**
 * Ranking quality of the optimizer's BM25 search on a realistic set: the
 * tool definitions the real `@modelcontextprotocol/server-everything` lists (fetched with the
 * official SDK client over stdio) plus the ~500 synthetic SaaS-style tools of
 * test/fixtures/mcp/synthetic-tools.mjs. Each query names the tool a person would pick.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  createOptimizer,
  type FindToolOutput,
  type McpTool,
  type Optimizer,
} from '../../../src/dataplane/vmcp/optimizer/index.js';
import { DISTINCT_SYNTHETIC_TOOLS, syntheticTools } from '../../fixtures/mcp/synthetic-tools.mjs';

const require = createRequire(import.meta.url);

async function everythingTools(): Promise<McpTool[]> {
  const entry = require.resolve('@modelcontextprotocol/server-everything/dist/index.js');
  const client = new Client({ name: 'optimizer-ranking-test', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [entry, 'stdio'], stderr: 'ignore' }),
  );
  try {
    return (await client.listTools()).tools as McpTool[];
  } finally {
    await client.close();
  }
}

async function top(o: Optimizer, description: string, keywords?: string[]): Promise<string[]> {
  const args =
    keywords === undefined
      ? { tool_description: description }
      : { tool_description: description, tool_keywords: keywords };
  const result = await o.find(args);
  return (result.structuredContent as unknown as FindToolOutput).tools.map((t) => t.name);
}

describe('optimizer ranking on server-everything + synthetic tools', () => {
  let optimizer: Optimizer;
  let everything: McpTool[];

  before(async () => {
    everything = await everythingTools();
    assert.ok(everything.length >= 10, `server-everything listed ${everything.length} tools`);
    optimizer = createOptimizer();
    await optimizer.index([...everything, ...syntheticTools(DISTINCT_SYNTHETIC_TOOLS)]);
  });

  it('"send an email" finds a mail-sending tool in the top 3', async () => {
    const names = await top(optimizer, 'send an email');
    assert.ok(names.slice(0, 3).includes('gmail_send_email'), names.join(', '));
    assert.ok(names.includes('outlook_send_mail'), names.join(', '));
  });

  it("finds server-everything's own tools among hundreds", async () => {
    const cases: [string, string][] = [
      ['echo back the input', 'echo'],
      ['add two numbers and return the sum', 'get-sum'],
      ['show the environment variables', 'get-env'],
      ['compress a file with gzip', 'gzip-file-as-resource'],
      ['a long running operation that reports progress', 'trigger-long-running-operation'],
      ['return a tiny image', 'get-tiny-image'],
    ];
    const names = new Set(everything.map((t) => t.name));
    for (const [query, expected] of cases) {
      if (!names.has(expected)) {
        assert.fail(
          `server-everything no longer has ${expected}; update this test (has: ${[...names].join(', ')})`,
        );
      }
      const found = await top(optimizer, query);
      assert.ok(found.slice(0, 3).includes(expected), `${query} → ${found.join(', ')}`);
    }
  });

  it('everyday requests find the right synthetic tool in the top 3', async () => {
    const cases: [string, string][] = [
      ['report a bug as a new GitHub issue', 'github_create_issue'],
      ['post a message to the team channel on Slack', 'slack_send_message'],
      ['text message to a phone number', 'twilio_send_sms'],
      ['refund the payment of a customer', 'stripe_refund_payment'],
      ['who is on call right now', 'pagerduty_who_is_on_call_schedule'],
      ['read the contents of a file', 'filesystem_read_file'],
      ['restart a docker container', 'docker_restart_container'],
      ['show the logs of a kubernetes pod', 'kubernetes_logs_pod'],
      ['turn an address into latitude and longitude', 'maps_geocode_place'],
      ['scale the deployment to 5 replicas', 'kubernetes_scale_deployment'],
      ['run a SQL query on postgres', 'postgres_run_query'],
      ['merge the pull request', 'github_merge_pull_request'],
      // Synonyms: "remove"/"delete", "folder"/"directory", "ticket"/"issue", "new"/"create".
      ['remove a folder', 'google_drive_delete_folder'],
      ['erase a directory from the local file system', 'filesystem_delete_directory'],
      ['open a new Jira ticket', 'jira_create_issue'],
    ];
    for (const [query, expected] of cases) {
      const found = await top(optimizer, query);
      assert.ok(found.slice(0, 3).includes(expected), `${query} → ${found.join(', ')}`);
    }
  });

  it('keywords move the named product to the top', async () => {
    const plain = await top(optimizer, 'send a message');
    const boosted = await top(optimizer, 'send a message', ['outlook']);
    assert.notEqual(plain[0], 'outlook_send_mail', `without keywords: ${plain.join(', ')}`);
    assert.equal(boosted[0], 'outlook_send_mail', boosted.join(', '));
  });

  it('schema property names count: a word found only in a property finds its tool', async () => {
    // "tail_lines" is a property of kubernetes_logs_pod only; no name or description says "tail".
    const found = await top(optimizer, 'tail lines');
    assert.equal(found[0], 'kubernetes_logs_pod', found.join(', '));
  });

  it('returns at most 8 tools even for a query matching hundreds', async () => {
    const found = await top(optimizer, 'list items one page at a time');
    assert.equal(found.length, 8);
  });
});
