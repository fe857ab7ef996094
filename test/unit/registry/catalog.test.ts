import assert from 'node:assert/strict';
import { test } from 'node:test';
import { toRegistryDocument } from '../../../src/registry/document.js';
import { builtinDocument, RegistryIndex } from '../../../src/registry/index.js';
import { readExtension } from '../../../src/registry/native-view.js';

const doc = builtinDocument();
const index = new RegistryIndex(toRegistryDocument(doc, 'built-in'));
const native = index.nativeRegistry();

test('the built-in catalog validates as an upstream registry document', () => {
  assert.doesNotThrow(() => toRegistryDocument(builtinDocument(), 'built-in'));
  assert.equal(index.duplicates, 0, 'no duplicate names');
});

test('at least 30 servers, image-based and remote, and at least 5 skills', () => {
  const images = Object.keys(native.servers).length;
  const remotes = Object.keys(native.remote_servers).length;
  assert.ok(images + remotes >= 30, `${images + remotes} servers`);
  assert.ok(images >= 10, `${images} image/package servers`);
  assert.ok(remotes >= 10, `${remotes} remote servers`);
  assert.ok((doc.data.skills ?? []).length >= 5);
});

test('every short name is unique, so `skep run <short name>` is never ambiguous', () => {
  const shorts = doc.data.servers.map((s) => s.name.split('/')[1]);
  assert.equal(new Set(shorts).size, shorts.length);
  for (const s of doc.data.servers) assert.equal(index.findServer(s.name.split('/')[1]!).name, s.name);
});

test('MCP registry rule: descriptions are 1–100 characters', () => {
  for (const s of doc.data.servers)
    assert.ok(s.description.length >= 1 && s.description.length <= 100, s.name);
});

test('every entry points at its source and carries tier, status and tags', () => {
  for (const s of doc.data.servers) {
    assert.ok(
      s.repository?.url !== undefined || s.websiteUrl !== undefined,
      `${s.name} has a repository or website`,
    );
    const ext = readExtension(s);
    assert.ok(ext.tier === 'Official' || ext.tier === 'Community', s.name);
    assert.equal(ext.status, 'active');
    assert.ok((ext.tags ?? []).length > 0, `${s.name} has tags`);
  }
  for (const s of Object.values(native.servers)) assert.ok(s.tools.length > 0, `${s.name} lists its tools`);
});

test('credentials are flagged secret (tokens, keys, passwords)', () => {
  for (const s of Object.values(native.servers)) {
    for (const env of s.env_vars ?? []) {
      if (/TOKEN|API_KEY|PASSWORD|CONNECTION_STRING/.test(env.name))
        assert.equal(env.secret, true, `${s.name} ${env.name}`);
    }
  }
  const github = index.findServer('github');
  assert.equal(github.is_remote, false);
  if (!github.is_remote) {
    const pat = github.server.env_vars?.find((e) => e.name === 'GITHUB_PERSONAL_ACCESS_TOKEN');
    assert.deepEqual(pat, {
      name: 'GITHUB_PERSONAL_ACCESS_TOKEN',
      description: 'Personal access token',
      required: true,
      secret: true,
    });
    assert.equal(github.server.image, 'ghcr.io/github/github-mcp-server');
  }
});

test('the everything server runs without network or container: an npx:// stdio package', () => {
  const found = index.findServer('everything');
  assert.equal(found.is_remote, false);
  if (found.is_remote) return;
  assert.equal(found.server.image, 'npx://@modelcontextprotocol/server-everything');
  assert.equal(found.server.transport, 'stdio');
  assert.deepEqual(found.server.permissions?.network?.outbound?.allow_host, []);
  assert.ok(found.server.tools.includes('echo'));
});

test('remote entries carry URL and transport; OAuth remotes say so', () => {
  const notion = index.findServer('notion');
  assert.equal(notion.is_remote, true);
  if (!notion.is_remote) return;
  assert.equal(notion.remote_server.url, 'https://mcp.notion.com/mcp');
  assert.equal(notion.remote_server.transport, 'streamable-http');
  for (const r of Object.values(native.remote_servers)) {
    assert.match(r.url, /^https:\/\//);
    assert.ok(r.transport === 'sse' || r.transport === 'streamable-http');
  }
});
