import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readableLog } from '../../../src/control/ui/log-text.js';

const at = Date.UTC(2026, 10, 28, 9, 5, 7, 250);
const clock = (() => {
  const d = new Date(at);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
})();
const json = (msg: string, extra: Record<string, unknown> = {}, level = 30, pid = 1) =>
  JSON.stringify({ level, time: at, pid, name: 'runner', msg, ...extra });

test('UI log text: JSON lines read as time, level, message and fields; repeats collapse; other lines pass', () => {
  const text = [
    json('proxy listening', { port: 4100 }),
    json('[egress] allow CONNECT registry.npmjs.org:443', {}, 30, 2),
    json('[egress] allow CONNECT registry.npmjs.org:443', {}, 30, 3),
    json('[egress] allow CONNECT registry.npmjs.org:443', {}, 30, 4),
    'a line of the server <b>not markup</b>',
    json('server exited', { err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at x' } }, 50),
    '',
  ].join('\n');
  assert.equal(
    readableLog(text),
    [
      `${clock} INFO  runner: proxy listening port=4100`,
      `${clock} INFO  runner: [egress] allow CONNECT registry.npmjs.org:443`,
      '  … ×3',
      'a line of the server <b>not markup</b>',
      `${clock} ERROR runner: server exited err="boom"`,
    ].join('\n'),
  );
  assert.equal(readableLog('{not json\n{"level":30}\n'), `{not json\n--:--:-- INFO  `);
  const engine = json('no container engine answered', { tried: ['/run/docker.sock'] });
  const twice = readableLog([engine, json('started'), engine, json('started again')].join('\n'));
  assert.equal(twice.match(/no container engine answered/g)?.length, 1);
});
