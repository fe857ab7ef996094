/**
 * The RFC 8693 §4.1 delegation chain as audit events (`delegation`) and webhook requests
 * (`principal.delegation`) record it: one parser for both.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { delegationChainOf } from '../../../src/shared/index.js';

test('RFC 8693 §4.1 delegation: nested act → outermost-first chain of (iss, sub) hops, other claims dropped', () => {
  const act = {
    sub: 'agent-2',
    iss: 'https://as',
    email: 'x@y',
    act: { sub: 'agent-1', act: { sub: 'agent-0' } },
  };
  assert.deepEqual(delegationChainOf(act, 10), {
    chain: [{ iss: 'https://as', sub: 'agent-2' }, { sub: 'agent-1' }, { sub: 'agent-0' }],
    truncated: false,
    omitted: 0,
    malformed: false,
  });
  assert.equal(delegationChainOf(undefined, 10), undefined);
  assert.equal(delegationChainOf(null, 10), undefined);
});

test('RFC 8693 §4.1 delegation: deeper than maxDelegationDepth keeps the outermost hops, truncated with the omitted count', () => {
  let act: Record<string, unknown> = { sub: 'a0' };
  for (let i = 1; i < 5; i++) act = { sub: `a${i}`, act };
  const chain = delegationChainOf(act, 2);
  assert.deepEqual(chain, {
    chain: [{ sub: 'a4' }, { sub: 'a3' }],
    truncated: true,
    omitted: 3,
    malformed: false,
  });
  const exact = delegationChainOf(act, 5);
  assert.equal(exact?.truncated, false);
  assert.equal(exact?.chain.length, 5);
});

test('RFC 8693 §4.1 delegation: malformed reasons — the first violation wins, the hops read so far are kept', () => {
  assert.deepEqual(delegationChainOf('agent', 10), {
    chain: [],
    truncated: false,
    omitted: 0,
    malformed: true,
    malformedReason: 'act_not_object',
  });
  assert.deepEqual(delegationChainOf({ sub: 'a', act: 'b' }, 10), {
    chain: [{ sub: 'a' }],
    truncated: false,
    omitted: 0,
    malformed: true,
    malformedReason: 'nested_act_not_object',
  });
  assert.equal(delegationChainOf({ iss: 1, sub: 2 }, 10)?.malformedReason, 'iss_not_string');
  const sub = delegationChainOf({ sub: 2, act: { sub: 'x', iss: [] } }, 10);
  assert.equal(sub?.malformedReason, 'sub_not_string');
  assert.deepEqual(sub?.chain, [{}, { sub: 'x' }]);
  // A non-object act past the cap is a violation, not an omitted hop.
  assert.deepEqual(delegationChainOf({ sub: 'a', act: { sub: 'b', act: 5 } }, 1), {
    chain: [{ sub: 'a' }],
    truncated: true,
    omitted: 1,
    malformed: true,
    malformedReason: 'nested_act_not_object',
  });
});
