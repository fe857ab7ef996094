import assert from 'node:assert/strict';
import { test } from 'node:test';
import { normalizePaging, RegistryIndex } from '../../../src/registry/index.js';
import { isSkepError } from '../../../src/shared/index.js';
import { generateDocument, prng, WORDS } from './fixtures.js';

test('Limits: limit defaults to 50, is clamped to 200; page is 1-based, default 1', () => {
  assert.deepEqual(normalizePaging(undefined, undefined), { page: 1, limit: 50 });
  assert.deepEqual(normalizePaging('3', '10'), { page: 3, limit: 10 });
  assert.deepEqual(normalizePaging('1', '500'), { page: 1, limit: 200 });
  assert.deepEqual(normalizePaging(2, 200), { page: 2, limit: 200 });
});

test('non-integer or non-positive page/limit fall back to the defaults', () => {
  for (const bad of ['0', '-1', 'abc', '1.5', '', ' ', '1e3', '0x10']) {
    assert.deepEqual(normalizePaging(bad, bad), { page: 1, limit: 50 }, JSON.stringify(bad));
  }
  // A page so large that the offset would not be a safe integer is capped.
  const huge = normalizePaging('9999999999999999999', '200');
  assert.ok(Number.isSafeInteger((huge.page - 1) * huge.limit));
});

test('paging invariant: all pages together are the filtered set, in name order, no duplicates, total right', () => {
  const doc = generateDocument(503, 0, 7);
  const index = new RegistryIndex(doc);
  const rand = prng(99);
  const queries = [
    undefined,
    '',
    ...WORDS,
    'SEARCH',
    'Git',
    'server 1',
    'no-such-thing',
    'io.example',
    '/',
    '-1',
  ];
  for (let round = 0; round < 120; round++) {
    const q = queries[Math.floor(rand() * queries.length)];
    const limit = 1 + Math.floor(rand() * 260); // crosses the 200 clamp
    const needle = (q ?? '').trim().toLowerCase();
    const expected = doc.data.servers
      .filter(
        (s) =>
          needle === '' ||
          s.name.toLowerCase().includes(needle) ||
          s.description.toLowerCase().includes(needle),
      )
      .map((s) => s.name)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const seen: string[] = [];
    let total = -1;
    for (let page = 1; page < 1000; page++) {
      const result = index.listServers(q, normalizePaging(page, limit));
      assert.equal(result.metadata.limit, Math.min(limit, 200));
      assert.equal(result.metadata.page, page);
      total = result.metadata.total;
      if (result.items.length === 0) break;
      assert.ok(result.items.length <= Math.min(limit, 200));
      seen.push(...result.items.map((s) => s.name));
    }
    assert.equal(total, expected.length, `total for q=${q} limit=${limit}`);
    assert.deepEqual(seen, expected, `pages for q=${q} limit=${limit}`);
    assert.equal(new Set(seen).size, seen.length, 'no duplicates');
  }
});

test('a page past the end is empty but total stays right', () => {
  const index = new RegistryIndex(generateDocument(30));
  const result = index.listServers(undefined, normalizePaging(5, 10));
  assert.deepEqual(result.items, []);
  assert.equal(result.metadata.total, 30);
});

test('skills: q matches name, namespace or description; stable order; paging invariant', () => {
  const doc = generateDocument(1, 77, 5);
  const index = new RegistryIndex(doc);
  for (const q of ['alpha', 'io.example.beta', 'about gamma', 'SKILL-1', 'zzz']) {
    const needle = q.toLowerCase();
    const expected = (doc.data.skills ?? []).filter(
      (s) =>
        s.name.includes(needle) ||
        s.namespace.includes(needle) ||
        s.description.toLowerCase().includes(needle),
    );
    const got = [];
    for (let page = 1; ; page++) {
      const r = index.listSkills(q, normalizePaging(page, 7));
      assert.equal(r.metadata.total, expected.length);
      if (r.items.length === 0) break;
      got.push(...r.items);
    }
    assert.equal(got.length, expected.length, q);
    const names = got.map((s) => s.name);
    assert.deepEqual(
      names,
      [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
    );
  }
  const first = doc.data.skills![0]!;
  assert.equal(index.getSkill(first.namespace, first.name), first);
  assert.throws(
    () => index.getSkill(first.namespace, 'missing'),
    (e) => isSkepError(e) && e.code === 'skill_not_found',
  );
});

test('lookup by exact name, by unique short name; ambiguous short name lists the candidates', () => {
  const base = generateDocument(3);
  const a = { ...base.data.servers[0]!, name: 'io.one/dup' };
  const b = { ...base.data.servers[1]!, name: 'io.two/dup' };
  const c = { ...base.data.servers[2]!, name: 'io.three/single' };
  const index = new RegistryIndex({ ...base, data: { servers: [a, b, c] } });
  assert.equal(index.getServer('io.one/dup').name, 'io.one/dup');
  assert.equal(index.getServer('single').name, 'io.three/single');
  assert.throws(
    () => index.getServer('dup'),
    (e) =>
      isSkepError(e) && e.code === 'server_name_ambiguous' && e.message.includes('io.one/dup, io.two/dup'),
  );
  assert.throws(
    () => index.getServer('io.x/single'),
    (e) => isSkepError(e) && e.code === 'server_not_found',
  );
  assert.throws(
    () => index.getServer('nothing'),
    (e) => isSkepError(e) && e.code === 'server_not_found',
  );
});

test('duplicate names: the first entry in name order wins and is counted', () => {
  const base = generateDocument(2);
  const one = { ...base.data.servers[0]!, name: 'io.x/same', description: 'first' };
  const two = { ...base.data.servers[1]!, name: 'io.x/same', description: 'second' };
  const index = new RegistryIndex({ ...base, data: { servers: [one, two] } });
  assert.equal(index.serverCount, 1);
  assert.equal(index.duplicates, 1);
  assert.equal(index.getServer('same').description, 'first');
});
