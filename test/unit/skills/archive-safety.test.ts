/**
 * Hostile skill archives: path traversal, absolute paths, symlinks and hard links out of the
 * target, oversized files and too many files are refused with a 400 (skill_invalid), and
 * nothing is written outside the target, both at the extractor and through the API.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { SkepError } from '../../../src/shared/index.js';
import { readSkillArchive, writeTree } from '../../../src/skills/archive.js';
import { ARTIFACT_TYPE, type Blob } from '../../../src/skills/artifact.js';
import { LocalStore } from '../../../src/skills/local-store.js';
import {
  MEDIA_CONFIG,
  MEDIA_INDEX,
  MEDIA_LAYER,
  MEDIA_MANIFEST,
  sha256Digest,
} from '../../../src/skills/oci-client.js';
import { testApp } from '../../helpers/api.js';

const SKILL_MD = '---\nname: evil-skill\ndescription: looks harmless\n---\nbody\n';

type Entry = {
  name: string;
  type?: 'file' | 'symlink' | 'link' | 'directory';
  linkname?: string;
  data?: Buffer | string;
  size?: number;
};

async function tarGz(entries: Entry[]): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (c: unknown) => {
    chunks.push(c as Buffer);
  });
  const done = new Promise<void>((r) => pack.on('end', () => r()));
  for (const e of entries) {
    const data = e.data === undefined ? undefined : Buffer.from(e.data);
    await new Promise<void>((res, rej) =>
      pack.entry(
        {
          name: e.name,
          type: e.type ?? 'file',
          ...(e.linkname === undefined ? {} : { linkname: e.linkname }),
          ...(data === undefined ? {} : { size: data.length }),
          mode: 0o644,
        },
        data ?? Buffer.alloc(0),
        (err) => (err ? rej(err) : res()),
      ),
    );
  }
  pack.finalize();
  await done;
  return gzipSync(Buffer.concat(chunks));
}

const CASES: [string, Entry[], RegExp][] = [
  [
    'path traversal (..)',
    [
      { name: 'SKILL.md', data: SKILL_MD },
      { name: '../../escaped.txt', data: 'x' },
    ],
    /'\.\.' component/,
  ],
  [
    'nested traversal',
    [
      { name: 'SKILL.md', data: SKILL_MD },
      { name: 'docs/../../escaped.txt', data: 'x' },
    ],
    /'\.\.' component/,
  ],
  [
    'absolute path',
    [
      { name: 'SKILL.md', data: SKILL_MD },
      { name: '/tmp/escaped.txt', data: 'x' },
    ],
    /absolute path/,
  ],
  [
    'symlink escape',
    [
      { name: 'SKILL.md', data: SKILL_MD },
      { name: 'link', type: 'symlink', linkname: '/etc/passwd' },
    ],
    /symlink/,
  ],
  [
    'hard link out',
    [
      { name: 'SKILL.md', data: SKILL_MD },
      { name: 'hard', type: 'link', linkname: '../../etc/passwd' },
    ],
    /hard link/,
  ],
];

for (const [what, entries, message] of CASES) {
  test(`extraction: ${what} is refused with skill_invalid`, async () => {
    const layer = await tarGz(entries);
    await assert.rejects(readSkillArchive(layer), (err: unknown) => {
      assert.ok(err instanceof SkepError);
      assert.equal(err.code, 'skill_invalid');
      assert.equal(err.status, 400);
      assert.match(err.message, message);
      return true;
    });
  });
}

test('limits: per-file size, total size and file count', async () => {
  const big = await tarGz([
    { name: 'SKILL.md', data: SKILL_MD },
    { name: 'big.bin', data: Buffer.alloc(4096) },
  ]);
  await assert.rejects(
    readSkillArchive(big, { maxFileBytes: 1024, maxTotalBytes: 1 << 20, maxFiles: 10 }),
    /per-file limit/,
  );
  await assert.rejects(
    readSkillArchive(big, { maxFileBytes: 1 << 20, maxTotalBytes: 2048, maxFiles: 10 }),
    /uncompressed/,
  );
  const many = await tarGz(Array.from({ length: 5 }, (_, i) => ({ name: `f${i}.txt`, data: 'x' })));
  await assert.rejects(
    readSkillArchive(many, { maxFileBytes: 1 << 20, maxTotalBytes: 1 << 20, maxFiles: 4 }),
    /more than 4 files/,
  );
  await assert.rejects(
    readSkillArchive(Buffer.from('not gzip at all')),
    (err: unknown) => err instanceof SkepError && err.status === 400,
  );
});

test(
  'limits: a 101 MiB file (gzip bomb style) is refused at the default limit',
  {
    timeout: 60_000,
  },
  async () => {
    const layer = await tarGz([
      { name: 'SKILL.md', data: SKILL_MD },
      { name: 'huge.bin', data: Buffer.alloc(101 * 1024 * 1024) },
    ]);
    assert.ok(layer.length < 1024 * 1024, 'the compressed layer is small');
    await assert.rejects(readSkillArchive(layer), /per-file limit/);
  },
);

test('writeTree swaps a complete tree into place and rolls back to the previous one', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'skep-tree-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const target = join(root, 'skills', 'a-skill');
  const first = await writeTree(target, [{ path: 'SKILL.md', mode: 0o755, data: Buffer.from('one') }]);
  await first.commit();
  const second = await writeTree(target, [{ path: 'docs/x.md', mode: 0o644, data: Buffer.from('two') }]);
  assert.ok(existsSync(join(target, 'docs', 'x.md')));
  await second.rollback();
  assert.deepEqual(readdirSync(target), ['SKILL.md']);
  assert.deepEqual(readdirSync(join(root, 'skills')), ['a-skill'], 'no temp or backup folder is left behind');
});

/** Saves a hand-made artifact with `layer` into the local store under `tag`. */
async function saveArtifact(storeDir: string, tag: string, layer: Buffer): Promise<void> {
  const blob = (mediaType: string, data: Buffer): Blob => ({ mediaType, data, digest: sha256Digest(data) });
  const layerBlob = blob(MEDIA_LAYER, layer);
  const config = blob(
    MEDIA_CONFIG,
    Buffer.from(JSON.stringify({ config: { Labels: { 'dev.toolhive.skills.name': 'evil-skill' } } })),
  );
  const manifest = blob(
    MEDIA_MANIFEST,
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: MEDIA_MANIFEST,
        artifactType: ARTIFACT_TYPE,
        config: { mediaType: MEDIA_CONFIG, digest: config.digest, size: config.data.length },
        layers: [{ mediaType: MEDIA_LAYER, digest: layerBlob.digest, size: layer.length }],
      }),
    ),
  );
  const index = blob(
    MEDIA_INDEX,
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: MEDIA_INDEX,
        manifests: [{ mediaType: MEDIA_MANIFEST, digest: manifest.digest, size: manifest.data.length }],
      }),
    ),
  );
  await new LocalStore(storeDir).save(tag, { root: index, blobs: [layerBlob, config, manifest, index] });
}

test('API: malicious local artifacts → 400 skill_invalid, nothing written outside (or inside) the target', async (t) => {
  const { app, home } = await testApp(t);
  const fakeHome = join(home.dir, 'home');
  const previousHome = process.env['HOME'];
  process.env['HOME'] = fakeHome;
  t.after(() => {
    process.env['HOME'] = previousHome;
  });
  const storeDir = join(home.config.paths.dataDir, 'skills', 'oci');
  for (const [what, entries] of CASES) {
    await saveArtifact(storeDir, 'evil-skill', await tarGz(entries));
    const content = await app.inject({ method: 'GET', url: '/api/v1beta/skills/content?ref=evil-skill' });
    assert.equal(content.statusCode, 400, `${what}: ${content.body}`);
    assert.equal(content.json().code, 'skill_invalid');
    const install = await app.inject({
      method: 'POST',
      url: '/api/v1beta/skills',
      payload: { name: 'evil-skill', clients: ['claude-code'] },
    });
    assert.equal(install.statusCode, 400, `${what}: ${install.body}`);
    assert.match(install.json().message, /unsafe skill archive/);
  }
  // Nothing at all was created in the home: no skill dir, no escaped file anywhere near it.
  assert.ok(!existsSync(join(fakeHome, '.claude')));
  assert.ok(!existsSync(join(home.dir, 'escaped.txt')));
  assert.ok(!existsSync(join(fakeHome, 'escaped.txt')));
  assert.equal((await app.inject({ method: 'GET', url: '/api/v1beta/skills' })).json().skills.length, 0);
});
