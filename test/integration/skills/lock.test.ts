/**
 * Project lock-file sync and upgrade (ToolHive's; POST /skills/sync and
 * /skills/upgrade) against a real `git daemon`: the lock pins a branch source to a commit;
 * sync restores drifted and missing installs at that commit, reports what the lock does not
 * manage, and prunes on request; upgrade follows the branch to a new commit.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { testApp } from '../../helpers/api.js';
import { runCli } from '../../helpers/cli.js';
import { hasCommand, requireService } from '../../helpers/services.js';
import { initGitRepo, startGitDaemon, tempDir, writeSkill } from './fixtures.js';

const home = tempDir({ after: () => undefined } as never, 'skep-skills-home-');
process.env['HOME'] = home;
// The registry and the daemon are on loopback, which skills reach only when the user lists the
// host (`src/shared/net`); the daemon speaks the git protocol.
process.env['SKEP_SKILLS_PRIVATE_HOSTS'] = '127.0.0.1';
process.env['SKEP_GIT_SCHEME'] = 'git';

type Lock = { version: number; skills: Array<Record<string, unknown>> };

test(
  'lock file: sync restores drift and a fresh clone at the pinned commit; upgrade follows the branch',
  { timeout: 180_000 },
  async (t) => {
    if (!requireService(t, 'git', hasCommand('git'), 'apt-get install git')) return;
    const server = await startGitDaemon(t);
    writeSkill(join(server.repo, 'skills'), 'lock-skill', { version: '1.0.0', files: { 'ref.md': 'v1\n' } });
    writeSkill(join(server.repo, 'skills'), 'pinned-skill', {
      version: '1.0.0',
      files: { 'ref.md': 'p1\n' },
    });
    const first = server.commit('v1');
    const project = realpathSync(tempDir(t, 'skep-project-'));
    initGitRepo(project);
    const source = `git://${server.host}/owner/repo@main#skills/lock-skill`;
    const installed = join(project, '.claude', 'skills', 'lock-skill');
    const lockFile = join(project, 'skep.lock.yaml');
    const readLockFile = () => parseYaml(readFileSync(lockFile, 'utf8')) as Lock;
    const entry = (name: string) => readLockFile().skills.find((e) => e['name'] === name);

    const { app, home: skepHome } = await testApp(t);
    const post = (url: string, payload: Record<string, unknown>) =>
      app.inject({ method: 'POST', url: `/api/v1beta/skills${url}`, payload });
    const sync = async (extra: Record<string, unknown> = {}) => {
      const res = await post('/sync', { project_root: project, clients: ['claude-code'], ...extra });
      assert.equal(res.statusCode, 200, res.body);
      return res.json<Record<string, unknown>>();
    };
    const base = { scope: 'project', project_root: project, clients: ['claude-code'], allow_unsigned: true };
    assert.equal((await post('', { ...base, name: source })).statusCode, 201);
    const pinnedSource = `git://${server.host}/owner/repo@${first}#skills/pinned-skill`;
    assert.equal((await post('', { ...base, name: pinnedSource })).statusCode, 201);
    assert.equal(entry('lock-skill')?.['digest'], first);
    assert.equal(entry('lock-skill')?.['source'], source);

    assert.deepEqual((await sync())['already_current'], ['lock-skill', 'pinned-skill']);

    // Someone edits an installed file: check reports the drift and changes nothing; sync repairs.
    writeFileSync(join(installed, 'ref.md'), 'edited\n');
    const checked = await sync({ check: true });
    assert.deepEqual(checked['drifted'], ['lock-skill']);
    assert.deepEqual(checked['installed'], []);
    assert.equal(readFileSync(join(installed, 'ref.md'), 'utf8'), 'edited\n');
    const repaired = await sync();
    assert.deepEqual(repaired['drifted'], ['lock-skill']);
    assert.deepEqual(repaired['installed'], ['lock-skill']);
    assert.equal(readFileSync(join(installed, 'ref.md'), 'utf8'), 'v1\n');

    // The branch moves on. A fresh clone on another machine (another Skep home, no install
    // records, no skill folders) still gets the locked commit, not the branch head.
    writeSkill(join(server.repo, 'skills'), 'lock-skill', { version: '2.0.0', files: { 'ref.md': 'v2\n' } });
    const second = server.commit('v2');
    rmSync(join(project, '.claude'), { recursive: true, force: true });
    const other = await testApp(t);
    const fresh = await other.app.inject({
      method: 'POST',
      url: '/api/v1beta/skills/sync',
      payload: { project_root: project, clients: ['claude-code'] },
    });
    assert.equal(fresh.statusCode, 200, fresh.body);
    assert.deepEqual(fresh.json().missing, ['lock-skill', 'pinned-skill']);
    assert.deepEqual(fresh.json().installed, ['lock-skill', 'pinned-skill']);
    assert.deepEqual(fresh.json().failed, []);
    assert.equal(readFileSync(join(installed, 'ref.md'), 'utf8'), 'v1\n', 'the pinned commit, not main');
    assert.equal(entry('lock-skill')?.['source'], source, 'sync never rewrites source');

    // Upgrade: preview and fail_on_changes only look; then the new commit is installed and pinned.
    const upgrade = (extra: Record<string, unknown> = {}) =>
      post('/upgrade', { project_root: project, clients: ['claude-code'], ...extra });
    const preview = await upgrade({ preview: true });
    assert.equal(preview.statusCode, 200, preview.body);
    assert.deepEqual(preview.json().outcomes, [
      { name: 'lock-skill', status: 'upgraded', old_digest: first, new_digest: second },
      { name: 'pinned-skill', status: 'not-upgradable', old_digest: first, new_digest: first },
    ]);
    assert.equal(readFileSync(join(installed, 'ref.md'), 'utf8'), 'v1\n');
    const strict = await upgrade({ fail_on_changes: true });
    assert.equal(strict.statusCode, 409);
    assert.match(strict.json().message, /lock-skill.*would upgrade/);
    const unknownName = await upgrade({ names: ['nope'] });
    assert.equal(unknownName.statusCode, 404);
    assert.match(unknownName.json().message, /not in the lock file: nope/);
    const done = await upgrade({ names: ['lock-skill'] });
    assert.equal(done.statusCode, 200, done.body);
    assert.deepEqual(done.json().outcomes, [
      { name: 'lock-skill', status: 'upgraded', old_digest: first, new_digest: second },
    ]);
    assert.equal(readFileSync(join(installed, 'ref.md'), 'utf8'), 'v2\n');
    assert.equal(entry('lock-skill')?.['digest'], second);
    assert.equal(entry('lock-skill')?.['source'], source);
    assert.equal((await upgrade({ names: ['lock-skill'] })).json().outcomes[0].status, 'up-to-date');
    assert.deepEqual((await sync())['already_current'], ['lock-skill', 'pinned-skill']);

    // What the lock does not manage: a hand-made folder, and an entry someone deleted.
    const handMade = join(project, '.claude', 'skills', 'hand-made');
    mkdirSync(handMade, { recursive: true });
    writeFileSync(join(handMade, 'SKILL.md'), '---\nname: hand-made\ndescription: mine\n---\n');
    const lock = readLockFile();
    lock.skills = lock.skills.filter((e) => e['name'] !== 'pinned-skill');
    writeFileSync(lockFile, stringifyYaml(lock));
    const unmanaged = await sync();
    assert.deepEqual(unmanaged['never_managed'], ['hand-made']);
    assert.deepEqual(unmanaged['removed_from_lock'], ['pinned-skill']);
    assert.deepEqual(unmanaged['pruned'], []);
    const pruned = await sync({ prune: true });
    assert.deepEqual(pruned['pruned'], ['pinned-skill']);
    assert.throws(() => readFileSync(join(project, '.claude', 'skills', 'pinned-skill', 'SKILL.md')));
    assert.equal(
      readFileSync(join(handMade, 'SKILL.md'), 'utf8').includes('hand-made'),
      true,
      'never touched',
    );

    // The CLI (its own process, same home) with the reference's exit codes.
    const env = {
      ...skepHome.env,
      HOME: home,
      SKEP_SKILLS_PRIVATE_HOSTS: '127.0.0.1',
      SKEP_GIT_SCHEME: 'git',
    };
    const cli = (...args: string[]) =>
      runCli(['skill', ...args, '--project-root', project, '--clients', 'claude-code'], env);
    const clean = cli('sync', '--check', '--json');
    assert.equal(clean.status, 0, clean.stderr);
    assert.deepEqual(JSON.parse(clean.stdout).never_managed, ['hand-made']);
    writeFileSync(join(installed, 'ref.md'), 'edited again\n');
    const dirty = cli('sync', '--check');
    assert.equal(dirty.status, 2, 'check found a difference');
    assert.match(dirty.stdout, /lock-skill\s+drifted/);
    assert.equal(cli('sync').status, 0);
    assert.equal(readFileSync(join(installed, 'ref.md'), 'utf8'), 'v2\n');
    writeSkill(join(server.repo, 'skills'), 'lock-skill', { version: '3.0.0', files: { 'ref.md': 'v3\n' } });
    server.commit('v3');
    const stale = cli('upgrade', '--fail-on-changes');
    assert.equal(stale.status, 2);
    assert.match(stale.stderr, /would upgrade/);
    const previewed = cli('upgrade', '--preview');
    assert.equal(previewed.status, 0, previewed.stderr);
    assert.match(previewed.stdout, /lock-skill\s+upgraded/);
    assert.equal(readFileSync(join(installed, 'ref.md'), 'utf8'), 'v2\n');

    const adopt = await post('/sync', { project_root: project, adopt: true });
    assert.equal(adopt.statusCode, 501);
    assert.match(adopt.json().message, /adopt is not supported yet/);
    const badRoot = await post('/sync', { project_root: 'relative/path' });
    assert.equal(badRoot.statusCode, 400);
  },
);
