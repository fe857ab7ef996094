import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidRegistryError, toRegistryDocument } from '../../../src/registry/document.js';
import { generateDocument } from './fixtures.js';

test('the legacy ToolHive format is refused with a message saying so', () => {
  assert.throws(
    () => toRegistryDocument({ version: '1.0.0', servers: { x: { image: 'a' } } }, 'f.json'),
    (e) => e instanceof InvalidRegistryError && /legacy ToolHive format/.test(e.message),
  );
});

test('a registry with no servers and no skills is refused', () => {
  assert.throws(
    () => toRegistryDocument({ version: '1.0.0', data: { servers: [] } }, 'f.json'),
    (e) => e instanceof InvalidRegistryError && /no servers and no skills/.test(e.message),
  );
});

test('validation problems name the JSON path of the bad field', () => {
  const doc = generateDocument(3) as unknown as { data: { servers: Record<string, unknown>[] } };
  doc.data.servers[1]!['name'] = 'no-slash';
  delete doc.data.servers[2]!['description'];
  assert.throws(
    () => toRegistryDocument(doc, 'f.json'),
    (e) =>
      e instanceof InvalidRegistryError &&
      e.message.includes('data.servers.1.name') &&
      e.message.includes('data.servers.2.description: is required'),
  );
});

test('non-objects are refused', () => {
  for (const v of [null, [], 'x', 3]) assert.throws(() => toRegistryDocument(v, 'f'), InvalidRegistryError);
});
