/**
 * Skills against a real OCI registry (Debian docker-registry, distribution 2.8, on loopback):
 * build → push → content → install → list → uninstall through the management API, plus the
 * registry error statuses and project-scope installs with dependencies and the lock file.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { testApp } from '../../helpers/api.js';
import { requireService } from '../../helpers/services.js';
import { hasRegistry, initGitRepo, startRegistry, tempDir, writeSkill } from './fixtures.js';

// Client skill dirs resolve from HOME at call time: point it at a temp dir for this file.
const home = tempDir({ after: () => undefined } as never, 'skep-skills-home-');
process.env['HOME'] = home;
// The registry runs on loopback: listed as the user's own, as a user would (`src/shared/net`).
process.env['SKEP_SKILLS_PRIVATE_HOSTS'] = '127.0.0.1';

test(
  'build → push → content → install → list → uninstall against a real registry',
  {
    timeout: 120_000,
  },
  async (t) => {
    if (!requireService(t, 'docker-registry', hasRegistry(), 'apt-get install docker-registry')) return;
    const registry = await startRegistry(t);
    const { app } = await testApp(t);
    const work = tempDir(t, 'skep-skill-src-');
    const dir = writeSkill(work, 'my-skill', {
      files: { 'scripts/run.sh': 'echo hi\n', 'docs/guide.md': '# Guide\n' },
    });

    const validate = await app.inject({
      method: 'POST',
      url: '/api/v1beta/skills/validate',
      payload: { path: dir },
    });
    assert.equal(validate.statusCode, 200);
    assert.deepEqual(validate.json(), { valid: true });

    const ref = `${registry}/skills/my-skill:1.0.0`;
    const build = await app.inject({
      method: 'POST',
      url: '/api/v1beta/skills/build',
      payload: { path: dir, tag: ref },
    });
    assert.equal(build.statusCode, 200, build.body);
    assert.deepEqual(build.json(), { reference: ref });

    const builds = await app.inject({ method: 'GET', url: '/api/v1beta/skills/builds' });
    const listed = builds.json().builds as { tag: string; name: string; version: string; digest: string }[];
    assert.equal(listed.length, 1);
    assert.equal(listed[0]?.tag, ref);
    assert.equal(listed[0]?.name, 'my-skill');
    assert.match(listed[0]?.digest ?? '', /^sha256:[a-f0-9]{64}$/);

    const push = await app.inject({
      method: 'POST',
      url: '/api/v1beta/skills/push',
      payload: { reference: ref },
    });
    assert.equal(push.statusCode, 204, push.body);

    // The registry now serves the index by tag, with the OCI index media type.
    const manifest = await fetch(`http://${registry}/v2/skills/my-skill/manifests/1.0.0`, {
      headers: { accept: 'application/vnd.oci.image.index.v1+json' },
    });
    assert.equal(manifest.status, 200);
    assert.equal(manifest.headers.get('docker-content-digest'), listed[0]?.digest);
    const index = (await manifest.json()) as {
      artifactType: string;
      manifests: { platform: { architecture: string } }[];
    };
    assert.equal(index.artifactType, 'dev.toolhive.skills.v1');
    assert.deepEqual(
      index.manifests.map((m) => m.platform.architecture),
      ['amd64', 'arm64'],
    );

    // Remove the local build so content and install must pull from the registry.
    const rmBuild = await app.inject({
      method: 'DELETE',
      url: `/api/v1beta/skills/builds/${encodeURIComponent(ref)}`,
    });
    assert.equal(rmBuild.statusCode, 204);
    assert.equal(
      (await app.inject({ method: 'DELETE', url: `/api/v1beta/skills/builds/${encodeURIComponent(ref)}` }))
        .statusCode,
      404,
    );

    const content = await app.inject({
      method: 'GET',
      url: `/api/v1beta/skills/content?ref=${encodeURIComponent(ref)}`,
    });
    assert.equal(content.statusCode, 200, content.body);
    const c = content.json();
    assert.equal(c.name, 'my-skill');
    assert.equal(c.version, '1.0.0');
    assert.equal(c.license, 'Apache-2.0');
    assert.match(c.body, /^# my-skill/);
    assert.deepEqual(
      c.files.map((f: { path: string }) => f.path),
      ['SKILL.md', 'docs/guide.md', 'scripts/run.sh'],
    );
    assert.equal(c.files.find((f: { path: string }) => f.path === 'scripts/run.sh').size, 8);

    const install = await app.inject({
      method: 'POST',
      url: '/api/v1beta/skills',
      payload: { name: ref, clients: ['claude-code', 'vscode', 'vscode-insider'] },
    });
    assert.equal(install.statusCode, 201, install.body);
    assert.equal(install.headers.location, '/api/v1beta/skills/my-skill');
    const skill = install.json().skill;
    assert.equal(skill.metadata.name, 'my-skill');
    assert.equal(skill.scope, 'user');
    assert.equal(skill.digest, listed[0]?.digest, 'the recorded digest is the pulled index digest');
    assert.deepEqual(skill.clients, ['claude-code', 'vscode', 'vscode-insider']);
    assert.equal(skill.status, 'installed');
    for (const base of [join(home, '.claude', 'skills'), join(home, '.copilot', 'skills')]) {
      assert.equal(readFileSync(join(base, 'my-skill', 'scripts', 'run.sh'), 'utf8'), 'echo hi\n');
      assert.ok(existsSync(join(base, 'my-skill', 'SKILL.md')));
    }

    // Same digest, same clients: a no-op that still answers 201.
    const again = await app.inject({
      method: 'POST',
      url: '/api/v1beta/skills',
      payload: { name: ref, clients: ['claude-code'] },
    });
    assert.equal(again.statusCode, 201);
    assert.equal(again.json().skill.installed_at, skill.installed_at);

    // A folder Skep did not install is not overwritten unless forced.
    mkdirSync(join(home, '.cursor', 'skills', 'my-skill'), { recursive: true });
    writeFileSync(join(home, '.cursor', 'skills', 'my-skill', 'mine.txt'), 'user data');
    const conflict = await app.inject({
      method: 'POST',
      url: '/api/v1beta/skills',
      payload: { name: ref, clients: ['cursor'] },
    });
    assert.equal(conflict.statusCode, 409);
    assert.equal(conflict.json().code, 'skill_exists');
    assert.ok(existsSync(join(home, '.cursor', 'skills', 'my-skill', 'mine.txt')), 'nothing was changed');
    const forced = await app.inject({
      method: 'POST',
      url: '/api/v1beta/skills',
      payload: { name: ref, clients: ['cursor'], force: true },
    });
    assert.equal(forced.statusCode, 201);
    assert.ok(!existsSync(join(home, '.cursor', 'skills', 'my-skill', 'mine.txt')));
    assert.deepEqual(forced.json().skill.clients, ['claude-code', 'cursor', 'vscode', 'vscode-insider']);

    const list = await app.inject({ method: 'GET', url: '/api/v1beta/skills' });
    assert.deepEqual(
      list.json().skills.map((s: { metadata: { name: string } }) => s.metadata.name),
      ['my-skill'],
    );
    assert.equal(
      (await app.inject({ method: 'GET', url: '/api/v1beta/skills?client=cursor' })).json().skills.length,
      1,
    );
    assert.equal(
      (await app.inject({ method: 'GET', url: '/api/v1beta/skills?client=cline' })).json().skills.length,
      0,
    );
    assert.equal(
      (await app.inject({ method: 'GET', url: '/api/v1beta/skills?group=default' })).json().skills.length,
      1,
    );
    assert.equal(
      (await app.inject({ method: 'GET', url: '/api/v1beta/skills?scope=project' })).statusCode,
      400,
    );
    assert.equal((await app.inject({ method: 'GET', url: '/api/v1beta/skills?group=nope' })).statusCode, 404);

    const info = await app.inject({ method: 'GET', url: '/api/v1beta/skills/my-skill' });
    assert.equal(info.statusCode, 200);
    assert.equal(info.json().installed_skill.reference, ref);
    assert.equal(info.json().metadata.description, 'The my-skill skill.');

    const del = await app.inject({ method: 'DELETE', url: '/api/v1beta/skills/my-skill' });
    assert.equal(del.statusCode, 204);
    assert.ok(!existsSync(join(home, '.claude', 'skills', 'my-skill')));
    assert.ok(!existsSync(join(home, '.copilot', 'skills', 'my-skill')));
    assert.ok(!existsSync(join(home, '.cursor', 'skills', 'my-skill')));
    assert.equal((await app.inject({ method: 'GET', url: '/api/v1beta/skills' })).json().skills.length, 0);
    assert.equal(
      (await app.inject({ method: 'DELETE', url: '/api/v1beta/skills/my-skill' })).statusCode,
      404,
    );
    assert.equal((await app.inject({ method: 'GET', url: '/api/v1beta/skills/my-skill' })).statusCode, 404);
  },
);

test(
  'registry errors map to statuses: missing artifact 404, unreachable registry 502, name mismatch 422',
  {
    timeout: 120_000,
  },
  async (t) => {
    if (!requireService(t, 'docker-registry', hasRegistry(), 'apt-get install docker-registry')) return;
    const registry = await startRegistry(t);
    const { app } = await testApp(t);
    const work = tempDir(t, 'skep-skill-src-');

    const missing = await app.inject({
      method: 'GET',
      url: `/api/v1beta/skills/content?ref=${registry}/skills/absent:1.0.0`,
    });
    assert.equal(missing.statusCode, 404, missing.body);
    assert.equal(missing.json().code, 'not_found');

    const down = await app.inject({
      method: 'POST',
      url: '/api/v1beta/skills',
      payload: { name: '127.0.0.1:1/skills/x-skill:1.0.0', clients: ['claude-code'] },
    });
    assert.equal(down.statusCode, 502, down.body);
    assert.equal(down.json().code, 'bad_gateway');

    // An artifact whose declared name is not the repository's last segment is refused (supply chain).
    const dir = writeSkill(work, 'honest-skill');
    const wrongRef = `${registry}/skills/other-name:1.0.0`;
    assert.equal(
      (
        await app.inject({
          method: 'POST',
          url: '/api/v1beta/skills/build',
          payload: { path: dir, tag: wrongRef },
        })
      ).statusCode,
      200,
    );
    assert.equal(
      (await app.inject({ method: 'POST', url: '/api/v1beta/skills/push', payload: { reference: wrongRef } }))
        .statusCode,
      204,
    );
    const mismatch = await app.inject({
      method: 'POST',
      url: '/api/v1beta/skills',
      payload: { name: wrongRef, clients: ['claude-code'] },
    });
    assert.equal(mismatch.statusCode, 422, mismatch.body);
    assert.match(mismatch.json().message, /does not match OCI reference repository/);

    const badRef = await app.inject({ method: 'GET', url: '/api/v1beta/skills/content?ref=Bad//Ref:' });
    assert.equal(badRef.statusCode, 400);
    assert.equal((await app.inject({ method: 'GET', url: '/api/v1beta/skills/content' })).statusCode, 400);
    const notBuilt = await app.inject({
      method: 'POST',
      url: '/api/v1beta/skills/push',
      payload: { reference: `${registry}/skills/nothing:1` },
    });
    assert.equal(notBuilt.statusCode, 404);
  },
);

test(
  'project scope: lock file, dependencies installed and cascade-removed, unsigned policy 403',
  {
    timeout: 120_000,
  },
  async (t) => {
    if (!requireService(t, 'docker-registry', hasRegistry(), 'apt-get install docker-registry')) return;
    const registry = await startRegistry(t);
    const { app } = await testApp(t);
    const work = tempDir(t, 'skep-skill-src-');
    const project = realpathSync(tempDir(t, 'skep-project-'));
    initGitRepo(project);

    const depRef = `${registry}/skills/helper-skill:1.0.0`;
    const parentRef = `${registry}/skills/main-skill:2.0.0`;
    const depDir = writeSkill(work, 'helper-skill');
    const parentDir = writeSkill(work, 'main-skill', { version: '2.0.0', requires: [depRef] });
    for (const [dir, ref] of [
      [depDir, depRef],
      [parentDir, parentRef],
    ] as const) {
      assert.equal(
        (
          await app.inject({
            method: 'POST',
            url: '/api/v1beta/skills/build',
            payload: { path: dir, tag: ref },
          })
        ).statusCode,
        200,
      );
      assert.equal(
        (await app.inject({ method: 'POST', url: '/api/v1beta/skills/push', payload: { reference: ref } }))
          .statusCode,
        204,
      );
    }

    const payload = { name: parentRef, scope: 'project', project_root: project, clients: ['claude-code'] };
    const refused = await app.inject({ method: 'POST', url: '/api/v1beta/skills', payload });
    assert.equal(refused.statusCode, 403);
    assert.ok(!existsSync(join(project, '.claude')), 'nothing written before the policy check');

    const notGit = await app.inject({
      method: 'POST',
      url: '/api/v1beta/skills',
      payload: { ...payload, project_root: work, allow_unsigned: true },
    });
    assert.equal(notGit.statusCode, 400);
    assert.match(notGit.json().message, /git repository/);
    const userWithRoot = await app.inject({
      method: 'POST',
      url: '/api/v1beta/skills',
      payload: { ...payload, scope: 'user' },
    });
    assert.equal(userWithRoot.statusCode, 400);

    const ok = await app.inject({
      method: 'POST',
      url: '/api/v1beta/skills',
      payload: { ...payload, allow_unsigned: true },
    });
    assert.equal(ok.statusCode, 201, ok.body);
    const skill = ok.json().skill;
    assert.equal(skill.scope, 'project');
    assert.equal(skill.project_root, project);
    assert.deepEqual(
      skill.dependencies.map((d: { name: string }) => d.name),
      ['helper-skill'],
    );
    assert.ok(existsSync(join(project, '.claude', 'skills', 'main-skill', 'SKILL.md')));
    assert.ok(existsSync(join(project, '.claude', 'skills', 'helper-skill', 'SKILL.md')));

    const lock = parseYaml(readFileSync(join(project, 'skep.lock.yaml'), 'utf8')) as {
      version: number;
      skills: {
        name: string;
        source: string;
        digest: string;
        contentDigest: string;
        requiredBy?: string[];
        explicit?: boolean;
      }[];
    };
    assert.equal(lock.version, 1);
    assert.deepEqual(
      lock.skills.map((s) => s.name),
      ['helper-skill', 'main-skill'],
    );
    assert.deepEqual(lock.skills[0]?.requiredBy, ['main-skill']);
    assert.equal(lock.skills[1]?.explicit, true);
    assert.equal(lock.skills[1]?.source, parentRef);
    assert.match(lock.skills[1]?.contentDigest ?? '', /^sha256:[a-f0-9]{64}$/);

    const listed = await app.inject({
      method: 'GET',
      url: `/api/v1beta/skills?project_root=${encodeURIComponent(project)}`,
    });
    assert.deepEqual(
      listed.json().skills.map((s: { metadata: { name: string } }) => s.metadata.name),
      ['helper-skill', 'main-skill'],
    );
    const info = await app.inject({
      method: 'GET',
      url: `/api/v1beta/skills/main-skill?scope=project&project_root=${encodeURIComponent(project)}`,
    });
    assert.equal(info.json().unsigned, true);

    // Lock sync over OCI: the folders go away; sync puts both back from `<repo>@<digest>`.
    rmSync(join(project, '.claude'), { recursive: true, force: true });
    const synced = await app.inject({
      method: 'POST',
      url: '/api/v1beta/skills/sync',
      payload: { project_root: project, clients: ['claude-code'] },
    });
    assert.equal(synced.statusCode, 200, synced.body);
    assert.deepEqual(synced.json().drifted, ['helper-skill', 'main-skill']);
    assert.deepEqual(synced.json().installed, ['helper-skill', 'main-skill']);
    assert.ok(existsSync(join(project, '.claude', 'skills', 'main-skill', 'SKILL.md')));
    assert.ok(existsSync(join(project, '.claude', 'skills', 'helper-skill', 'SKILL.md')));
    const relocked = parseYaml(readFileSync(join(project, 'skep.lock.yaml'), 'utf8')) as typeof lock;
    assert.deepEqual(relocked.skills, lock.skills, 'the lock file is unchanged');
    const upgraded = await app.inject({
      method: 'POST',
      url: '/api/v1beta/skills/upgrade',
      payload: { project_root: project, clients: ['claude-code'] },
    });
    assert.deepEqual(
      upgraded.json().outcomes.map((o: { status: string }) => o.status),
      ['up-to-date', 'up-to-date'],
      'the tags still name the same digests',
    );

    const del = await app.inject({
      method: 'DELETE',
      url: `/api/v1beta/skills/main-skill?project_root=${encodeURIComponent(project)}`,
    });
    assert.equal(del.statusCode, 204);
    assert.ok(!existsSync(join(project, '.claude', 'skills', 'main-skill')));
    assert.ok(
      !existsSync(join(project, '.claude', 'skills', 'helper-skill')),
      'the dependency nothing else needs is removed',
    );
    const after = parseYaml(readFileSync(join(project, 'skep.lock.yaml'), 'utf8')) as { skills?: unknown[] };
    assert.equal(after.skills, undefined);
    assert.equal((await app.inject({ method: 'GET', url: '/api/v1beta/skills' })).json().skills.length, 0);
  },
);
