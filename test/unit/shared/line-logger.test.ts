import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  createLineLogger,
  createLogger,
  definedOnly,
  linesOf,
  type Logger,
  mayRedact,
} from '../../../src/shared/index.js';

function capture(level?: string): { logger: Logger; lines: () => Record<string, unknown>[] } {
  const out: string[] = [];
  const logger = createLineLogger({
    name: 'runner:w',
    write: (line) => out.push(line),
    now: () => 1700000000000,
    ...definedOnly({ level }),
  });
  return {
    logger,
    lines: () =>
      out.map((line) => {
        assert.ok(line.endsWith('\n'), 'one line per entry');
        return JSON.parse(line) as Record<string, unknown>;
      }),
  };
}

test('line logger writes pino-format lines: numeric level, time, pid, name, fields, msg', () => {
  const { logger, lines } = capture();
  logger.info({ port: 8080 }, 'listening');
  logger.warn('plain message');
  assert.deepEqual(lines(), [
    { level: 30, time: 1700000000000, pid: process.pid, name: 'runner:w', port: 8080, msg: 'listening' },
    { level: 40, time: 1700000000000, pid: process.pid, name: 'runner:w', msg: 'plain message' },
  ]);
});

test('line logger drops entries below its level; silent drops all', () => {
  const warn = capture('warn');
  warn.logger.debug('d');
  warn.logger.info('i');
  warn.logger.error('e');
  assert.deepEqual(
    warn.lines().map((l) => l['msg']),
    ['e'],
  );
  const silent = capture('silent');
  silent.logger.fatal('f');
  assert.equal(silent.lines().length, 0);
});

test('line logger censors secret-looking fields at any depth and serializes errors', () => {
  const { logger, lines } = capture();
  const err = new Error('outer', { cause: new Error('inner') });
  (err as Error & { code: string }).code = 'ECONNREFUSED';
  logger.error(
    {
      err,
      token: 'tok-1',
      req: { headers: { Authorization: 'Bearer abc', accept: 'x' } },
      config: { client_secret: 's3', password: 'p', tokens: 2 },
    },
    'failed',
  );
  const [line] = lines();
  const text = JSON.stringify(line);
  for (const secret of ['tok-1', 'Bearer abc', 's3', '"p"']) assert.ok(!text.includes(secret), secret);
  assert.equal(line?.['token'], '[redacted]');
  assert.deepEqual(line?.['req'], { headers: { Authorization: '[redacted]', accept: 'x' } });
  assert.deepEqual(line?.['config'], { client_secret: '[redacted]', password: '[redacted]', tokens: 2 });
  const e = line?.['err'] as Record<string, unknown>;
  assert.equal(e['type'], 'Error');
  assert.equal(e['message'], 'outer');
  assert.equal(e['code'], 'ECONNREFUSED');
  assert.match(String(e['stack']), /outer/);
  assert.equal((e['cause'] as Record<string, unknown>)['message'], 'inner');
});

test('line logger children add bindings; unserializable entries still produce a line', () => {
  const { logger, lines } = capture();
  logger.child({ session: 's1' }).info({ n: 1n }, 'child');
  const cyclic: Record<string, unknown> = {};
  cyclic['self'] = cyclic;
  logger.info(cyclic, 'cyclic');
  const [child, cyc] = lines();
  assert.equal(child?.['session'], 's1');
  assert.equal(child?.['n'], '1');
  assert.equal(cyc?.['msg'], 'cyclic');
  assert.equal(cyc?.['unserializable'], true);
});

test('the pino service logger satisfies the same Logger interface', () => {
  const logger: Logger = createLogger({ level: 'silent' });
  assert.equal(typeof logger.child({ a: 1 }).info, 'function');
});

test('lines made apart: info and infoMembers make the line info writes; bytes go out a line at a time without writeBytes', () => {
  const out: string[] = [];
  const logger = createLineLogger({ name: 'runner:w', write: (line) => out.push(line), now: () => 5 });
  const child = logger.child({ workload: 'w1' });
  const lines = linesOf(child);
  assert.ok(lines !== undefined, "a line logger's children make lines apart too");
  child.info({ a: 1, b: { c: 'x' } }, 'm');
  assert.equal(lines.info({ a: 1, b: { c: 'x' } }, 'm'), out[0]);
  assert.equal(lines.infoMembers('"a":1,"b":{"c":"x"}', 'm'), out[0]);
  lines.write(Buffer.from(`${out[0]!}${out[0]!}`));
  assert.deepEqual(out.slice(1), [out[0], out[0]], 'a batch of two lines: two writes of one line');
  const quiet = linesOf(createLineLogger({ level: 'warn', write: () => {} }));
  assert.equal(quiet?.info({ a: 1 }, 'm'), undefined);
  assert.equal(quiet?.infoMembers('"a":1', 'm'), undefined);
  assert.equal(linesOf(createLogger({ level: 'silent' })), undefined, 'pino makes no lines apart');
});

test('mayRedact: true for a member named like a redacted key in any case, false otherwise', () => {
  for (const json of [
    '{"Token":"x"}',
    '{"a":{"client_secret":1}}',
    '{"AUTHORIZATION":"b"}',
    '{"cookie":null}',
  ])
    assert.equal(mayRedact(json), true, json);
  for (const json of ['{"tokens":1}', '{"text":"token"}', '{"my_password_hint":"x"}', '{}'])
    assert.equal(mayRedact(json), false, json);
});
