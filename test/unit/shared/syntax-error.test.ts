import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { jsonSyntaxError, yamlSyntaxError } from '../../../src/shared/index.js';

const SECRET = 'S3cr3t-Value-9f2c';

function jsonFailure(text: string): unknown {
  try {
    JSON.parse(text);
  } catch (err) {
    return err;
  }
  throw new Error(`${text} parsed`);
}

test("JSON: where it broke, never the text (V8's own message quotes it)", () => {
  const shadow = `root:${SECRET}:20211:0:99999:7:::`;
  assert.match(String(jsonFailure(shadow)), /"root:S3cr3/, 'V8 quotes the text: the reason for this helper');
  assert.equal(jsonSyntaxError(shadow, jsonFailure(shadow)), 'syntax error');
  assert.doesNotMatch(jsonSyntaxError(shadow, jsonFailure(shadow)), /root|S3cr3/);
  const open = `{\n  "token": "${SECRET}`;
  assert.equal(jsonSyntaxError(open, jsonFailure(open)), 'syntax error at line 2, column 30');
  assert.equal(jsonSyntaxError('  \n', jsonFailure('  \n')), 'syntax error: the text is empty');
});

test('YAML: the code and position, never the line the yaml package shows', () => {
  let failure: unknown;
  try {
    parseYaml(`ok: 1\naws: key: ${SECRET}\n`);
  } catch (err) {
    failure = err;
  }
  assert.match(String(failure), new RegExp(SECRET), 'the yaml package quotes the line');
  assert.equal(yamlSyntaxError(failure), 'syntax error (BLOCK_AS_IMPLICIT_KEY) at line 2, column 6');
  assert.equal(yamlSyntaxError(new Error(SECRET)), 'syntax error');
});
