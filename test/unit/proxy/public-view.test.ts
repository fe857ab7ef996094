import assert from 'node:assert/strict';
import { test } from 'node:test';
import { publicViewResolver } from '../../../src/dataplane/proxy/public-view.js';
import { createLineLogger } from '../../../src/shared/index.js';

function resolver(endpointPrefix: string, trustProxyHeaders: boolean) {
  const lines: string[] = [];
  const logger = createLineLogger({ level: 'debug', write: (line) => lines.push(line) });
  return { of: publicViewResolver({ endpointPrefix, trustProxyHeaders, logger }), lines };
}

test('untrusted: X-Forwarded-* is ignored; endpoint_prefix still applies', () => {
  const headers = { 'x-forwarded-prefix': '/team-a', 'x-forwarded-host': 'gw.example.com' };
  assert.deepEqual(resolver('', false).of(headers), { prefix: '', origin: undefined });
  assert.deepEqual(resolver('/fixed', false).of(headers), { prefix: '/fixed', origin: undefined });
});

test('trusted: prefix (trailing / and /sse dropped) and origin from proto, host and port', () => {
  const { of } = resolver('', true);
  assert.deepEqual(of({ 'x-forwarded-prefix': '/team-a/' }), { prefix: '/team-a', origin: undefined });
  assert.deepEqual(of({ 'x-forwarded-prefix': '/team-a/sse' }), { prefix: '/team-a', origin: undefined });
  assert.deepEqual(of({ 'x-forwarded-prefix': '/' }), { prefix: '', origin: undefined });
  assert.deepEqual(of({ 'x-forwarded-host': 'GW.example.com', 'x-forwarded-proto': 'HTTPS' }), {
    prefix: '',
    origin: 'https://gw.example.com',
  });
  assert.deepEqual(of({ 'x-forwarded-host': 'gw.example.com:8443', 'x-forwarded-port': '443' }), {
    prefix: '',
    origin: 'http://gw.example.com:443',
  });
  assert.deepEqual(of({ 'x-forwarded-host': '[::1]:9000', 'x-forwarded-prefix': '/a%20b' }), {
    prefix: '/a%20b',
    origin: 'http://[::1]:9000',
  });
  // The explicit endpoint_prefix wins over the header; the origin still follows the headers.
  assert.deepEqual(
    resolver('/fixed', true).of({ 'x-forwarded-prefix': '/team-a', 'x-forwarded-host': 'gw' }),
    {
      prefix: '/fixed',
      origin: 'http://gw',
    },
  );
});

test('trusted: malformed values are ignored, not repaired, and logged once at debug', () => {
  const { of, lines } = resolver('', true);
  for (const prefix of [
    '//evil',
    'evil',
    '/a?b',
    '/a#b',
    '/a/./b',
    '/a/..',
    '/a//b',
    '/a\u0000b',
    '/a, /b',
    '/é',
  ])
    assert.equal(of({ 'x-forwarded-prefix': prefix }).prefix, '', JSON.stringify(prefix));
  for (const [host, extra] of [
    ['evil.example/path', {}],
    ['user@evil.example', {}],
    ['evil.example:70000', {}],
    ['gw.example.com', { 'x-forwarded-proto': 'javascript' }],
    ['gw.example.com', { 'x-forwarded-port': '80a' }],
    ['gw.example.com, other.example', {}],
  ] as const)
    assert.equal(of({ 'x-forwarded-host': host, ...extra }).origin, undefined, host);
  assert.equal(lines.filter((l) => l.includes('ignored a malformed forwarded header')).length, 1);
});
