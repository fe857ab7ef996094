/**
 * `Guard.screenServerMessage`: what a server sends on its own (MCP 2025-11-25 log lines,
 * progress, sampling and elicitation requests) is judged with the results' actions; other
 * methods pass as written; a message over maxInspectBytes is stopped unread.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type FindingReport,
  Guard,
  GUARDRAILS_BLOCKED,
  parseGuardrailsConfig,
} from '../../../src/dataplane/middleware/guardrails/index.js';
import type { JsonRpcMessage } from '../../../src/protocol/index.js';

const SECRET = 'workload-secret-value-123';

function guard(config: unknown): { guard: Guard; reports: FindingReport[] } {
  const reports: FindingReport[] = [];
  const g = new Guard({
    config: parseGuardrailsConfig(config),
    secrets: new Map([['db-password', SECRET]]),
    report: (r) => reports.push(r),
  });
  return { guard: g, reports };
}

function screen(g: Guard, message: Record<string, unknown>) {
  const msg = { jsonrpc: '2.0', ...message } as JsonRpcMessage;
  return { verdict: g.screenServerMessage(msg, JSON.stringify(msg)), msg };
}

test('redact: a log line’s data, a progress message and a sampling request are rewritten in place', () => {
  const { guard: g, reports } = guard({});
  const log = screen(g, {
    method: 'notifications/message',
    params: { level: 'info', data: { detail: [`pw=${SECRET}`] } },
  });
  assert.equal(log.verdict, 'rewritten');
  assert.deepEqual(log.msg.params?.['data'], { detail: ['pw=[REDACTED:secret]'] });
  const progress = screen(g, {
    method: 'notifications/progress',
    params: { progressToken: 1, progress: 1, message: SECRET },
  });
  assert.equal(progress.verdict, 'rewritten');
  assert.equal(progress.msg.params?.['message'], '[REDACTED:secret]');
  const string = screen(g, { method: 'notifications/message', params: { level: 'info', data: SECRET } });
  assert.equal(string.msg.params?.['data'], '[REDACTED:secret]');
  const sampling = screen(g, {
    id: 3,
    method: 'sampling/createMessage',
    params: { systemPrompt: `use ${SECRET}`, messages: [], maxTokens: 5 },
  });
  assert.equal(sampling.verdict, 'rewritten');
  assert.equal(sampling.msg.params?.['systemPrompt'], 'use [REDACTED:secret]');
  assert.deepEqual(
    reports.map((r) => [r.method, r.ctx, r.inspection.findings[0]?.secret]),
    [
      ['notifications/message', undefined, 'db-password'],
      ['notifications/progress', undefined, 'db-password'],
      ['notifications/message', undefined, 'db-password'],
      ['sampling/createMessage', undefined, 'db-password'],
    ],
  );
});

test('block: the verdict is the guardrails error, naming the detector and never the text', () => {
  const { guard: g } = guard({ ownSecrets: { results: 'block' } });
  const { verdict } = screen(g, { id: 'e1', method: 'elicitation/create', params: { message: SECRET } });
  assert.ok(typeof verdict === 'object');
  assert.equal(verdict.error.code, GUARDRAILS_BLOCKED);
  assert.match(verdict.error.message, /detector ownSecrets, exact\): the message from the server contains/);
  assert.ok(!JSON.stringify(verdict).includes(SECRET));
});

test('other methods, clean messages and guardrails off for results pass as written', () => {
  const { guard: g, reports } = guard({});
  for (const message of [
    { method: 'notifications/resources/updated', params: { uri: `x://${SECRET}` } },
    { method: 'notifications/tools/list_changed' },
    { id: 1, method: 'roots/list', params: { note: SECRET } },
    { method: 'notifications/message', params: { level: 'info', data: 'all quiet' } },
  ])
    assert.equal(screen(g, message).verdict, undefined, message.method);
  assert.deepEqual(reports, []);
  const { guard: off } = guard({ ownSecrets: { results: 'off' }, credentials: { results: 'off' } });
  const log = screen(off, { method: 'notifications/message', params: { level: 'info', data: SECRET } });
  assert.equal(log.verdict, undefined);
  assert.equal(log.msg.params?.['data'], SECRET);
});

test('a message over maxInspectBytes is stopped unread, naming the limit', () => {
  const { guard: g, reports } = guard({ maxInspectBytes: 1024 });
  const { verdict } = screen(g, {
    method: 'notifications/message',
    params: { level: 'info', data: 'x'.repeat(2000) },
  });
  assert.ok(typeof verdict === 'object');
  assert.match(verdict.error.message, /maxInspectBytes \(1024\)/);
  assert.equal(reports[0]?.oversized?.limit, 1024);
});
