import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeConnectError } from '../../../src/shared/index.js';

const sys = (code: string, more: Record<string, unknown> = {}) =>
  Object.assign(new Error(`${code} test`), { code, syscall: 'connect', ...more });

test('DNS failures name the host, from the error or the URL', () => {
  const fetchFailed = new TypeError('fetch failed', {
    cause: sys('ENOTFOUND', { hostname: 'nowhere.invalid' }),
  });
  assert.equal(
    describeConnectError(fetchFailed, 'https://other.example/mcp'),
    "the host name 'nowhere.invalid' does not resolve (DNS: ENOTFOUND); check the URL",
  );
  assert.equal(
    describeConnectError(sys('EAI_AGAIN'), 'https://registry.example/x.json'),
    "the host name 'registry.example' cannot be resolved right now (DNS: EAI_AGAIN); check the network connection and DNS settings",
  );
});

test('a refused connection names the address, also inside an AggregateError (several addresses tried)', () => {
  const both = new TypeError('fetch failed', {
    cause: new AggregateError([sys('ECONNREFUSED', { address: '::1', port: 8080 })], 'connect failed'),
  });
  assert.equal(
    describeConnectError(both, 'http://localhost:8080/mcp'),
    'nothing accepts connections at [::1]:8080 (ECONNREFUSED); check the URL and that the server is running',
  );
  assert.equal(
    describeConnectError(sys('ECONNREFUSED'), 'http://localhost/mcp'),
    'nothing accepts connections at localhost:80 (ECONNREFUSED); check the URL and that the server is running',
  );
});

test('TLS, timeouts and unknown codes', () => {
  assert.equal(
    describeConnectError(sys('DEPTH_ZERO_SELF_SIGNED_CERT'), 'https://self.example/'),
    'the TLS certificate of self.example is not trusted (DEPTH_ZERO_SELF_SIGNED_CERT); check the URL, or add the CA with NODE_EXTRA_CA_CERTS',
  );
  assert.equal(
    describeConnectError(sys('UND_ERR_CONNECT_TIMEOUT'), 'https://slow.example/'),
    'connecting to slow.example:443 timed out (UND_ERR_CONNECT_TIMEOUT); check the URL, the network and any firewall',
  );
  assert.equal(describeConnectError(sys('EPROTO'), 'https://x.example/'), 'EPROTO test');
});

test('not a connection error: undefined, so the caller keeps its own words', () => {
  assert.equal(describeConnectError(new Error('boom'), 'https://x.example/'), undefined);
  assert.equal(describeConnectError('text'), undefined);
  const badPort = new TypeError('fetch failed', { cause: new Error('bad port') });
  assert.equal(
    describeConnectError(badPort, 'http://127.0.0.1:6000/mcp'),
    'fetch refuses to connect to port 6000 (a port browsers block); use another port',
  );
});
