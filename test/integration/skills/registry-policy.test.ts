/**
 * The registry's signer policy for skills, against a real OCI registry (Debian docker-registry on
 * loopback) and a real registry service reading a registry file: a catalog skill entry's
 * `provenance` (`signer_identity`, `cert_issuer`) names who must have signed the skill. Keyless
 * signatures are made by the test (a leaf certificate from a CA standing in for Fulcio, a Rekor
 * SET from a log key standing in for Rekor, `test/helpers/sigstore-fixture.ts`); the trusted root
 * comes from the user's Sigstore policy file, as it must.
 *
 * Checked: an install by name through the registry with the right signer installs and the lock
 * records signer and issuer; another identity or another issuer is refused naming the signer
 * expected and the one found, by name or by OCI reference, in project and user scope; the user's
 * policy still applies (the registry narrows, never widens); an unsigned artifact for an entry
 * with provenance is refused even with allow_unsigned, while one without provenance keeps
 * allow_unsigned's meaning; a signature by a key the user trusts does not meet a keyless entry; a
 * constraint Skep cannot check and a missing trusted root are refused by name; an upgrade installs
 * new content only when the entry's signer signed it; a git package (`git daemon` on loopback)
 * cannot carry the signature its entry requires, and without provenance installs by name.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { CatalogSkill } from '../../../src/schemas/registry/index.js';
import { SIGSTORE_POLICY_ENV } from '../../../src/skills/signing.js';
import { hasCommand, requireService } from '../../helpers/services.js';
import { startGitDaemon, tempDir, writeSkill } from './fixtures.js';
import { ALICE, catalogEntry, ISSUER, policyHarness } from './policy-harness.js';

test(
  'registry policy: the entry names the signer; right signer installs (lock records it), wrong identity or issuer refused',
  { timeout: 120_000 },
  async (t) => {
    const h = await policyHarness(t);
    if (h === undefined) return;
    const { ref, digest } = await h.publish('policy-skill');
    await h.sign(ref, digest, ALICE, ISSUER);
    // The user trusts any example.com identity from this issuer; the registry narrows it to Alice.
    h.usePolicy([{ signer_identity_regexp: '.*@example\\.com', cert_issuer: ISSUER }]);
    const install = (name: string, project: string | undefined, extra: Record<string, unknown> = {}) =>
      h.skills.install({
        name,
        clients: ['claude-code'],
        ...(project === undefined ? {} : { scope: 'project', project_root: project }),
        ...extra,
      });

    // Right signer, installed by name through the registry: the lock records who signed.
    await h.useRegistry([catalogEntry('policy-skill', ref, { signer_identity: ALICE, cert_issuer: ISSUER })]);
    const project = h.newProject();
    const installed = await install('policy-skill', project);
    assert.equal(installed.digest, digest);
    const locked = h.lock(project).find((e) => e.name === 'policy-skill');
    assert.equal(locked?.source, ref, 'the lock keeps the reference the entry resolved to');
    assert.deepEqual(locked?.provenance, { signerIdentity: ALICE, certIssuer: ISSUER });
    assert.equal(locked?.unsigned, undefined);
    // The qualified name resolves the same entry.
    await install('io.example/policy-skill', h.newProject());

    // Another identity in the entry: refused by name and by OCI reference, naming both signers,
    // in project and in user scope (the registry's policy holds in every scope), nothing written.
    await h.useRegistry([
      catalogEntry('policy-skill', ref, { signer_identity: 'bob@example.com', cert_issuer: ISSUER }),
    ]);
    const expected =
      /skill "policy-skill" \(sha256:[0-9a-f]{64}\) is not signed by bob@example\.com \(issuer https:\/\/accounts\.example\.com\), as its registry entry io\.example\/policy-skill requires: signed by alice@example\.com \(issuer https:\/\/accounts\.example\.com\), but the registry entry io\.example\/policy-skill requires bob@example\.com/;
    for (const [name, target] of [
      ['policy-skill', h.newProject()],
      [ref, h.newProject()],
      [ref, undefined],
    ] as const) {
      await assert.rejects(install(name, target), { code: 'forbidden', message: expected });
      if (target !== undefined) assert.ok(!existsSync(join(target, '.claude')), 'nothing written');
    }
    assert.ok(
      !existsSync(join(h.env['HOME']!, '.claude', 'skills', 'policy-skill')),
      'user scope: nothing written',
    );

    // Another issuer in the entry: refused the same way.
    await h.useRegistry([
      catalogEntry('policy-skill', ref, { signer_identity: ALICE, cert_issuer: 'https://other.example.com' }),
    ]);
    await assert.rejects(install('policy-skill', h.newProject()), {
      code: 'forbidden',
      message:
        /signed by alice@example\.com \(issuer https:\/\/accounts\.example\.com\), but the registry entry io\.example\/policy-skill requires alice@example\.com \(issuer https:\/\/other\.example\.com\)/,
    });

    // The registry narrows, never widens: an entry naming Alice does not make Alice trusted when
    // the user's own policy trusts only Bob.
    await h.useRegistry([catalogEntry('policy-skill', ref, { signer_identity: ALICE, cert_issuer: ISSUER })]);
    h.usePolicy([{ signer_identity: 'bob@example.com', cert_issuer: ISSUER }]);
    await assert.rejects(install('policy-skill', h.newProject()), {
      code: 'forbidden',
      message: /the certificate identity is alice@example\.com, not bob@example\.com/,
    });

    // The trusted root comes from the user only: without a Sigstore policy the entry cannot be met.
    delete h.env[SIGSTORE_POLICY_ENV];
    await assert.rejects(install('policy-skill', h.newProject()), {
      code: 'forbidden',
      message: /must be signed keyless by alice@example\.com .*trusted root of your Sigstore policy/,
    });
  },
);

test(
  'registry policy: unsigned or key-signed artifact for an entry with provenance refused (even with allow_unsigned); unenforceable fields refused by name',
  { timeout: 120_000 },
  async (t) => {
    const h = await policyHarness(t);
    if (h === undefined) return;
    const { ref, digest } = await h.publish('plain-skill');
    h.usePolicy([{ signer_identity: ALICE, cert_issuer: ISSUER }]);
    const install = (project: string) =>
      h.skills.install({
        name: 'plain-skill',
        clients: ['claude-code'],
        scope: 'project',
        project_root: project,
        allow_unsigned: true,
      });

    await h.useRegistry([catalogEntry('plain-skill', ref, { signer_identity: ALICE, cert_issuer: ISSUER })]);
    const refused = h.newProject();
    await assert.rejects(install(refused), {
      code: 'forbidden',
      message: new RegExp(
        `skill "plain-skill" \\(${digest}\\) is not signed, but must be signed by alice@example\\.com .*allow_unsigned does not apply`,
      ),
    });
    assert.ok(!existsSync(join(refused, '.claude')), 'nothing written');
    assert.ok(!existsSync(join(refused, 'skep.lock.yaml')), 'no lock entry');

    // A constraint Skep cannot check is refused by name before anything is fetched.
    await h.useRegistry([
      catalogEntry('plain-skill', ref, {
        signer_identity: ALICE,
        cert_issuer: ISSUER,
        runner_environment: 'github-hosted',
      }),
    ]);
    await assert.rejects(install(h.newProject()), {
      code: 'forbidden',
      message:
        /registry skill io\.example\/plain-skill: provenance\.runner_environment is a constraint Skep cannot check/,
    });
    await h.useRegistry([catalogEntry('plain-skill', ref, { public_key: '-----BEGIN PUBLIC KEY-----' })]);
    await assert.rejects(install(h.newProject()), {
      code: 'forbidden',
      message: /provenance\.public_key is not honoured for skills/,
    });
    await h.useRegistry([catalogEntry('plain-skill', ref, { signer_identity: ALICE })]);
    await assert.rejects(install(h.newProject()), {
      code: 'forbidden',
      message: /provenance\.cert_issuer is required/,
    });

    // A signature by a key the user trusts is not the keyless signer the entry names.
    const keys = tempDir(t, 'skep-skill-regpolicy-keys-');
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    writeFileSync(join(keys, 'k.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    const pub = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const keyed = await h.publish('keyed-skill', { key: join(keys, 'k.key') });
    await h.useRegistry([
      catalogEntry('keyed-skill', keyed.ref, { signer_identity: ALICE, cert_issuer: ISSUER }),
    ]);
    await assert.rejects(
      h.skills.install({
        name: 'keyed-skill',
        clients: ['claude-code'],
        scope: 'project',
        project_root: h.newProject(),
        public_keys: [pub],
      }),
      {
        code: 'forbidden',
        message:
          /skill "keyed-skill" \(sha256:[0-9a-f]{64}\) is signed with the public key sha256:[0-9a-f]{64}, but must be signed keyless by alice@example\.com/,
      },
    );

    // An entry without provenance: allow_unsigned keeps its meaning (recorded unsigned).
    await h.useRegistry([catalogEntry('plain-skill', ref)]);
    const project = h.newProject();
    await install(project);
    const locked = h.lock(project).find((e) => e.name === 'plain-skill');
    assert.equal(locked?.unsigned, true);
    assert.equal(locked?.provenance, undefined);
  },
);

test(
  "registry policy: upgrade installs new content only when the entry's signer signed it, even with allow_signer_change",
  { timeout: 120_000 },
  async (t) => {
    const h = await policyHarness(t);
    if (h === undefined) return;
    h.usePolicy([{ signer_identity_regexp: '.*@example\\.com', cert_issuer: ISSUER }]);
    const first = await h.publish('moving-skill');
    await h.sign(first.ref, first.digest, ALICE, ISSUER);
    await h.useRegistry([
      catalogEntry('moving-skill', first.ref, { signer_identity: ALICE, cert_issuer: ISSUER }),
    ]);
    const project = h.newProject();
    await h.skills.install({
      name: 'moving-skill',
      clients: ['claude-code'],
      scope: 'project',
      project_root: project,
    });

    // The tag moves to content Bob signed: the user trusts Bob, the entry does not.
    const bobs = await h.publish('moving-skill', { description: 'signed by bob' });
    assert.notEqual(bobs.digest, first.digest);
    await h.sign(bobs.ref, bobs.digest, 'bob@example.com', ISSUER);
    const refused = await h.skills.upgrade({
      project_root: project,
      clients: ['claude-code'],
      allow_signer_change: true,
    });
    assert.equal(refused.outcomes[0]?.status, 'failed');
    assert.equal(refused.outcomes[0]?.reason, 'signature-invalid');
    assert.match(
      refused.outcomes[0]?.error ?? '',
      /signed by bob@example\.com \(issuer https:\/\/accounts\.example\.com\), but the registry entry io\.example\/moving-skill requires alice@example\.com/,
    );
    assert.equal(h.lock(project).find((e) => e.name === 'moving-skill')?.digest, first.digest);

    // Content Alice signed upgrades, and the lock keeps her as the signer.
    const alices = await h.publish('moving-skill', { description: 'signed by alice again' });
    await h.sign(alices.ref, alices.digest, ALICE, ISSUER);
    const upgraded = await h.skills.upgrade({ project_root: project, clients: ['claude-code'] });
    assert.equal(upgraded.outcomes[0]?.status, 'upgraded', JSON.stringify(upgraded.outcomes));
    const locked = h.lock(project).find((e) => e.name === 'moving-skill');
    assert.equal(locked?.digest, alices.digest);
    assert.deepEqual(locked?.provenance, { signerIdentity: ALICE, certIssuer: ISSUER });
  },
);

test(
  'registry policy: a git package cannot carry the signature its entry requires; without provenance it installs by name',
  { timeout: 120_000 },
  async (t) => {
    if (!requireService(t, 'git', hasCommand('git'), 'apt-get install git')) return;
    const h = await policyHarness(t);
    if (h === undefined) return;
    h.env['SKEP_GIT_SCHEME'] = 'git';
    h.usePolicy([{ signer_identity: ALICE, cert_issuer: ISSUER }]);
    const server = await startGitDaemon(t);
    writeSkill(join(server.repo, 'skills'), 'git-entry-skill');
    const commit = server.commit('skill');
    const gitEntry = (provenance?: CatalogSkill['provenance']): CatalogSkill => ({
      namespace: 'io.example',
      name: 'git-entry-skill',
      description: 'A skill from git.',
      version: '1.0.0',
      packages: [
        {
          registryType: 'git',
          url: `git://${server.host}/owner/repo`,
          commit,
          subfolder: 'skills/git-entry-skill',
        },
      ],
      ...(provenance === undefined ? {} : { provenance }),
    });
    const install = (project?: string) =>
      h.skills.install({
        name: 'git-entry-skill',
        clients: ['claude-code'],
        ...(project === undefined ? {} : { scope: 'project', project_root: project, allow_unsigned: true }),
      });

    await h.useRegistry([gitEntry({ signer_identity: ALICE, cert_issuer: ISSUER })]);
    await assert.rejects(install(h.newProject()), {
      code: 'forbidden',
      message: new RegExp(
        `skill "git-entry-skill" \\(${commit}\\) comes from a git source or a local build, which carries no signature; it must be signed by alice@example\\.com`,
      ),
    });

    await h.useRegistry([gitEntry()]);
    const installed = await install();
    assert.equal(installed.digest, commit);
    assert.equal(installed.reference, `git://${server.host}/owner/repo@${commit}#skills/git-entry-skill`);
  },
);
