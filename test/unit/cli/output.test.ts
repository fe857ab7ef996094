import assert from 'node:assert/strict';
import { test } from 'node:test';
import { printListing, printOutcome } from '../../../src/cli/output.js';

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
