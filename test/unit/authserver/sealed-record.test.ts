import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { RecordSealer } from '../../../src/authserver/sealed-record.js';

const RECORD = {
  provider_id: 'idp',
  access_token: 'upstream-access-0123',
  refresh_token: 'upstream-refresh-4567',
};
const KEY = 'skep:auth:{ns}:upstream:session-1:idp';

test('NIST SP 800-38D: a sealed record opens under its key and shows none of its fields', () => {
  const sealer = new RecordSealer([randomBytes(32)]);
  const sealed = sealer.seal(KEY, RECORD);
  for (const text of ['upstream-access-0123', 'upstream-refresh-4567', 'access_token', 'idp'])
    assert.ok(!sealed.includes(text), text);
  assert.deepEqual(sealer.open(KEY, sealed), RECORD);
  assert.notEqual(sealer.seal(KEY, RECORD), sealed, 'a fresh nonce each time');
});

test('a record does not open under another key (additional data), another secret, or after any change', () => {
  const secret = randomBytes(32);
  const sealer = new RecordSealer([secret]);
  const sealed = sealer.seal(KEY, RECORD);
  assert.equal(sealer.open(`${KEY}x`, sealed), undefined);
  assert.equal(new RecordSealer([randomBytes(32)]).open(KEY, sealed), undefined);
  const parts = sealed.split('.');
  for (let i = 1; i < parts.length; i++) {
    const changed = [...parts];
    const p = changed[i] as string;
    changed[i] = `${p[0] === 'A' ? 'B' : 'A'}${p.slice(1)}`;
    assert.equal(sealer.open(KEY, changed.join('.')), undefined, `part ${i} changed`);
  }
  for (const text of [JSON.stringify(RECORD), '', 'v1.', `${sealed}.extra`, `v2${sealed.slice(2)}`])
    assert.equal(sealer.open(KEY, text), undefined, text);
});

test('RFC 5869 rotation: the first secret seals, every secret opens', () => {
  const [old, current] = [randomBytes(32), randomBytes(32)];
  const before = new RecordSealer([old]).seal(KEY, RECORD);
  const rotated = new RecordSealer([current, old]);
  assert.deepEqual(rotated.open(KEY, before), RECORD);
  assert.equal(new RecordSealer([old]).open(KEY, rotated.seal(KEY, RECORD)), undefined);
  assert.throws(() => new RecordSealer([]), /at least one secret/);
});
