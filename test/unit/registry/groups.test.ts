/**
 * Registry groups: `data.groups` of a source (Skep's extension of the
 * upstream format) and the built-in catalog's groups, seen in ToolHive's native shape
 * ("Registry content" → `groups`, "Group": `description`, `name`, `servers`, `remote_servers`).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidRegistryError, toRegistryDocument } from '../../../src/registry/document.js';
import { builtinDocument, RegistryIndex } from '../../../src/registry/index.js';
import { validateGroupName } from '../../../src/groups/index.js';
import { generateDocument } from './fixtures.js';

/** Three generated servers: 0 is OCI, 1 is npm (both image servers), 2 is remote. */
function withGroups(groups: unknown): unknown {
  const doc = generateDocument(3);
  return { ...doc, data: { ...doc.data, groups } };
}

const names = generateDocument(3).data.servers.map((s) => s.name);

test('"Group": a group lists its image members under servers and its remote members under remote_servers', () => {
  const doc = toRegistryDocument(
    withGroups([{ name: 'team tools', description: 'What the team uses', servers: [names[2], names[0]] }]),
    'f.json',
  );
  const native = new RegistryIndex(doc).nativeRegistry();
  assert.equal(native.groups.length, 1);
  const group = native.groups[0]!;
  assert.deepEqual(Object.keys(group).sort(), ['description', 'name', 'remote_servers', 'servers']);
  assert.equal(group.name, 'team tools');
  assert.equal(group.description, 'What the team uses');
  assert.deepEqual(Object.keys(group.servers), [names[0]]);
  assert.deepEqual(Object.keys(group.remote_servers), [names[2]]);
  // The members are the same objects as the top-level entries (one view, nothing stored twice).
  assert.equal(group.servers[names[0]!], native.servers[names[0]!]);
  assert.equal(group.remote_servers[names[2]!], native.remote_servers[names[2]!]);
  assert.ok(group.remote_servers[names[2]!]?.url.startsWith('https://'));
});

test('a source without data.groups has an empty group list (groups is an array)', () => {
  const native = new RegistryIndex(toRegistryDocument(generateDocument(3), 'f.json')).nativeRegistry();
  assert.deepEqual(native.groups, []);
});

test('groups are validated: unknown or repeated members, a group defined twice, a bad name, no members', () => {
  const cases: [unknown, RegExp][] = [
    [
      [{ name: 'g', description: 'd', servers: [names[0], 'io.example/nope'] }],
      /data\.groups\.0\.servers\.1: io\.example\/nope is not a server of data\.servers/,
    ],
    [
      [{ name: 'g', description: 'd', servers: [names[1], names[1]] }],
      /data\.groups\.0\.servers\.1: .* is listed twice/,
    ],
    [
      [
        { name: 'g', description: 'd', servers: [names[0]] },
        { name: 'g', description: 'e', servers: [names[1]] },
      ],
      /data\.groups\.1\.name: group g is defined twice/,
    ],
    [[{ name: 'Bad Name', description: 'd', servers: [names[0]] }], /data\.groups\.0\.name/],
    [[{ name: 'g', description: 'd', servers: [] }], /data\.groups\.0\.servers/],
    [[{ name: 'g', servers: [names[0]] }], /data\.groups\.0\.description: is required/],
  ];
  for (const [groups, message] of cases) {
    assert.throws(
      () => toRegistryDocument(withGroups(groups), 'f.json'),
      (e) => e instanceof InvalidRegistryError && message.test(e.message),
      String(message),
    );
  }
});

test('the built-in catalog offers groups; every member is a catalog server and every name a valid Skep group name', () => {
  const doc = builtinDocument();
  const native = new RegistryIndex(toRegistryDocument(doc, 'built-in')).nativeRegistry();
  assert.ok(native.groups.length >= 3, `${native.groups.length} groups`);
  for (const group of native.groups) {
    assert.doesNotThrow(() => validateGroupName(group.name), group.name);
    assert.ok(group.description.length > 0);
    const members = [...Object.keys(group.servers), ...Object.keys(group.remote_servers)];
    const defined = doc.data.groups?.find((g) => g.name === group.name)?.servers ?? [];
    assert.deepEqual(members.sort(), [...defined].sort(), `${group.name}: every member is shown`);
    assert.ok(members.length >= 2, `${group.name} has several servers`);
  }
  const starter = native.groups.find((g) => g.name === 'starter');
  assert.ok(starter !== undefined);
  // The starter group needs no credentials: no member declares a required secret.
  for (const server of Object.values(starter.servers))
    assert.ok(!(server.env_vars ?? []).some((e) => e.required === true && e.secret === true), server.name);
  const cloudflare = native.groups.find((g) => g.name === 'cloudflare');
  assert.equal(Object.keys(cloudflare?.remote_servers ?? {}).length, 4);
});
