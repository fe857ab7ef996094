import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  errorMessage,
  INVALID_REQUEST,
  jsonRpcError,
  METHOD_NOT_FOUND,
  PARSE_ERROR,
  PROTOCOL_ERRORS,
  refusalBody,
  resultMessage,
} from '../../../src/protocol/index.js';

test('JSON-RPC 2.0 §5.1: the pre-defined error codes', () => {
  assert.equal(PARSE_ERROR, -32700);
  assert.equal(INVALID_REQUEST, -32600);
  assert.equal(METHOD_NOT_FOUND, -32601);
});

test('jsonRpcError leaves an undefined id out, keeps null, and adds data only when given', () => {
  assert.deepEqual(jsonRpcError(undefined, -32600, 'bad'), {
    jsonrpc: '2.0',
    error: { code: -32600, message: 'bad' },
  });
  assert.equal('id' in jsonRpcError(undefined, -32600, 'bad'), false);
  assert.deepEqual(jsonRpcError(null, -32600, 'bad'), {
    jsonrpc: '2.0',
    id: null,
    error: { code: -32600, message: 'bad' },
  });
  assert.deepEqual(jsonRpcError('a', 429, 'slow', { retryAfterSeconds: 3 }), {
    jsonrpc: '2.0',
    id: 'a',
    error: { code: 429, message: 'slow', data: { retryAfterSeconds: 3 } },
  });
});

test('JSON-RPC 2.0 §5: errorMessage sends a missing id as null', () => {
  assert.equal(
    errorMessage(undefined, -32700, 'Parse error'),
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
  );
  assert.equal(resultMessage(3, {}), '{"jsonrpc":"2.0","id":3,"result":{}}');
});

test('the protocol error table: refusals keep their wire status, code and message', () => {
  assert.deepEqual(refusalBody('rate_limited', 7, { retryAfterSeconds: 2 }), {
    jsonrpc: '2.0',
    id: 7,
    error: { code: 429, message: 'Rate limit exceeded', data: { retryAfterSeconds: 2 } },
  });
  assert.equal(PROTOCOL_ERRORS.rate_limited.status, 429);
  assert.deepEqual(refusalBody('unauthorized', undefined), {
    jsonrpc: '2.0',
    error: { code: 403, message: 'Unauthorized' },
  });
  assert.equal(PROTOCOL_ERRORS.unauthorized.status, 403);
  assert.equal(PROTOCOL_ERRORS.session_not_found.status, 404);
  assert.equal(PROTOCOL_ERRORS.session_not_found.code, -32001);
  assert.equal(PROTOCOL_ERRORS.batch_refused.code, INVALID_REQUEST);
});
