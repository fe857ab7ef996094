/**
 * The error-code table is a public contract: clients switch on `code`, and docs/api.md and the
 * OpenAPI `Error` schema document each code with its HTTP status. This test pins the table
 * so that adding, renaming or re-mapping a code is a deliberate change made here too.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ERROR_CODES, type ErrorCode, errorCodeOf, SkepError } from '../../../src/shared/index.js';

const EXPECTED: Record<ErrorCode, number> = {
  bad_request: 400,
  invalid_name: 400,
  invalid_config: 400,
  invalid_reference: 400,
  invalid_path: 400,
  unauthorized: 401,
  forbidden: 403,
  forbidden_host: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal_error: 500,
  not_implemented: 501,
  bad_gateway: 502,
  unavailable: 503,
  gateway_timeout: 504,
  group_not_found: 404,
  group_exists: 409,
  group_protected: 400,
  group_not_empty: 409,
  workload_not_found: 404,
  workload_exists: 409,
  port_unavailable: 400,
  server_needs_input: 400,
  upgrade_needs_input: 422,
  executable_not_found: 400,
  runtime_unavailable: 400,
  image_verification_failed: 403,
  sandbox_unavailable: 400,
  privileged_not_allowed: 403,
  unsupported_field: 400,
  package_not_runnable: 400,
  registry_not_found: 404,
  server_not_found: 404,
  skill_not_found: 404,
  server_name_ambiguous: 400,
  registry_private_address: 403,
  registry_unavailable: 504,
  registry_invalid: 502,
  registry_auth_required: 503,
  registry_auth_not_configured: 400,
  secrets_not_setup: 404,
  secret_not_found: 404,
  secret_exists: 409,
  secrets_read_only: 405,
  secrets_locked: 400,
  secrets_password_from_env: 400,
  secrets_provider_unavailable: 400,
  secrets_corrupt: 500,
  client_unknown: 400,
  client_config_invalid: 409,
  no_client_detected: 400,
  skill_invalid: 400,
  skill_exists: 409,
  skill_artifact_invalid: 422,
  skill_lock_invalid: 400,
};

test('error codes: the table holds exactly the pinned codes, in order', () => {
  assert.deepEqual(Object.keys(ERROR_CODES), Object.keys(EXPECTED));
});

test('error codes: each code maps to its pinned HTTP status', () => {
  for (const [code, status] of Object.entries(EXPECTED)) {
    assert.equal(ERROR_CODES[code as ErrorCode].status, status, code);
    assert.equal(new SkepError(code as ErrorCode, 'x').status, status, code);
  }
});

test('error codes: codes are snake_case and each has a description', () => {
  for (const [code, entry] of Object.entries(ERROR_CODES)) {
    assert.match(code, /^[a-z]+(_[a-z]+)*$/, code);
    assert.ok(entry.description.trim().length > 0, code);
  }
});

test('errorCodeOf: a SkepError or a table code in another error class; not a system error code', () => {
  assert.equal(errorCodeOf(new SkepError('invalid_path', 'x')), 'invalid_path');
  class Coded extends Error {
    readonly code: ErrorCode = 'payload_too_large';
  }
  assert.equal(errorCodeOf(new Coded('x')), 'payload_too_large');
  class Named extends SkepError {
    override readonly name = 'Named';
  }
  const named = new Named('conflict', 'x');
  assert.equal(named.name, 'Named');
  assert.equal(errorCodeOf(named), 'conflict');
  assert.equal(errorCodeOf(Object.assign(new Error('x'), { code: 'ENOENT' })), undefined);
  assert.equal(errorCodeOf(Object.assign(new Error('x'), { code: 'toString' })), undefined);
  assert.equal(errorCodeOf({ code: 'not_found' }), undefined, 'not an Error');
  assert.equal(errorCodeOf(undefined), undefined);
});
