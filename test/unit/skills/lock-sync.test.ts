/**
 * A skill that a lock-file sync or upgrade could not install is reported with one of the
 * reference's failure reasons (its SyncResult on the wire), chosen from the error's code.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { failure, failureReason } from '../../../src/skills/lock-sync.js';
import { SkepError } from '../../../src/shared/index.js';

test('rejected input — a bad request, source, path, client or lock file — is validation-rejected', () => {
  for (const code of [
    'bad_request',
    'invalid_reference',
    'invalid_path',
    'skill_invalid',
    'client_unknown',
    'no_client_detected',
    'skill_lock_invalid',
  ] as const)
    assert.equal(failureReason(new SkepError(code, 'x')), 'validation-rejected', code);
  // Skep's own environment is at fault, not the skill.
  assert.equal(failureReason(new SkepError('invalid_config', 'x')), 'unknown');
});

test('the other kinds keep their reasons; an error that is not a domain error is unknown', () => {
  assert.equal(failureReason(new SkepError('bad_gateway', 'x')), 'registry-unreachable');
  assert.equal(failureReason(new SkepError('skill_not_found', 'x')), 'digest-missing');
  assert.equal(failureReason(new SkepError('forbidden', 'x')), 'unsigned-rejected');
  assert.equal(failureReason(new SkepError('conflict', 'x')), 'unknown');
  assert.equal(failureReason(new Error('EIO')), 'unknown');
});

test('a failure carries the name, the reason and the message', () => {
  // What the signature check throws when a trusted key file cannot be read.
  const err = new SkepError('invalid_path', 'trusted key file: cannot read "/keys/team.pub": EACCES');
  assert.deepEqual(failure('lint', err), {
    name: 'lint',
    reason: 'validation-rejected',
    error: 'trusted key file: cannot read "/keys/team.pub": EACCES',
  });
});
