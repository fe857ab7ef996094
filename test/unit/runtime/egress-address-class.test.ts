/**
 * The container egress script cannot import src/shared (it runs inside the container as plain
 * JavaScript), so it carries its own copy of the address classifier. This runs that exact
 * source (`EGRESS_ADDRESS_CLASS_SOURCE`, the text spliced into `EGRESS_PROXY_SCRIPT`) next to
 * `classifyAddress` of src/shared/net on the shared table, every spelling, and a sweep of the
 * range edges and IPv6 forms that carry IPv4: the two must agree on every address.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { test } from 'node:test';
import { runInNewContext } from 'node:vm';
import {
  EGRESS_ADDRESS_CLASS_SOURCE,
  EGRESS_PROXY_SCRIPT,
} from '../../../src/dataplane/runtime/egress/egress-script.js';
import { type AddressClass, canonicalHost, classifyAddress } from '../../../src/shared/index.js';
import { ADDRESS_CLASS_TABLE, IPV4_SPELLINGS } from '../../fixtures/address-spellings.js';

interface ScriptClassifier {
  classifyAddress(address: string): AddressClass;
  embeddedV4(address: string): number[];
}

function scriptClassifier(): ScriptClassifier {
  return runInNewContext(`${EGRESS_ADDRESS_CLASS_SOURCE}\n({ classifyAddress, embeddedV4 })`, {
    net,
  }) as ScriptClassifier;
}

const script = scriptClassifier();
/** As an array of this realm (the script's arrays come from the vm context). */
const embedded = (address: string): number[] => [...script.embeddedV4(address)];

/** A small deterministic generator (mulberry32), so a failure names an address that fails again. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const dotted = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
const hex = (n: number) => n.toString(16);

test('the egress script splices in the classifier source it is tested with', () => {
  assert.ok(EGRESS_PROXY_SCRIPT.includes(EGRESS_ADDRESS_CLASS_SOURCE));
});

test('RFC 6890, RFC 4291 §2.5.5, RFC 6052: the script and src/shared classify the shared table alike', () => {
  for (const [address, expected] of ADDRESS_CLASS_TABLE) {
    assert.equal(classifyAddress(address), expected, address);
    assert.equal(script.classifyAddress(address), expected, `${address} (egress script)`);
  }
  for (const [host, canonical, cls] of IPV4_SPELLINGS) {
    assert.equal(canonicalHost(host), canonical, host);
    assert.equal(script.classifyAddress(canonical), cls, `${host} (egress script)`);
  }
  assert.throws(() => script.classifyAddress('localhost'), /is not an IP address/);
  assert.throws(() => script.classifyAddress('0x7f.1'), /is not an IP address/);
});

test('the script and src/shared agree on every range edge and on IPv6 forms that carry IPv4', () => {
  const v4Edges = [
    '0.0.0.0/8',
    '10.0.0.0/8',
    '100.64.0.0/10',
    '100.100.100.200/32',
    '127.0.0.0/8',
    '168.63.129.16/32',
    '169.254.0.0/16',
    '172.16.0.0/12',
    '192.0.0.0/24',
    '192.0.2.0/24',
    '192.88.99.0/24',
    '192.168.0.0/16',
    '198.18.0.0/15',
    '198.51.100.0/24',
    '203.0.113.0/24',
    '224.0.0.0/4',
    '240.0.0.0/4',
  ];
  const ipv4: number[] = [0xffffffff];
  for (const range of v4Edges) {
    const [base = '', bits = ''] = range.split('/');
    const first = base.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
    const last = first + 2 ** (32 - Number(bits)) - 1;
    for (const n of [first - 1, first, first + 1, last - 1, last, last + 1])
      if (n >= 0 && n <= 0xffffffff) ipv4.push(n);
  }
  const next = random(6890);
  for (let i = 0; i < 2000; i++) ipv4.push(Math.floor(next() * 2 ** 32));

  const addresses: string[] = [];
  for (const n of ipv4) {
    const hi = hex(n >>> 16);
    const lo = hex(n & 0xffff);
    const inverted = `${hex((n >>> 16) ^ 0xffff)}:${hex((n & 0xffff) ^ 0xffff)}`;
    addresses.push(
      dotted(n),
      `::ffff:${dotted(n)}`,
      `::ffff:${hi}:${lo}`,
      `::${hi}:${lo}`,
      `::ffff:0:${hi}:${lo}`,
      `64:ff9b::${dotted(n)}`,
      `64:ff9b:1::${hi}:${lo}`,
      `2002:${hi}:${lo}::1`,
      `2001:0:${hi}:${lo}::${inverted}`,
      `2001:0:4136:e378:8000:63bf:${inverted}`,
    );
  }
  const prefixes = [
    0, 0x64, 0x100, 0x2001, 0x2002, 0x3fff, 0x4000, 0xfc00, 0xfd00, 0xfd20, 0xfe80, 0xfec0, 0xff00,
  ];
  for (let i = 0; i < 4000; i++) {
    const groups = Array.from({ length: 8 }, () => Math.floor(next() * 0x10000));
    groups[0] =
      next() < 0.5 ? (prefixes[i % prefixes.length] ?? 0) + Math.floor(next() * 0x40) : (groups[0] ?? 0);
    if (next() < 0.3) groups[1] = Math.floor(next() * 0x300);
    if (next() < 0.3) groups.fill(0, 2, 6);
    addresses.push(groups.map(hex).join(':'));
  }
  addresses.push(
    'fd00:ec2::254',
    'fd20:ce::254',
    'fd00:ec2::255',
    '::',
    '::1',
    '::2',
    'fe80::1%eth0',
    '[::1]',
  );

  let compared = 0;
  for (const address of addresses) {
    assert.equal(script.classifyAddress(address), classifyAddress(address), address);
    compared++;
  }
  assert.ok(compared > 20_000, `compared ${compared} addresses`);
});

test('RFC 4291 §2.5.5, RFC 6052, RFC 3056, RFC 4380: the IPv4 addresses an IPv6 form carries (for the gateway check)', () => {
  const gw = 0x0a580001; // 10.88.0.1
  for (const form of [
    '10.88.0.1',
    '::ffff:10.88.0.1',
    '::ffff:a58:1',
    '::a58:1',
    '::ffff:0:a58:1',
    '64:ff9b::a58:1',
    '2002:a58:1::1',
    '[::ffff:a58:1]',
  ])
    assert.ok(script.embeddedV4(form).includes(gw), form);
  assert.deepEqual(embedded('2001:0:a58:1::f7f7:f7f7'), [gw, 0x08080808]);
  assert.deepEqual(embedded('2606:4700::1111'), []);
  assert.deepEqual(embedded('localhost'), []);
});
