/**
 * The registry's signer policy for skills through a real `skep serve` and the CLI, as a user
 * sets it up: the registry is a registry file configured with `PUT /api/v1beta/registry/default`,
 * one of its skill entries names the signer (`provenance`), the user's Sigstore policy (the
 * trusted root of the test's stand-in Fulcio CA and Rekor key, `test/helpers/sigstore-fixture.ts`)
 * is named by `SKEP_SKILLS_SIGSTORE_POLICY`, and the skills live in a real OCI registry (Debian
 * docker-registry on loopback).
 *
 * Checked: the entry's OCI artifact signed keyless by the entry's signer installs by name and the
 * project's skep.lock.yaml records the signer; an unsigned one is 403 naming the signer expected,
 * with `allow_unsigned` through the API and `--allow-unsigned` through the CLI; once the registry
 * file is gone, the running server keeps enforcing the copy it read, and a process that cannot
 * read it (the CLI, a restarted server) refuses the install with a 503 naming the file, not a
 * 500, and a sync reports the skill `registry-unreachable`, its lock entry untouched.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { runCliAsync, type ServeProcess, startServe } from '../helpers/cli.js';
import { tempHome } from '../helpers/home.js';
import { requireService } from '../helpers/services.js';
import { createSigstoreFixture } from '../helpers/sigstore-fixture.js';
import {
  hasRegistry,
  initGitRepo,
  startRegistry,
  tempDir,
  writeSkill,
} from '../integration/skills/fixtures.js';
import {
  ALICE,
  catalogEntry,
  ISSUER,
  type LockEntry,
  signKeyless,
} from '../integration/skills/policy-harness.js';

/** JSON over the API of `serve`, with its token. */
function apiOf(serve: ServeProcess) {
  return async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${serve.url}${path}`, {
      method,
      headers: { ...serve.auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, text, json: () => JSON.parse(text) as Record<string, unknown> };
  };
}

test(
  'skep serve + CLI: a registry entry with provenance — its signer installs (lock records it), unsigned is 403 even with allow_unsigned, an unreadable registry is 503',
  { timeout: 240_000 },
  async (t) => {
    if (!requireService(t, 'docker-registry', hasRegistry(), 'apt-get install docker-registry')) return;
    const fx = createSigstoreFixture();
    t.after(() => fx.close());
    const registry = await startRegistry(t);
    const home = tempHome(t, 'skep-skills-policy-e2e-');
    const userHome = join(home.dir, 'user');
    mkdirSync(userHome);
    // The user trusts any example.com identity from the issuer; the registry narrows it to Alice.
    const policy = join(home.dir, 'sigstore-policy.json');
    writeFileSync(
      policy,
      JSON.stringify({
        trusted_root: fx.trustedRootPath,
        identities: [{ signer_identity_regexp: '.*@example\\.com', cert_issuer: ISSUER }],
      }),
    );
    const env: NodeJS.ProcessEnv = {
      ...home.env,
      HOME: userHome,
      SKEP_SKILLS_PRIVATE_HOSTS: '127.0.0.1',
      SKEP_SKILLS_SIGSTORE_POLICY: policy,
    };
    let serve = await startServe(t, env, home.config.paths.discoveryFile);
    let api = apiOf(serve);
    const work = tempDir(t, 'skep-skills-policy-e2e-src-');
    const newProject = () => {
      const dir = realpathSync(tempDir(t, 'skep-skills-policy-e2e-project-'));
      initGitRepo(dir);
      return dir;
    };

    // Two skills built and pushed through the API (the local builds dropped, so installs read
    // the registry); Alice signs the first one keyless.
    const publish = async (name: string) => {
      const ref = `${registry}/skills/${name}:1.0.0`;
      const built = await api('POST', '/api/v1beta/skills/build', { path: writeSkill(work, name), tag: ref });
      assert.equal(built.status, 200, built.text);
      const pushed = await api('POST', '/api/v1beta/skills/push', { reference: ref });
      assert.equal(pushed.status, 204, pushed.text);
      const dropped = await api('DELETE', `/api/v1beta/skills/builds/${encodeURIComponent(ref)}`);
      assert.equal(dropped.status, 204, dropped.text);
      const head = await fetch(`http://${registry}/v2/skills/${name}/manifests/1.0.0`, {
        method: 'HEAD',
        headers: { accept: 'application/vnd.oci.image.index.v1+json' },
      });
      const digest = head.headers.get('docker-content-digest') ?? '';
      assert.match(digest, /^sha256:[0-9a-f]{64}$/);
      return { ref, digest };
    };
    const signed = await publish('signed-skill');
    await signKeyless(fx, signed.ref, signed.digest, ALICE, ISSUER);
    const unsigned = await publish('unsigned-skill');

    // The registry: a file whose entries name Alice as the signer of both, set as users set it.
    const registryFile = join(home.dir, 'registry.json');
    const provenance = { signer_identity: ALICE, cert_issuer: ISSUER };
    writeFileSync(
      registryFile,
      JSON.stringify({
        version: '1.0.0',
        data: {
          servers: [],
          skills: [
            catalogEntry('signed-skill', signed.ref, provenance),
            catalogEntry('unsigned-skill', unsigned.ref, provenance),
          ],
        },
      }),
    );
    const put = await api('PUT', '/api/v1beta/registry/default', { local_path: registryFile });
    assert.equal(put.status, 200, put.text);

    const install = (name: string, project: string, extra: Record<string, unknown> = {}) =>
      api('POST', '/api/v1beta/skills', {
        name,
        scope: 'project',
        project_root: project,
        clients: ['claude-code'],
        ...extra,
      });
    const lockOf = (project: string) =>
      (parseYaml(readFileSync(join(project, 'skep.lock.yaml'), 'utf8')) as { skills: LockEntry[] }).skills;

    // Signed by the entry's signer: installed by name, the lock records Alice.
    const project = newProject();
    const ok = await install('signed-skill', project);
    assert.equal(ok.status, 201, ok.text);
    assert.ok(existsSync(join(project, '.claude', 'skills', 'signed-skill', 'SKILL.md')));
    const locked = lockOf(project).find((e) => e.name === 'signed-skill');
    assert.equal(locked?.digest, signed.digest);
    assert.equal(locked?.source, signed.ref);
    assert.deepEqual(locked?.provenance, { signerIdentity: ALICE, certIssuer: ISSUER });

    // Unsigned: 403 naming the signer, even with allow_unsigned (API) and --allow-unsigned (CLI).
    const expected =
      /skill "unsigned-skill" \(sha256:[0-9a-f]{64}\) is not signed, but must be signed by alice@example\.com \(issuer https:\/\/accounts\.example\.com\), as its registry entry io\.example\/unsigned-skill requires/;
    const refusedProject = newProject();
    const refused = await install('unsigned-skill', refusedProject, { allow_unsigned: true });
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.json()['code'], 'forbidden');
    assert.match(String(refused.json()['message']), expected);
    const cli = (name: string, dir: string) =>
      runCliAsync(
        [
          'skill',
          'install',
          name,
          '--scope',
          'project',
          '--project-root',
          dir,
          '--clients',
          'claude-code',
          '--allow-unsigned',
        ],
        env,
      );
    const refusedCli = await cli('unsigned-skill', refusedProject);
    assert.equal(refusedCli.status, 1, refusedCli.stderr);
    assert.match(refusedCli.stderr, expected);
    assert.ok(!existsSync(join(refusedProject, '.claude')), 'nothing written');
    assert.ok(!existsSync(join(refusedProject, 'skep.lock.yaml')), 'no lock entry');

    // The registry file goes away. The running server keeps the copy it read: still enforced.
    rmSync(registryFile);
    const stale = await install(unsigned.ref, refusedProject, { allow_unsigned: true });
    assert.equal(stale.status, 403, stale.text);
    assert.match(String(stale.json()['message']), expected);

    // A process that cannot read it refuses every install from a registry (an entry might name
    // its signer): the CLI, and the server once restarted. 503 naming the file, never a 500.
    const unreadable =
      /the configured registry's skill entries cannot be read, and an install must meet the signer policy they may hold: registry source .*registry\.json is unavailable: ENOENT/;
    const downCli = await cli(signed.ref, newProject());
    assert.equal(downCli.status, 1, downCli.stderr);
    assert.match(downCli.stderr, unreadable);
    assert.equal(await serve.stop(), 0);
    serve = await startServe(t, env, home.config.paths.discoveryFile);
    api = apiOf(serve);
    const downProject = newProject();
    const down = await install(signed.ref, downProject);
    assert.equal(down.status, 503, down.text);
    assert.equal(down.json()['code'], 'unavailable');
    assert.match(String(down.json()['message']), unreadable);
    assert.ok(!existsSync(join(downProject, '.claude')), 'nothing written');

    // Sync cannot check the registry's policy either: the skill is failed, the lock untouched.
    const lockBefore = readFileSync(join(project, 'skep.lock.yaml'), 'utf8');
    rmSync(join(project, '.claude', 'skills', 'signed-skill'), { recursive: true });
    const sync = await api('POST', '/api/v1beta/skills/sync', {
      project_root: project,
      clients: ['claude-code'],
    });
    assert.equal(sync.status, 200, sync.text);
    const failed = sync.json()['failed'] as { name: string; reason: string; error: string }[];
    assert.deepEqual(
      failed.map((f) => [f.name, f.reason]),
      [['signed-skill', 'registry-unreachable']],
    );
    assert.match(failed[0]?.error ?? '', unreadable);
    assert.equal(readFileSync(join(project, 'skep.lock.yaml'), 'utf8'), lockBefore);
    assert.ok(!existsSync(join(project, '.claude', 'skills', 'signed-skill')), 'nothing written');
  },
);
