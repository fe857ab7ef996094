import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type LogEntry,
  logLineParts,
  parseLogLine,
  ReadableLog,
} from '../../../src/shared/readable-log/index.js';

const at = new Date(2026, 10, 28, 9, 5, 7, 42).getTime();
const terminal = { milliseconds: true, errorLines: true };
const page = { milliseconds: false, errorLines: false };

test('a log line is an entry only when it holds a JSON object', () => {
  assert.deepEqual(parseLogLine('{"level":30,"msg":"hi"}'), { level: 30, msg: 'hi' });
  assert.equal(parseLogLine('{not json'), undefined);
  assert.equal(parseLogLine('[1,2]'), undefined);
  assert.equal(parseLogLine('42'), undefined);
  assert.equal(parseLogLine('plain text from a server'), undefined);
});

test("a line's parts: time, padded level, name, message, fields past pino's own", () => {
  const entry: LogEntry = {
    level: 40,
    time: at,
    pid: 7,
    hostname: 'h',
    v: 1,
    name: 'runner',
    msg: 'server exited',
    code: 3,
    note: 'two words',
    empty: '',
    eq: 'a=b',
    list: ['a'],
    req: { method: 'POST', url: '/mcp' },
    res: { statusCode: 502 },
  };
  const text =
    'runner: server exited code=3 note="two words" empty="" eq="a=b" list=["a"] req=POST /mcp res=502';
  assert.deepEqual(logLineParts(entry, terminal), {
    clock: '09:05:07.042',
    level: 40,
    levelName: 'WARN ',
    text,
  });
  assert.deepEqual(logLineParts(entry, page), { clock: '09:05:07', level: 40, levelName: 'WARN ', text });
  const bare = logLineParts({ level: 35, msg: 'odd' }, terminal);
  assert.deepEqual([bare.clock, bare.levelName, bare.text], ['--:--:--.---', 'L35  ', 'odd']);
  assert.deepEqual(logLineParts({}, page), { clock: '--:--:--', level: 30, levelName: 'INFO ', text: '' });
});

test('an error: below the line on a terminal (its stack from ERROR up), inline on the page', () => {
  const err = { type: 'TypeError', message: 'boom', stack: 'TypeError: boom\n    at f (x.ts:1:1)' };
  const entry = (level: number): LogEntry => ({ level, msg: 'failed', err, after: 1 });
  assert.equal(logLineParts(entry(40), terminal).text, 'failed after=1\n    TypeError: boom');
  assert.equal(
    logLineParts(entry(50), terminal).text,
    'failed after=1\n    TypeError: boom\n        at f (x.ts:1:1)',
  );
  assert.equal(logLineParts(entry(50), page).text, 'failed err="boom" after=1');
  // An `err` that is no error object is shown as a field everywhere, never dropped.
  assert.equal(logLineParts({ msg: 'w', err: 'just text' }, terminal).text, 'w err="just text"');
});

test('repeats back to back (time and pid aside) collapse into a count; a changed field ends the run', () => {
  const seen: Array<LogEntry | undefined> = [];
  const log = new ReadableLog((line, entry) => {
    seen.push(entry);
    return entry === undefined ? `plain:${line}` : `json:${String(entry['msg'])}`;
  });
  const line = (pid: number, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ level: 30, time: at + pid, pid, msg: 'allow', ...extra });
  const shown = [line(1), line(2), line(3), line(4, { host: 'b' }), 'plain', 'plain'].flatMap((l) =>
    log.line(l),
  );
  assert.deepEqual([...shown, ...log.end()], ['json:allow', '  … ×3', 'json:allow', 'plain:plain', '  … ×2']);
  assert.deepEqual(seen.at(-1), undefined);
  assert.equal(seen[0]?.['pid'], 1);
  assert.deepEqual(log.end(), [], 'the count is said once');
});

test('"no container engine answered" is shown once per log, however many starts wrote it', () => {
  const log = new ReadableLog((_line, entry) => String(entry?.['msg']));
  const engine = (pid: number) => JSON.stringify({ pid, msg: 'no container engine answered' });
  const started = (pid: number) => JSON.stringify({ pid, msg: 'started' });
  const shown = [engine(1), started(1), engine(2), started(2)].flatMap((l) => log.line(l));
  assert.deepEqual(shown, ['no container engine answered', 'started', 'started']);
});
