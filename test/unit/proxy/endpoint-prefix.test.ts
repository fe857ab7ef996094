import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  endpointPrefixProblem,
  messagesEndpoint,
  normalizeEndpointPrefix,
} from '../../../src/dataplane/proxy/endpoint-prefix.js';

test('endpoint prefix: RFC 3986 §3.3 paths pass; a trailing / is dropped; none is no prefix', () => {
  for (const ok of ['', '/', '/team-a', '/team-a/', '/a/b~c/%20d', "/x:y@z!$&'()*+,;="])
    assert.equal(endpointPrefixProblem(ok), undefined, ok);
  assert.equal(normalizeEndpointPrefix(undefined), '');
  assert.equal(normalizeEndpointPrefix('/'), '');
  assert.equal(normalizeEndpointPrefix('/team-a/'), '/team-a');
  assert.equal(messagesEndpoint('/team-a', 'abc'), '/team-a/messages?session_id=abc');
  assert.equal(messagesEndpoint('', 'abc'), '/messages?session_id=abc');
});

test('endpoint prefix: not a path, a query or fragment, a network-path reference or a raw space are refused', () => {
  assert.match(endpointPrefixProblem('team-a') ?? '', /must be a path starting with '\/' \(got "team-a"\)/);
  assert.match(endpointPrefixProblem('https://x.example/a') ?? '', /starting with '\/'/);
  assert.match(endpointPrefixProblem('/a?b=1') ?? '', /without a query or fragment/);
  assert.match(endpointPrefixProblem('/a#b') ?? '', /without a query or fragment/);
  assert.match(endpointPrefixProblem('//evil.example') ?? '', /must not start with '\/\/'/);
  assert.match(endpointPrefixProblem('/a b') ?? '', /only URL path characters/);
  assert.match(endpointPrefixProblem('/a%zz') ?? '', /only URL path characters/);
  // The proxy refuses it at construction: the caller validates configuration first.
  assert.throws(() => normalizeEndpointPrefix('team-a'), /endpoint prefix must be a path/);
});
