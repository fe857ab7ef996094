/**
 * The address classes of the outbound policy (issue 16 item 7, finding F7): every IPv4
 * spelling the URL parser (and inet_aton) accepts, and every IPv6 form that carries an IPv4
 * address, lands in the class of the address it reaches.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type AddressClass,
  canonicalHost,
  classifyAddress,
  isIpLiteral,
  parseHostList,
} from '../../../src/shared/index.js';

const TABLE: [address: string, expected: AddressClass][] = [
  // IPv4 loopback, private, link-local/metadata, special, public
  ['127.0.0.1', 'loopback'],
  ['127.8.9.10', 'loopback'],
  ['10.1.2.3', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['172.32.0.1', 'public'],
  ['192.168.1.1', 'private'],
  ['100.64.0.1', 'private'],
  ['100.127.255.255', 'private'],
  ['169.254.169.254', 'link-local'],
  ['169.254.0.23', 'link-local'],
  ['100.100.100.200', 'link-local'],
  ['168.63.129.16', 'link-local'],
  ['0.0.0.0', 'special'],
  ['0.1.2.3', 'special'],
  ['192.0.0.8', 'special'],
  ['192.0.2.1', 'special'],
  ['198.51.100.7', 'special'],
  ['203.0.113.9', 'special'],
  ['198.18.0.1', 'special'],
  ['224.0.0.1', 'special'],
  ['239.255.255.250', 'special'],
  ['240.0.0.1', 'special'],
  ['255.255.255.255', 'special'],
  ['8.8.8.8', 'public'],
  ['93.184.216.34', 'public'],
  ['100.63.255.255', 'public'],
  ['100.128.0.1', 'public'],
  // IPv6 plain
  ['::1', 'loopback'],
  ['[::1]', 'loopback'],
  ['::', 'special'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local'],
  ['febf::1', 'link-local'],
  ['fd00:ec2::254', 'link-local'],
  ['fd20:ce::254', 'link-local'],
  ['fd00:ec2::253', 'private'],
  ['fc00::1', 'private'],
  ['fd12:3456::1', 'private'],
  ['fec0::1', 'private'],
  ['ff02::1', 'special'],
  ['2001:db8::1', 'special'],
  ['3fff::1', 'special'],
  ['100::1', 'special'],
  ['2001:2::1', 'special'],
  ['4000::1', 'special'],
  ['2606:4700:4700::1111', 'public'],
  ['2a00:1450:4001:80b::200e', 'public'],
  // IPv4-mapped (RFC 4291 §2.5.5.2), dotted and hex
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::ffff:10.0.0.1', 'private'],
  ['::ffff:a9fe:a9fe', 'link-local'],
  ['::ffff:8.8.8.8', 'public'],
  // IPv4-translated (RFC 2765)
  ['::ffff:0:7f00:1', 'loopback'],
  // IPv4-compatible (deprecated, still routed by some stacks) — F7
  ['::7f00:1', 'loopback'],
  ['::127.0.0.1', 'loopback'],
  ['::a9fe:a9fe', 'link-local'],
  ['::10.0.0.1', 'private'],
  ['::8.8.8.8', 'public'],
  // NAT64 well-known prefix (RFC 6052) — F7
  ['64:ff9b::7f00:1', 'loopback'],
  ['64:ff9b::127.0.0.1', 'loopback'],
  ['64:ff9b::a9fe:a9fe', 'link-local'],
  ['64:ff9b::10.0.0.1', 'private'],
  ['64:ff9b::8.8.8.8', 'public'],
  // NAT64 local-use prefix (RFC 8215): the operator's network
  ['64:ff9b:1::8.8.8.8', 'private'],
  ['64:ff9b:1::7f00:1', 'loopback'],
  // 6to4 (RFC 3056) embedding a private / loopback / metadata IPv4
  ['2002:7f00:1::1', 'loopback'],
  ['2002:c0a8:101::1', 'private'],
  ['2002:a9fe:a9fe::1', 'link-local'],
  ['2002:808:808::1', 'public'],
  // Teredo (RFC 4380): client address inverted in the last 32 bits
  ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback'], // client ~80ff:fffe = 127.0.0.1
  ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', 'public'], // client 8.8.8.8, server 65.54.227.120
  ['2001:0:7f00:1::f7f7:f7f7', 'loopback'], // server 127.0.0.1, client 8.8.8.8
];

test('issue 16 item 7: address classification table (IPv4, IPv6, mapped, compatible, NAT64, 6to4, Teredo)', () => {
  for (const [address, expected] of TABLE) assert.equal(classifyAddress(address), expected, address);
});

test('a name is not an address: classifyAddress throws instead of guessing', () => {
  assert.throws(() => classifyAddress('localhost'), TypeError);
  assert.throws(() => classifyAddress('0x7f.1'), TypeError);
  assert.equal(isIpLiteral('localhost'), false);
  assert.equal(isIpLiteral('[::1]'), true);
});

test('every IPv4 spelling of the URL parser / inet_aton is normalized before it is classified', () => {
  const spellings: [host: string, canonical: string, cls: AddressClass][] = [
    ['0x7f.1', '127.0.0.1', 'loopback'],
    ['0x7F.0.0.0x1', '127.0.0.1', 'loopback'],
    ['2130706433', '127.0.0.1', 'loopback'],
    ['0177.0.0.1', '127.0.0.1', 'loopback'],
    ['017700000001', '127.0.0.1', 'loopback'],
    ['127.1', '127.0.0.1', 'loopback'],
    ['127.0.1', '127.0.0.1', 'loopback'],
    ['127.0.0.1.', '127.0.0.1', 'loopback'],
    ['0xa9fea9fe', '169.254.169.254', 'link-local'],
    ['0251.0376.0251.0376', '169.254.169.254', 'link-local'],
    ['169.254.43518', '169.254.169.254', 'link-local'],
    ['0', '0.0.0.0', 'special'],
    ['10.1', '10.0.0.1', 'private'],
    ['0xc0.0xa8.1.1', '192.168.1.1', 'private'],
    ['[::ffff:127.0.0.1]', '::ffff:7f00:1', 'loopback'],
    ['[::127.0.0.1]', '::7f00:1', 'loopback'],
    ['[0:0:0:0:0:0:0:1]', '::1', 'loopback'],
    ['[64:ff9b::127.0.0.1]', '64:ff9b::7f00:1', 'loopback'],
    ['8.8.8.8:443', '8.8.8.8', 'public'],
    ['[2606:4700:4700::1111]:443', '2606:4700:4700::1111', 'public'],
  ];
  for (const [host, canonical, cls] of spellings) {
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
