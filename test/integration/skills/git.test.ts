/**
 * Skills from a real git repository served by `git daemon` on loopback: content preview and
 * install at a tag and at a commit; the digest is the commit hash.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { testApp } from '../../helpers/api.js';
import { hasCommand, requireService } from '../../helpers/services.js';
import { startGitDaemon, tempDir, writeSkill } from './fixtures.js';

const home = tempDir({ after: () => undefined } as never, 'skep-skills-home-');
process.env['HOME'] = home;
// The daemon is on loopback, which skills reach only when the user lists the host (`src/shared/net`
// item 7); it speaks the git protocol.
process.env['SKEP_SKILLS_PRIVATE_HOSTS'] = '127.0.0.1';
process.env['SKEP_GIT_SCHEME'] = 'git';

test('git skill at a tag and at a commit (git daemon)', { timeout: 120_000 }, async (t) => {
  if (!requireService(t, 'git', hasCommand('git'), 'apt-get install git')) return;
  const server = await startGitDaemon(t);
  writeSkill(join(server.repo, 'skills'), 'git-skill', { version: '1.0.0', files: { 'ref.md': 'v1\n' } });
  const first = server.commit('v1');
  server.tag('v1.0.0');
  writeSkill(join(server.repo, 'skills'), 'git-skill', { version: '2.0.0', files: { 'ref.md': 'v2\n' } });
  const second = server.commit('v2');
  const { app } = await testApp(t);
  const base = `git://${server.host}/owner/repo`;

  const atTag = await app.inject({
    method: 'GET',
    url: `/api/v1beta/skills/content?ref=${encodeURIComponent(`${base}@v1.0.0#skills/git-skill`)}`,
  });
  assert.equal(atTag.statusCode, 200, atTag.body);
  assert.equal(atTag.json().version, '1.0.0');
  assert.deepEqual(atTag.json().files, [
    { path: 'SKILL.md', size: readFileSync(join(server.repo, 'skills', 'git-skill', 'SKILL.md')).length },
    { path: 'ref.md', size: 3 },
  ]);

  const atHead = await app.inject({
    method: 'GET',
    url: `/api/v1beta/skills/content?ref=${encodeURIComponent(`${base}#skills/git-skill`)}`,
  });
  assert.equal(atHead.json().version, '2.0.0');

  const installTag = await app.inject({
    method: 'POST',
    url: '/api/v1beta/skills',
    payload: { name: `${base}@v1.0.0#skills/git-skill`, clients: ['claude-code'] },
  });
  assert.equal(installTag.statusCode, 201, installTag.body);
  assert.equal(installTag.json().skill.digest, first, 'the digest is the tagged commit');
  assert.equal(readFileSync(join(home, '.claude', 'skills', 'git-skill', 'ref.md'), 'utf8'), 'v1\n');
  assert.ok(!existsSync(join(home, '.claude', 'skills', 'git-skill', '.git')));

  // A different commit is a new digest: the managed folder is replaced without `force`.
  const installCommit = await app.inject({
    method: 'POST',
    url: '/api/v1beta/skills',
    payload: { name: `${base}@${second}#skills/git-skill`, clients: ['claude-code'] },
  });
  assert.equal(installCommit.statusCode, 201, installCommit.body);
  assert.equal(installCommit.json().skill.digest, second);
  assert.equal(installCommit.json().skill.metadata.version, '2.0.0');
  assert.equal(readFileSync(join(home, '.claude', 'skills', 'git-skill', 'ref.md'), 'utf8'), 'v2\n');

  const missingPath = await app.inject({
    method: 'GET',
    url: `/api/v1beta/skills/content?ref=${encodeURIComponent(`${base}#nope`)}`,
  });
  assert.equal(missingPath.statusCode, 404);
  const missingRepo = await app.inject({
    method: 'GET',
    url: `/api/v1beta/skills/content?ref=${encodeURIComponent(`git://${server.host}/owner/absent@v1.0.0`)}`,
  });
  assert.equal(missingRepo.statusCode, 502);
  assert.match(missingRepo.json().message, /^resolving git skill/);
  const traversal = await app.inject({
    method: 'GET',
    url: `/api/v1beta/skills/content?ref=${encodeURIComponent(`${base}#../etc`)}`,
  });
  assert.equal(traversal.statusCode, 400);

  assert.equal((await app.inject({ method: 'DELETE', url: '/api/v1beta/skills/git-skill' })).statusCode, 204);
  assert.ok(!existsSync(join(home, '.claude', 'skills', 'git-skill')));
});
