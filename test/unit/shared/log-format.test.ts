import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatLogLine, wantsPrettyLogs } from '../../../src/shared/log-format.js';

const at = (h: number, m: number, s: number, ms: number) => new Date(2026, 10, 24, h, m, s, ms).getTime();

test('a pino line becomes time, level, name, message and fields', () => {
  const line = JSON.stringify({
    level: 30,
    time: at(9, 5, 7, 42),
    pid: 1,
    hostname: 'h',
    name: 'skep',
    url: 'http://127.0.0.1:8080',
    note: 'two words',
    empty: '',
    count: 3,
    list: ['a'],
    msg: 'skep serve is listening',
  });
  assert.equal(
    formatLogLine(line, { colour: false }),
    '09:05:07.042 INFO  skep: skep serve is listening url=http://127.0.0.1:8080 note="two words" empty="" count=3 list=["a"]\n',
  );
});

test('Fastify request fields are shown as method, path and status; colour only when asked', () => {
  const line = JSON.stringify({
    level: 40,
    time: at(23, 59, 59, 999),
    req: { method: 'GET', url: '/health', headers: {} },
    res: { statusCode: 503 },
    msg: 'request completed',
  });
  assert.equal(
    formatLogLine(line, { colour: true }),
    '23:59:59.999 \x1b[33mWARN \x1b[0m request completed req=GET /health res=503\n',
  );
});

test('an error: its message below a warning, its stack below an error', () => {
  const err = { type: 'Error', message: 'boom', stack: 'Error: boom\n    at f (x.ts:1:1)' };
  const warn = formatLogLine(JSON.stringify({ level: 40, time: at(1, 2, 3, 4), err, msg: 'w' }), {
    colour: false,
  });
  assert.equal(warn, '01:02:03.004 WARN  w\n    Error: boom\n');
  const error = formatLogLine(JSON.stringify({ level: 50, time: at(1, 2, 3, 4), err, msg: 'e' }), {
    colour: false,
  });
  assert.equal(error, '01:02:03.004 ERROR e\n    Error: boom\n        at f (x.ts:1:1)\n');
});

test('a line that is not a JSON object passes unchanged', () => {
  assert.equal(formatLogLine('plain text\n', { colour: false }), 'plain text\n');
  assert.equal(formatLogLine('[1,2]\n', { colour: false }), '[1,2]\n');
});

test('pretty on a terminal unless SKEP_LOG_FORMAT=json; SKEP_LOG_FORMAT=pretty forces it', () => {
  assert.equal(wantsPrettyLogs({ isTTY: true }, {}), true);
  assert.equal(wantsPrettyLogs({ isTTY: false }, {}), false);
  assert.equal(wantsPrettyLogs({}, {}), false);
  assert.equal(wantsPrettyLogs({ isTTY: true }, { SKEP_LOG_FORMAT: 'json' }), false);
  assert.equal(wantsPrettyLogs({ isTTY: false }, { SKEP_LOG_FORMAT: 'pretty' }), true);
});

test("a field or message that quotes a server cannot drive the terminal; the level's own colour stays", () => {
  const line = JSON.stringify({
    level: 50,
    time: at(1, 2, 3, 4),
    name: 'runner:x',
    reason: '\x1b]52;c;ZXZpbA==\x07',
    msg: 'server said \x1b[2Kfake\rline',
    err: { type: 'Error', message: '\u009b2J', stack: 'Error: \u009b2J\n    at \x1b[1A' },
  });
  const text = formatLogLine(line, { colour: true });
  assert.equal(
    text,
    '01:02:03.004 \x1b[31mERROR\x1b[0m runner:x: server said \\x1b[2Kfake\\x0dline reason="\\u001b]52;c;ZXZpbA==\\u0007"\n' +
      '    Error: \\x9b2J\n        at \\x1b[1A\n',
  );
  assert.equal(formatLogLine('plain \x1b[2J text\n', { colour: false }), 'plain \\x1b[2J text\n');
});
