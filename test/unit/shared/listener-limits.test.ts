import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { BodyBudget } from '../../../src/shared/index.js';

function fakeRequest(): { req: IncomingMessage; destroyed: () => boolean } {
  let destroyed = false;
  const req = { socket: { destroy: () => (destroyed = true) } } as unknown as IncomingMessage;
  return { req, destroyed: () => destroyed };
}

test('the unfinished bodies of a listener stay within the budget: the largest is given up', () => {
  const budget = new BodyBudget(100);
  const big = fakeRequest();
  const small = fakeRequest();
  const bigBody = budget.start(big.req);
  const smallBody = budget.start(small.req);
  assert.equal(budget.grow(bigBody, 90), true);
  assert.equal(budget.grow(smallBody, 5), true);
  // The small body's next chunk goes past 100: the big one is closed, the small one goes on.
  assert.equal(budget.grow(smallBody, 10), true);
  assert.equal(big.destroyed(), true);
  assert.equal(small.destroyed(), false);
  assert.equal(budget.used, 15);
  budget.end(smallBody);
  assert.equal(budget.used, 0);
});

test('a body that is itself the largest past the budget is refused, and ending twice counts once', () => {
  const budget = new BodyBudget(10);
  const one = fakeRequest();
  const body = budget.start(one.req);
  assert.equal(budget.grow(body, 11), false);
  assert.equal(one.destroyed(), false, 'the caller closes its own request');
  assert.equal(budget.used, 0);
  budget.end(body);
  assert.equal(budget.used, 0);
});
