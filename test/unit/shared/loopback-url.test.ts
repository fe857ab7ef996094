/**
 * `isLoopbackUrl`: the one test of "may this OAuth/OIDC URL use plain http" shared by the
 * authorization server's issuer and redirect-URI checks and the OIDC middleware's URL check.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isLoopbackName, isLoopbackUrl } from '../../../src/shared/index.js';

test('RFC 8252 §7.3: only localhost, 127.0.0.1 and [::1] are loopback URLs (stricter than isLoopbackName)', () => {
  const cases: Array<[url: string, loopback: boolean]> = [
    ['http://localhost/cb', true],
    ['http://127.0.0.1:9/cb', true],
    ['http://[::1]:8080/', true],
    ['http://LOCALHOST/', true],
    ['http://app.localhost/', false],
    ['http://127.0.0.2/', false],
    ['http://example.com/', false],
    ['http://0.0.0.0/', false],
  ];
  for (const [url, loopback] of cases) assert.equal(isLoopbackUrl(new URL(url)), loopback, url);
  // The Host guard's isLoopbackName takes these two; a URL allowed plain http must not.
  assert.equal(isLoopbackName('app.localhost'), true);
  assert.equal(isLoopbackName('127.0.0.2'), true);
});
