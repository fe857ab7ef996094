import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { CallerToken, SelfToken } from '../../../src/dataplane/proxy/caller-token.js';

const TOKEN = 'c0ffee'.repeat(10) + 'abcd';
const request = (headers: Record<string, string> = {}) => ({ headers }) as unknown as IncomingMessage;

test('RFC 6750 §2.1: a bearer header with the token is admitted and removed before anyone else sees it', () => {
  const req = request({ authorization: `Bearer ${TOKEN}` });
  assert.deepEqual(new CallerToken(TOKEN).admit(req, 'x=1'), { admitted: true, query: 'x=1' });
  assert.equal(req.headers.authorization, undefined);
  // The scheme is case-insensitive (RFC 9110 §11.1).
  assert.equal(
    new CallerToken(TOKEN).admit(request({ authorization: `bearer ${TOKEN}` }), '').admitted,
    true,
  );
});

test('RFC 6750 §2.3: the token in the query is admitted and stripped, other parameters kept', () => {
  const admitted = new CallerToken(TOKEN).admit(request(), `session_id=s1&skep_token=${TOKEN}`);
  assert.deepEqual(admitted, { admitted: true, query: 'session_id=s1' });
  assert.deepEqual(new CallerToken(TOKEN).admit(request(), `skep_token=${TOKEN}`), {
    admitted: true,
    query: '',
  });
});

test('no token, a wrong one, a prefix of it or a longer one is refused; a foreign Authorization header stays', () => {
  const check = new CallerToken(TOKEN);
  for (const query of [
    '',
    'x=1',
    `skep_token=${TOKEN.slice(0, -1)}`,
    `skep_token=${TOKEN}0`,
    'skep_token=',
    `xskep_token=${TOKEN}`,
  ])
    assert.equal(check.admit(request(), query).admitted, false, query);
  const foreign = request({ authorization: 'Bearer someone-elses' });
  const result = check.admit(foreign, `skep_token=${'0'.repeat(64)}`);
  assert.deepEqual(result, { admitted: false, query: '' }, 'a wrong query token is still stripped');
  assert.equal(foreign.headers.authorization, 'Bearer someone-elses');
  assert.equal(check.admit(request({ authorization: `Basic ${TOKEN}` }), '').admitted, false);
});

test('a token shorter than 128 bits is a programming error', () => {
  assert.throws(() => new CallerToken('short'), /128 bits/);
  assert.throws(() => new CallerToken(''), /128 bits/);
});

test('the runner’s own token is claimed only as the exact bearer header, and removed', () => {
  const self = new SelfToken(TOKEN);
  const own = request({ authorization: `Bearer ${TOKEN}` });
  assert.equal(self.claims(own), true);
  assert.equal(own.headers.authorization, undefined);
  for (const authorization of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(1)}`, `Basic ${TOKEN}`, 'Bearer '])
    assert.equal(self.claims(request({ authorization })), false, authorization);
  assert.equal(self.claims(request()), false, 'no header');
  assert.throws(() => new SelfToken('short'), /128 bits/);
});
