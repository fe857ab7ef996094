/**
 * The address classes of the outbound policy (including IPv4-compatible and NAT64 forms): every IPv4
 * spelling the URL parser (and inet_aton) accepts, and every IPv6 form that carries an IPv4
 * address, lands in the class of the address it reaches.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canonicalHost, classifyAddress, isIpLiteral, parseHostList } from '../../../src/shared/index.js';
import { ADDRESS_CLASS_TABLE, IPV4_SPELLINGS } from '../../fixtures/address-spellings.js';

test('address classification table (IPv4, IPv6, mapped, compatible, NAT64, 6to4, Teredo)', () => {
  for (const [address, expected] of ADDRESS_CLASS_TABLE)
    assert.equal(classifyAddress(address), expected, address);
});

test('a name is not an address: classifyAddress throws instead of guessing', () => {
  assert.throws(() => classifyAddress('localhost'), TypeError);
  assert.throws(() => classifyAddress('0x7f.1'), TypeError);
  assert.equal(isIpLiteral('localhost'), false);
  assert.equal(isIpLiteral('[::1]'), true);
});

test('every IPv4 spelling of the URL parser / inet_aton is normalized before it is classified', () => {
  for (const [host, canonical, cls] of IPV4_SPELLINGS) {
    assert.equal(canonicalHost(host), canonical, host);
    assert.equal(classifyAddress(canonicalHost(host)), cls, host);
  }
  assert.equal(canonicalHost('Registry.Example.COM:5000'), 'registry.example.com');
  for (const bad of ['', 'a/b', 'user@host', '1.2.3.4.5', 'ho st', '[fe80::1%25eth0]'])
    assert.throws(() => canonicalHost(bad), TypeError, bad);
});

test('private host lists: host, host:port, [v6]:port; a bad entry is named', () => {
  assert.deepEqual(parseHostList('127.0.0.1:5000, git.internal  [::1]:8443,'), [
    '127.0.0.1:5000',
    'git.internal',
    '[::1]:8443',
  ]);
  assert.deepEqual(parseHostList(undefined), []);
  assert.throws(() => parseHostList('ok.example, bad/host'), /"bad\/host" is not a host/);
  assert.throws(() => parseHostList('host:99999'), /not a host or host:port/);
});
