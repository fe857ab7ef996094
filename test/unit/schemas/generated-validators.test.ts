/**
 * The checked-in standalone validators (src/schemas/validators/*.generated.ts) are what
 * scripts/gen-validators.mjs makes of today's schemas, and import nothing (a workload runner
 * loads them without Ajv or TypeBox).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { renderValidators } from '../../../scripts/gen-validators.mjs';

const root = new URL('../../../', import.meta.url);

test('every generated validator is up to date with its schema (npm run gen:validators)', async () => {
  const files = await renderValidators();
  assert.ok(files.length > 0);
  for (const { file, text } of files) {
    const current = readFileSync(fileURLToPath(new URL(file, root)), 'utf8');
    assert.equal(current, text, `${file} is stale`);
  }
});

test('a generated validator imports nothing', async () => {
  const files = await renderValidators();
  for (const { file, text } of files) {
    assert.doesNotMatch(text, /^\s*import\s|require\(/m, file);
  }
});
