import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LogView, wantsColour } from '../../../src/control/cli/log-view.js';

const at = (ms: number) => Date.UTC(2026, 10, 28, 12, 0, 0, ms);
const line = (ms: number, msg: string, extra: Record<string, unknown> = {}, level = 30) =>
  JSON.stringify({ level, time: at(ms), pid: 4242 + ms, name: 'runner', msg, ...extra });
const clockOf = (ms: number) => {
  const d = new Date(at(ms));
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
};

test('log view: JSON lines become time, level, message and fields; other lines pass', () => {
  const view = new LogView({ colour: false });
  const out =
    view.write(`${line(1, 'proxy listening', { port: 4100, url: 'http://127.0.0.1:4100/mcp' })}\n`) +
    view.write('[skep] sandbox: /tmp/x is not visible\n') +
    view.write(`${line(2, 'server exited', { code: 3 }, 40)}\n`) +
    view.end();
  assert.equal(
    out,
    `${clockOf(1)} INFO  runner: proxy listening port=4100 url=http://127.0.0.1:4100/mcp\n` +
      '[skep] sandbox: /tmp/x is not visible\n' +
      `${clockOf(2)} WARN  runner: server exited code=3\n`,
  );
});

test('log view: back-to-back repeats (time and pid aside) are shown once with their count', () => {
  const view = new LogView({ colour: false });
  let text = '';
  for (let i = 0; i < 15; i++) text += `${line(i, '[egress] allow CONNECT registry.npmjs.org:443')}\n`;
  text += 'plain\nplain\n';
  text += `${line(20, 'proxy listening')}\n`;
  const out = view.write(text) + view.end();
  assert.equal(
    out,
    `${clockOf(0)} INFO  runner: [egress] allow CONNECT registry.npmjs.org:443\n` +
      '  … ×15\n' +
      'plain\n' +
      '  … ×2\n' +
      `${clockOf(20)} INFO  runner: proxy listening\n`,
  );
});

test('log view: "no container engine" is said once per log; a line cut by a read waits for its end', () => {
  const view = new LogView({ colour: false });
  const engine = (ms: number) =>
    line(ms, 'no container engine answered', { tried: ['/run/docker.sock', '/run/podman/podman.sock'] });
  const whole = `${engine(1)}\n${line(2, 'started')}\n${engine(3)}\n${line(4, 'started again')}\n`;
  const cut = 37;
  const out = view.write(whole.slice(0, cut)) + view.write(whole.slice(cut)) + view.end();
  assert.equal(out.match(/no container engine answered/g)?.length, 1);
  assert.match(out, /started\n.*started again\n$/s);
  // A partial last line (no newline yet) is shown at the end, escaped like any other.
  const tail = new LogView({ colour: false });
  assert.equal(tail.write('half a line \x1b[31m'), '');
  assert.equal(tail.end(), 'half a line \\x1b[31m\n');
});

test('log view: colour only on a terminal without NO_COLOR', () => {
  assert.equal(wantsColour({ isTTY: true }, {}), true);
  assert.equal(wantsColour({ isTTY: true }, { NO_COLOR: '1' }), false);
  assert.equal(wantsColour({ isTTY: false }, {}), false);
  const coloured = new LogView({ colour: true }).write(`${line(1, 'hi', {}, 50)}\n`);
  assert.match(coloured, /\x1b\[31mERROR\x1b\[0m runner: hi\n$/);
});

test('log view: a line that only looks like JSON keeps its own line', () => {
  const view = new LogView({ colour: false });
  assert.equal(
    view.write(`{not json\n${line(1, 'next')}\n`),
    `{not json\n${clockOf(1)} INFO  runner: next\n`,
  );
});
