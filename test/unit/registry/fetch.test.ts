import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isPrivateAddress } from '../../../src/registry/index.js';

test('SSRF guard: loopback, private, link-local, CGNAT, multicast and unspecified addresses are private', () => {
  for (const a of [
    '127.0.0.1',
    '127.8.9.10',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd12:3456::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '64:ff9b::10.0.0.1',
    'not-an-ip',
  ]) {
    assert.equal(isPrivateAddress(a), true, a);
  }
});

test('SSRF guard: public addresses pass', () => {
  for (const a of [
    '1.1.1.1',
    '8.8.8.8',
    '140.82.112.3',
    '172.32.0.1',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
  ]) {
    assert.equal(isPrivateAddress(a), false, a);
  }
});
