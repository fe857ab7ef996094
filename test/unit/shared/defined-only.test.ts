/** definedOnly: the one way to leave out optional fields that have no value. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { definedOnly } from '../../../src/shared/index.js';

test('definedOnly: drops undefined values only, keeping falsy ones and the key order', () => {
  const out = definedOnly({ a: 1, b: undefined, c: '', d: 0, e: false, f: null, g: undefined });
  assert.deepEqual(Object.keys(out), ['a', 'c', 'd', 'e', 'f']);
  assert.deepEqual(out, { a: 1, c: '', d: 0, e: false, f: null });
  assert.equal(JSON.stringify(definedOnly({ x: undefined as string | undefined })), '{}');
});

test('definedOnly: the result type has optional fields without undefined', () => {
  const host: string | undefined = process.env['SKEP_TEST_UNSET_VARIABLE'];
  const out: { host?: string; port: number } = definedOnly({ host, port: 1 });
  assert.deepEqual(out, { port: 1 });
});
