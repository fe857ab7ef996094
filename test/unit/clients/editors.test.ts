/** Edge cases of the config editors and of what the sync writes. */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { parse as parseToml } from 'smol-toml';
import { clientDefinition, desiredEntries, editConfigText } from '../../../src/clients/index.js';
import { harness, running } from './harness.js';

const one = (name: string, entry: Record<string, string>) => ({
  upsert: new Map([[name, entry]]),
  remove: new Set<string>(),
});
const drop = (name: string) => ({ upsert: new Map(), remove: new Set([name]) });

test('JSON: CRLF line endings, tabs and an empty servers object are kept; insert then remove is the identity', () => {
  const cursor = clientDefinition('cursor');
  const original = '{\r\n\t"mcpServers": {},\r\n\t"x": [1, 2]\r\n}\r\n';
  const added = editConfigText(cursor, original, one('w1', { url: 'u', type: 'http' }), 'f');
  assert.deepEqual(JSON.parse(added), { mcpServers: { w1: { url: 'u', type: 'http' } }, x: [1, 2] });
  assert.ok(!added.replace(/\r\n/g, '').includes('\n'), 'no bare LF introduced');
  assert.ok(added.includes('\t\t"w1": {'), 'tab indentation followed');
  assert.equal(editConfigText(cursor, added, drop('w1'), 'f'), original);
});

test('JSON: an update replaces only the value of our entry', () => {
  const cursor = clientDefinition('cursor');
  const original = '{"a": 1, "mcpServers": {"w1": {"url": "old"}, "mine": {"command": "x"}}}';
  const out = editConfigText(cursor, original, one('w1', { url: 'new', type: 'http' }), 'f');
  assert.equal(
    out.replace(/\{\n\s*"url": "new",\n\s*"type": "http"\n\s*\}/, 'V'),
    '{"a": 1, "mcpServers": {"w1": V, "mine": {"command": "x"}}}',
  );
});

test('amp-cli: the servers key is one literal key containing a dot', () => {
  const amp = clientDefinition('amp-cli');
  const out = editConfigText(amp, '{"amp.other": true}', one('w1', { url: 'u', type: 'http' }), 'f');
  assert.deepEqual(JSON.parse(out), {
    'amp.other': true,
    'amp.mcpServers': { w1: { url: 'u', type: 'http' } },
  });
});

test('TOML: brackets inside multi-line strings and arrays are not taken for table headers', () => {
  const codex = clientDefinition('codex');
  const original =
    'notes = """\n[mcp_servers.w1]\nnot a table\n"""\nlist = [\n  [1, 2],\n]\n\n[mcp_servers.w1]\nurl = "old"\nkeep = "me"\n\n[other]\nx = 1\n';
  const out = editConfigText(codex, original, one('w1', { url: 'new' }), 'f');
  const data = parseToml(out) as Record<string, Record<string, unknown>>;
  assert.equal((data['mcp_servers']!['w1'] as Record<string, unknown>)['url'], 'new');
  assert.ok(out.startsWith('notes = """\n[mcp_servers.w1]\nnot a table\n"""\nlist = [\n  [1, 2],\n]\n'));
  assert.ok(out.endsWith('[other]\nx = 1\n'));
});

test('TOML: an inline-table layout defeats the textual edit, and the whole document is printed correctly instead', () => {
  const codex = clientDefinition('codex');
  const original = 'mcp_servers = { mine = { command = "x" } }\n';
  const out = editConfigText(codex, original, one('w1', { url: 'u' }), 'f');
  assert.deepEqual(JSON.parse(JSON.stringify(parseToml(out))), {
    mcp_servers: { mine: { command: 'x' }, w1: { url: 'u' } },
  });
});

test('sync: a client in two groups gets both groups’ workloads; leaving one group removes only its workloads', async (t) => {
  const h = harness(t);
  h.groups.create('team');
  h.workloads.push(running('a', 5001), running('b', 5002, { group: 'team' }));
  await h.service.register('kiro', ['default', 'team']);
  const file = h.service.configPath('kiro');
  const read = () => JSON.parse(readFileSync(file, 'utf8')).mcpServers as Record<string, unknown>;
  assert.deepEqual(Object.keys(read()).sort(), ['a', 'b']);
  await h.service.unregisterFromGroup('kiro', 'team');
  assert.deepEqual(Object.keys(read()), ['a']);
});

test('sync: a user entry is never removed, even when the user added it after Skep wrote its own', async (t) => {
  const h = harness(t);
  h.workloads.push(running('a', 5001));
  await h.service.register('cursor');
  const file = h.service.configPath('cursor');
  const data = JSON.parse(readFileSync(file, 'utf8'));
  data.mcpServers.mine = { command: 'x' };
  writeFileSync(file, JSON.stringify(data, null, 2));
  await h.service.unregister('cursor');
  assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), { mcpServers: { mine: { command: 'x' } } });
});

test('sync: a deleted group drops the registration (FK cascade) and its entries on the next sync', async (t) => {
  const h = harness(t);
  h.groups.create('team');
  h.workloads.push(running('b', 5002, { group: 'team' }));
  await h.service.register('lm-studio', ['team']);
  const file = h.service.configPath('lm-studio');
  assert.ok('b' in JSON.parse(readFileSync(file, 'utf8')).mcpServers);
  await h.groups.delete('team');
  await h.service.syncClientConfigs();
  // Skep created the file and it is registered nowhere now: nothing of it is left.
  assert.equal(existsSync(file), false);
  assert.deepEqual(h.service.list(), []);
});

test('entries: remote workloads keep the URL the engine reports; stdio follows the proxy mode; SSE names are escaped', () => {
  const cursor = clientDefinition('cursor');
  const entries = desiredEntries(
    cursor,
    [
      running('remote', 6001, { remote: true, url: 'http://127.0.0.1:6001/v1/mcp' }),
      running('remote-sse', 6002, {
        remote: true,
        transport_type: 'sse',
        url: 'http://127.0.0.1:6002/api/sse',
      }),
      running('stdio-sse', 6003, { transport_type: 'stdio', proxy_mode: 'sse' }),
      running('stdio', 6004, { transport_type: 'stdio' }),
      running('odd name', 6005, { transport_type: 'sse' }),
    ],
    new Set(['default']),
  );
  assert.deepEqual(Object.fromEntries(entries), {
    'odd name': { url: 'http://localhost:6005/sse#odd%20name', type: 'sse' },
    remote: { url: 'http://127.0.0.1:6001/v1/mcp', type: 'http' },
    'remote-sse': { url: 'http://127.0.0.1:6002/api/sse', type: 'sse' },
    stdio: { url: 'http://localhost:6004/mcp', type: 'http' },
    'stdio-sse': { url: 'http://localhost:6003/sse#stdio-sse', type: 'sse' },
  });
});

test('catalog: paths follow HOME, XDG_CONFIG_HOME and APPDATA per platform', () => {
  const vscode = clientDefinition('vscode');
  assert.equal(vscode.configPath({ HOME: '/h' }, 'linux'), join('/h', '.config', 'Code', 'User', 'mcp.json'));
  assert.equal(
    vscode.configPath({ HOME: '/h', XDG_CONFIG_HOME: '/x' }, 'linux'),
    join('/x', 'Code', 'User', 'mcp.json'),
  );
  assert.equal(
    vscode.configPath({ HOME: '/h' }, 'darwin'),
    join('/h', 'Library', 'Application Support', 'Code', 'User', 'mcp.json'),
  );
  assert.equal(
    vscode.configPath({ HOME: '/h', APPDATA: '/a' }, 'win32'),
    join('/a', 'Code', 'User', 'mcp.json'),
  );
  assert.equal(
    clientDefinition('claude-code').detectPath({ HOME: '/h' }, 'linux'),
    join('/h', '.claude.json'),
  );
  assert.equal(clientDefinition('cursor').detectPath({ HOME: '/h' }, 'linux'), join('/h', '.cursor'));
  assert.equal(
    clientDefinition('codex').configPath({ HOME: '/h' }, 'linux'),
    join('/h', '.codex', 'config.toml'),
  );
  assert.equal(
    clientDefinition('vscode').skillsDir({ HOME: '/h' }, 'linux'),
    join('/h', '.copilot', 'skills'),
  );
  assert.equal(clientDefinition('zed').skillsDir({ HOME: '/h' }, 'linux'), undefined);
  // The VS Code extensions keep their settings in the editor's global storage.
  assert.equal(
    clientDefinition('cline').configPath({ HOME: '/h' }, 'linux'),
    join(
      '/h',
      '.config',
      'Code',
      'User',
      'globalStorage',
      'saoudrizwan.claude-dev',
      'settings',
      'cline_mcp_settings.json',
    ),
  );
  assert.equal(
    clientDefinition('roo-code').configPath({ HOME: '/h', APPDATA: '/a' }, 'win32'),
    join(
      '/a',
      'Code',
      'User',
      'globalStorage',
      'rooveterinaryinc.roo-cline',
      'settings',
      'mcp_settings.json',
    ),
  );
});

test('a config file behind a symlink is edited in place; the link stays a link', async (t) => {
  const h = harness(t);
  const real = join(h.home, 'dotfiles', 'mcp.json');
  mkdirSync(dirname(real), { recursive: true });
  writeFileSync(real, '{"mcpServers": {}}');
  const file = h.service.configPath('cursor');
  mkdirSync(dirname(file), { recursive: true });
  const { symlinkSync, lstatSync } = await import('node:fs');
  symlinkSync(real, file);
  h.workloads.push(running('a', 5001));
  await h.service.register('cursor');
  assert.ok(lstatSync(file).isSymbolicLink());
  assert.ok('a' in JSON.parse(readFileSync(real, 'utf8')).mcpServers);
});

test('unregister: a config file Skep created goes with its backup and the folders Skep made; a file with the user’s entries stays', async (t) => {
  const h = harness(t);
  h.workloads.push(running('a', 5001));
  await h.service.register('cursor');
  const file = h.service.configPath('cursor');
  const dir = dirname(file);
  assert.ok(existsSync(file));
  h.workloads.push(running('b', 5002));
  await h.service.syncClientConfigs(); // a second write: the backup exists now
  assert.ok(existsSync(`${file}.skep.bak`));
  await h.service.unregister('cursor');
  assert.equal(existsSync(file), false, 'no empty mcp.json');
  assert.equal(existsSync(`${file}.skep.bak`), false, 'no stray backup');
  assert.equal(existsSync(dir), false, 'the folder Skep created is gone');
  assert.ok(existsSync(h.home), 'never above HOME');

  // Registered again later, the client's folder counts as Skep's again (it made it again).
  await h.service.register('cursor');
  assert.ok(existsSync(file));
  // A folder holding something of the user's stays, and so does a file with the user's entry.
  writeFileSync(join(dir, 'settings.json'), '{}');
  const data = JSON.parse(readFileSync(file, 'utf8'));
  data.mcpServers.mine = { command: 'x' };
  writeFileSync(file, JSON.stringify(data, null, 2));
  await h.service.unregister('cursor');
  assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), { mcpServers: { mine: { command: 'x' } } });
  assert.ok(existsSync(join(dir, 'settings.json')));
});
