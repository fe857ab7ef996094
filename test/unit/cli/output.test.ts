import assert from 'node:assert/strict';
import { test } from 'node:test';
import { printListing, printOutcome } from '../../../src/control/cli/output.js';

/** What `fn` writes to stdout (the helpers write there and nowhere else). */
function stdoutOf(fn: () => void): string {
  const chunks: string[] = [];
  const write = process.stdout.write;
  process.stdout.write = (chunk: string) => {
    chunks.push(chunk);
    return true;
  };
  try {
    fn();
  } finally {
    process.stdout.write = write;
  }
  return chunks.join('');
}

test('a listing is a table for people: padded columns, empty cells for undefined, no trailing blanks', () => {
  const out = stdoutOf(() =>
    printListing(
      {},
      { ignored: true },
      ['NAME', 'PORT', 'SANDBOX'],
      [
        ['fetch', 8080, true],
        ['a-longer-name', undefined, false],
      ],
    ),
  );
  assert.equal(out, 'NAME           PORT  SANDBOX\nfetch          8080  true\na-longer-name        false\n');
});

test('a listing with --json is the JSON value only, indented, not the rows', () => {
  const out = stdoutOf(() => printListing({ json: true }, { servers: [{ name: 'x' }] }, ['NAME'], [['y']]));
  assert.equal(out, '{\n  "servers": [\n    {\n      "name": "x"\n    }\n  ]\n}\n');
});

test('an outcome is one line of text, or the JSON value with --json', () => {
  assert.equal(
    stdoutOf(() => printOutcome({ json: false }, { name: 'g' }, 'group g created')),
    'group g created\n',
  );
  assert.equal(
    stdoutOf(() => printOutcome({ json: true }, { name: 'g' }, 'group g created')),
    '{\n  "name": "g"\n}\n',
  );
});

test('server text in a table cell or an outcome line cannot move the cursor, write the clipboard or add a row', () => {
  const hostile = '\x1b]52;c;ZXZpbA==\x07ok\x1b[2A\u009b2J\rfake\nNAME  forged-row';
  const table = stdoutOf(() => printListing({}, {}, ['NAME', 'DESCRIPTION'], [['echo', hostile]]));
  assert.ok(!/[\x00-\x08\x0b-\x1f\x7f-\x9f]/.test(table.replace(/\n/g, '')), JSON.stringify(table));
  assert.equal(table.split('\n').length, 3, `one header, one row: ${JSON.stringify(table)}`);
  assert.match(table, /\\x1b\]52;c;ZXZpbA==\\x07ok\\x1b\[2A\\x9b2J\\x0dfake NAME {2}forged-row/);
  const line = stdoutOf(() => printOutcome({}, {}, `pushed ${hostile}`));
  assert.ok(
    !line.includes('\x1b') && !line.includes('\u009b') && !/\r(?!\n)/.test(line),
    JSON.stringify(line),
  );
});

test('--json keeps the value but escapes DEL and C1 controls as \\u00XX (C0 is escaped by JSON itself)', () => {
  const value = { description: '\x1b[31m\u009b2J\x7f' };
  const out = stdoutOf(() => printListing({ json: true }, value, ['X'], []));
  assert.equal(out, '{\n  "description": "\\u001b[31m\\u009b2J\\u007f"\n}\n');
  assert.deepEqual(JSON.parse(out), value);
});
