/**
 * SigV4 against published vectors of the AWS Signature Version 4 test suite
 * (credentials AKIDEXAMPLE, 2015-08-30T12:36:00Z, us-east-1, service "service").
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { signSigV4 } from '../../../src/dataplane/middleware/auth/aws-sts.js';

const CREDS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const DATE = new Date('2015-08-30T12:36:00Z');
const SCOPE = { region: 'us-east-1', service: 'service' };
const PREFIX =
  'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=';

const vectors: Array<[string, string, string, string]> = [
  [
    'get-vanilla',
    'GET',
    'https://example.amazonaws.com/',
    '5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
  ],
  [
    'post-vanilla',
    'POST',
    'https://example.amazonaws.com/',
    '5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b',
  ],
  [
    'get-vanilla-query-order-key-case',
    'GET',
    'https://example.amazonaws.com/?Param2=value2&Param1=value1',
    'b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500',
  ],
];

for (const [name, method, url, signature] of vectors) {
  test(`SigV4 test suite: ${name}`, async () => {
    const headers = await signSigV4({ method, url, headers: {}, body: undefined }, CREDS, SCOPE, DATE);
    assert.equal(headers['x-amz-date'], '20150830T123600Z');
    assert.equal(headers['authorization'], PREFIX + signature);
    assert.equal(headers['x-amz-content-sha256'], undefined, 'no payload-hash header, like the suite');
  });
}

test('SigV4: a session token is sent and signed', async () => {
  const headers = await signSigV4(
    {
      method: 'POST',
      url: 'https://example.amazonaws.com/mcp',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    },
    { ...CREDS, sessionToken: 'session-token' },
    SCOPE,
    DATE,
  );
  assert.equal(headers['x-amz-security-token'], 'session-token');
  assert.match(
    headers['authorization'] ?? '',
    /SignedHeaders=content-type;host;x-amz-date;x-amz-security-token,/,
  );
});
