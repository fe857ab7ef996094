/**
 * The guardrails' look at an answer's JSON text before it is parsed (`mayMatch`): an answer
 * whose text contains no detector's hint, in the form JSON writes it, is relayed as the
 * server wrote it, unparsed; one that may hold a match is parsed and walked as before. The
 * filter never hides a match: a secret or credential spelled with JSON escapes (`\uXXXX`,
 * `\/`), or holding characters JSON escapes (quotes, backslashes, new lines), still is.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  Guard,
  inspect,
  mayMatch,
  parseGuardrailsConfig,
  planFor,
  secretNeedles,
} from '../../../src/dataplane/middleware/guardrails/index.js';
import { newRequestContext } from '../../../src/dataplane/proxy/index.js';
import type { ReplyTarget } from '../../../src/dataplane/proxy/outlets.js';
import { HookedTarget } from '../../../src/dataplane/proxy/reply-hooks.js';
import { SAMPLES } from './detectors.test.js';

const SECRET = 'pa"ss\\word\nwith/slash-and-more';
const secrets = new Map([['tricky', SECRET]]);
const config = parseGuardrailsConfig({});

const answerText = (text: string): string =>
  JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text }] } });

/** `text` in JSON with every character of `word` written as `\uXXXX`. */
function unicodeEscaped(text: string, word: string): string {
  const escaped = [...word].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
  return answerText(text).replace(JSON.stringify(word).slice(1, -1), escaped);
}

test('a text without any hint is settled unparsed; each hint, as JSON writes it, is not', () => {
  const plan = planFor(config, 'results', secrets);
  assert.ok(plan);
  assert.equal(mayMatch(plan, answerText('a plain answer about open issues, sorted by age')), false);
  for (const [name, sample] of Object.entries(SAMPLES))
    assert.equal(mayMatch(plan, answerText(`before ${sample} after`)), true, name);
  for (const needle of secretNeedles('tricky', SECRET))
    assert.equal(mayMatch(plan, answerText(`x${needle.text}y`)), true, needle.kind);
  // Other spellings of the same characters (RFC 8259 §7) send the text to the full walk.
  assert.equal(mayMatch(plan, unicodeEscaped('key AKIAIOSFODNN7EXAMPLE', 'AKIA')), true);
  assert.equal(mayMatch(plan, answerText('a/b').replace('/', '\\/')), true);
  // Personal data can be any text: with it on, every answer is walked.
  const all = planFor(parseGuardrailsConfig({ personalData: { results: 'audit' } }), 'results', secrets);
  assert.ok(all);
  assert.equal(all.textFilter, undefined);
  assert.equal(mayMatch(all, answerText('plain')), true);
});

test('the filter never hides a finding: whenever the walk finds something, mayMatch is true', () => {
  const plan = planFor(config, 'results', secrets);
  assert.ok(plan);
  const pieces = [
    'plain words ',
    SECRET,
    SECRET.slice(0, 12),
    ...Object.values(SAMPLES),
    ...secretNeedles('tricky', SECRET).map((n) => n.text),
    '"',
    '\\',
    '\n',
    '/',
    'é',
    'AKIA',
    'gh',
  ];
  let seed = 7;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  let found = 0;
  for (let i = 0; i < 2000; i++) {
    let text = '';
    for (let k = 0; k < 1 + next(4); k++) text += pieces[next(pieces.length)];
    const json = answerText(text);
    const message = JSON.parse(json) as { result: unknown };
    const { inspection } = inspect(plan, message.result);
    if (inspection.findings.length === 0) continue;
    found++;
    assert.equal(mayMatch(plan, json), true, JSON.stringify(text));
  }
  assert.ok(found > 500, `only ${found} texts had findings`);
});

function relayThroughGuard(text: string): string {
  const guard = new Guard({ config, secrets, report: () => undefined });
  const built = newRequestContext({
    method: 'POST',
    path: '/mcp',
    body: { json: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: {} } } },
    serverName: 'w',
    backendTransport: 'stdio',
  });
  guard.handle(built.ctx);
  assert.equal(built.replyHooks.length, 1);
  const relayed: string[] = [];
  const sink: ReplyTarget = { open: true, interim: () => true, final: (t) => relayed.push(t) };
  new HookedTarget(sink, built.replyHooks, built.replyHooksMutate, built.replyGates).final(text);
  assert.equal(relayed.length, 1);
  return relayed[0] as string;
}

test('through the stdio reply target: a clean answer passes byte for byte, an escaped secret is redacted', () => {
  // Spacing JSON.stringify would not write: the text is relayed as the server wrote it.
  const clean =
    '{ "jsonrpc": "2.0", "id": 1, "result": { "content": [ { "type": "text", "text": "ok" } ] } }';
  assert.equal(relayThroughGuard(clean), clean);
  const escaped = unicodeEscaped(`the secret is ${SECRET}!`, SECRET);
  assert.ok(!escaped.includes(JSON.stringify(SECRET).slice(1, -1)));
  const out = JSON.parse(relayThroughGuard(escaped)) as { result: { content: Array<{ text: string }> } };
  assert.equal(out.result.content[0]?.text, 'the secret is [REDACTED:secret]!');
  const key = relayThroughGuard(unicodeEscaped(`key ${SAMPLES['aws_access_key_id']}`, 'A'));
  assert.ok(key.includes('[REDACTED:aws_access_key_id]'), key);
});
