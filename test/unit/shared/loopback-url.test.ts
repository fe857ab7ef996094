/**
 * `isLoopbackUrl`: the one test of "may this OAuth/OIDC URL use plain http" shared by the
 * authorization server's issuer and redirect-URI checks and the OIDC middleware's URL check.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isLoopbackName, isLoopbackUrl } from '../../../src/shared/index.js';

test('RFC 8252 §7.3: localhost, 127.0.0.1 and [::1] are loopback URLs, with or without a port', () => {
  for (const url of [
    'http://localhost/cb',
    'http://127.0.0.1:9/cb',
    'http://[::1]:8080/',
    'http://LOCALHOST/',
  ]) {
    assert.equal(isLoopbackUrl(new URL(url)), true, url);
  }
});

test('isLoopbackUrl is stricter than isLoopbackName: no *.localhost, no other 127/8 address', () => {
  for (const url of [
    'http://app.localhost/',
    'http://127.0.0.2/',
    'http://example.com/',
    'http://0.0.0.0/',
  ]) {
    assert.equal(isLoopbackUrl(new URL(url)), false, url);
  }
  assert.equal(isLoopbackName('app.localhost'), true);
  assert.equal(isLoopbackName('127.0.0.2'), true);
});
