/**
 * The proxy's Content-Type test: a plain string check of the media type,
 * RFC 9110 §8.3.1 (case-insensitive type/subtype, parameters after `;`).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hasMediaType } from '../../../src/dataplane/proxy/http-util.js';

test('RFC 9110 §8.3.1: application/json with any case and parameters is JSON', () => {
  for (const value of [
    'application/json',
    'application/json; charset=utf-8',
    'application/json;charset=UTF-8',
    'Application/JSON',
    ' application/json ; charset=utf-8',
  ])
    assert.equal(hasMediaType(value, 'application/json'), true, value);
});

test('anything else is not JSON: simple-request types, near misses, suffixes, nothing', () => {
  for (const value of [
    undefined,
    '',
    'text/plain',
    'text/plain; charset=application/json',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'text/json',
    'application/jsonp',
    'application/json-seq',
    'application/vnd.api+json',
    'application/json2;application/json',
    'application /json',
  ])
    assert.equal(hasMediaType(value, 'application/json'), false, String(value));
});

test('text/event-stream is recognised the same way (relayed bodies)', () => {
  assert.equal(hasMediaType('text/event-stream', 'text/event-stream'), true);
  assert.equal(hasMediaType('Text/Event-Stream; charset=utf-8', 'text/event-stream'), true);
  assert.equal(hasMediaType('text/html', 'text/event-stream'), false);
});
