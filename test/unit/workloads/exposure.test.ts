/**
 * The run-configuration rules for a proxy's reach, as pure functions:
 * loopback binds are free, anything else needs inbound auth; allowed origins are exact.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allowedOriginsProblem } from '../../../src/schemas/index.js';
import { hostExposureProblem } from '../../../src/workloads/index.js';

test('loopback hosts need nothing: 127.0.0.0/8, localhost, ::1', () => {
  for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', 'LOCALHOST', '::1', '[::1]', 'mcp.localhost'])
    assert.equal(hostExposureProblem({ host }), undefined, host);
});

test('beyond loopback, wildcards included, needs oidc (with a verifier) or the embedded AS', () => {
  for (const host of ['0.0.0.0', '::', '[::]', '', '10.0.0.5', 'example.com', '0x7f000001'])
    assert.match(hostExposureProblem({ host }) ?? '', /no inbound authentication/, `'${host}'`);
  assert.match(hostExposureProblem({ host: '0.0.0.0' }) ?? '', /listens on every network interface/);
  assert.match(hostExposureProblem({ host: '10.0.0.5' }) ?? '', /is not a loopback address/);
  assert.match(hostExposureProblem({ host: '0.0.0.0', oidc_config: {} }) ?? '', /no inbound/);
  assert.match(hostExposureProblem({ host: '0.0.0.0', oidc_config: { issuer: '' } }) ?? '', /no inbound/);
  for (const oidc_config of [
    { issuer: 'https://idp.example' },
    { jwksurl: 'https://idp.example/jwks' },
    { introspectionURL: 'https://idp.example/introspect' },
  ])
    assert.equal(
      hostExposureProblem({ host: '0.0.0.0', oidc_config }),
      undefined,
      JSON.stringify(oidc_config),
    );
  assert.equal(hostExposureProblem({ host: '10.0.0.5', embedded_auth_server_config: {} }), undefined);
});

test('RFC 6454 §6.1: allowed origins are scheme://host[:port], nothing more', () => {
  assert.equal(
    allowedOriginsProblem([
      'https://app.example.com',
      'http://localhost:5173',
      'http://[::1]:8080',
      'HTTPS://A.EXAMPLE',
    ]),
    undefined,
  );
  assert.equal(allowedOriginsProblem([]), undefined);
  const cases: Array<[string, RegExp]> = [
    ['*', /is a pattern/],
    ['https://*.example.com', /is a pattern/],
    ['null', /never accepted/],
    ['example.com', /not an http\(s\) origin/],
    ['file:///tmp/x', /not an http\(s\) origin/],
    ['https://u:p@example.com', /not an http\(s\) origin/],
    ['https://example.com/', /write 'https:\/\/example\.com'/],
    ['https://example.com/app', /write 'https:\/\/example\.com'/],
    ['https://example.com#x', /more than an origin/],
  ];
  for (const [value, why] of cases) {
    const problem = allowedOriginsProblem(['https://ok.example', value]) ?? '';
    assert.ok(problem.startsWith(`allowed_origins: '${value}' `), problem);
    assert.match(problem, why, value);
  }
});
