/**
 * Keyless skill verification on install against a real OCI registry (Debian docker-registry on
 * loopback): a skill pushed unsigned is then signed keyless by the test (a leaf certificate from
 * a CA standing in for Fulcio, a Rekor SET from a log key standing in for Rekor,
 * `test/helpers/sigstore-fixture.ts`) and the user's Sigstore policy file names the trusted root
 * and the identity. A project install verifies it and records the certificate identity and OIDC
 * issuer in skep.lock.yaml; a policy naming another identity refuses it; a replaced (tampered)
 * artifact carrying the old signature is refused; a broken policy file is refused by name.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { OciSession } from '../../../src/skills/oci-client.js';
import { parseOciRef } from '../../../src/skills/oci-ref.js';
import { SIGSTORE_POLICY_ENV, signatureStore } from '../../../src/skills/signing.js';
import { testApp } from '../../helpers/api.js';
import { requireService } from '../../helpers/services.js';
import { createSigstoreFixture } from '../../helpers/sigstore-fixture.js';
import { hasRegistry, initGitRepo, startRegistry, tempDir, writeSkill } from './fixtures.js';

const home = tempDir({ after: () => undefined } as never, 'skep-skills-keyless-home-');
process.env['HOME'] = home;
process.env['SKEP_SKILLS_PRIVATE_HOSTS'] = '127.0.0.1';

const ALICE = 'alice@example.com';
const ISSUER = 'https://accounts.example.com';

interface LockEntry {
  name: string;
  digest: string;
  unsigned?: boolean;
  provenance?: { signerIdentity: string; certIssuer: string };
}

test(
  'Sigstore keyless: a keyless-signed skill installs with identity and issuer in the lock; other identity or tampered refused',
  { timeout: 120_000 },
  async (t) => {
    if (!requireService(t, 'docker-registry', hasRegistry(), 'apt-get install docker-registry')) return;
    const fx = createSigstoreFixture();
    t.after(() => fx.close());
    const registry = await startRegistry(t);
    const { app } = await testApp(t);
    const work = tempDir(t, 'skep-skill-keyless-src-');
    const policyDir = tempDir(t, 'skep-skill-keyless-policy-');
    const ref = `${registry}/skills/keyless-skill:1.0.0`;
    const build = async (dir: string) =>
      app.inject({ method: 'POST', url: '/api/v1beta/skills/build', payload: { path: dir, tag: ref } });
    const push = () =>
      app.inject({ method: 'POST', url: '/api/v1beta/skills/push', payload: { reference: ref } });
    const dropLocal = async () =>
      assert.equal(
        (await app.inject({ method: 'DELETE', url: `/api/v1beta/skills/builds/${encodeURIComponent(ref)}` }))
          .statusCode,
        204,
      );
    const install = (project: string, payload: Record<string, unknown> = {}) =>
      app.inject({
        method: 'POST',
        url: '/api/v1beta/skills',
        payload: { name: ref, scope: 'project', project_root: project, clients: ['claude-code'], ...payload },
      });
    const newProject = () => {
      const dir = realpathSync(tempDir(t, 'skep-skill-keyless-project-'));
      initGitRepo(dir);
      return dir;
    };
    const lock = (project: string) =>
      (parseYaml(readFileSync(join(project, 'skep.lock.yaml'), 'utf8')) as { skills: LockEntry[] }).skills;
    const usePolicy = (identities: unknown[], trustedRoot: unknown = fx.trustedRootPath) => {
      const file = join(policyDir, 'sigstore-policy.json');
      writeFileSync(file, JSON.stringify({ trusted_root: trustedRoot, identities }));
      process.env[SIGSTORE_POLICY_ENV] = file;
    };
    t.after(() => delete process.env[SIGSTORE_POLICY_ENV]);
    const digestOf = async () =>
      (
        await fetch(`http://${registry}/v2/skills/keyless-skill/manifests/1.0.0`, {
          method: 'HEAD',
          headers: { accept: 'application/vnd.oci.image.index.v1+json' },
        })
      ).headers.get('docker-content-digest') ?? '';

    // Pushed unsigned, then signed keyless beside it, as `cosign sign` does.
    assert.equal((await build(writeSkill(work, 'keyless-skill'))).statusCode, 200);
    assert.equal((await push()).statusCode, 204);
    await dropLocal();
    const digest = await digestOf();
    assert.match(digest, /^sha256:[0-9a-f]{64}$/);
    const session = new OciSession(parseOciRef(ref), true, { privateHosts: ['127.0.0.1'] });
    await fx.sign(
      signatureStore(session),
      `${registry}/skills/keyless-skill`,
      digest,
      fx.leaf({ identity: ALICE, issuer: ISSUER }),
    );

    // Another identity in the policy: refused, nothing written.
    usePolicy([{ signer_identity: 'bob@example.com', cert_issuer: ISSUER }]);
    const other = newProject();
    const wrong = await install(other);
    assert.equal(wrong.statusCode, 403, wrong.body);
    assert.match(
      wrong.json().message,
      /signature verification failed: the certificate identity is alice@example\.com, not bob@example\.com/,
    );
    assert.ok(!existsSync(join(other, '.claude')), 'nothing written before the signature check');

    // A broken policy is refused by name, not skipped.
    usePolicy([{ signer_identity: ALICE }]);
    const broken = await install(newProject());
    assert.equal(broken.statusCode, 400, broken.body);
    assert.match(
      broken.json().message,
      /Sigstore policy .*sigstore-policy\.json.*: identities\[0\]\.cert_issuer is required/,
    );

    // The identity trusted (one of several): installs; the lock records digest, identity and issuer.
    usePolicy([
      { signer_identity: 'bob@example.com', cert_issuer: ISSUER },
      { signer_identity_regexp: '.*@example\\.com', cert_issuer: ISSUER },
    ]);
    const project = newProject();
    const ok = await install(project);
    assert.equal(ok.statusCode, 201, ok.body);
    const entry = lock(project).find((e) => e.name === 'keyless-skill');
    assert.equal(entry?.digest, digest);
    assert.deepEqual(entry?.provenance, { signerIdentity: ALICE, certIssuer: ISSUER });
    assert.equal(entry?.unsigned, undefined);

    // Tampered: other content under the same tag, with the old keyless signature copied beside it.
    const sigManifest = await fetch(
      `http://${registry}/v2/skills/keyless-skill/manifests/${digest.replace(':', '-')}.sig`,
      { headers: { accept: 'application/vnd.oci.image.manifest.v1+json' } },
    ).then((r) => r.text());
    assert.equal(
      (await build(writeSkill(work, 'keyless-skill', { description: 'replaced content' }))).statusCode,
      200,
    );
    assert.equal((await push()).statusCode, 204);
    await dropLocal();
    const newDigest = await digestOf();
    assert.notEqual(newDigest, digest);
    const copy = await fetch(
      `http://${registry}/v2/skills/keyless-skill/manifests/${newDigest.replace(':', '-')}.sig`,
      {
        method: 'PUT',
        headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' },
        body: sigManifest,
      },
    );
    assert.equal(copy.status, 201);
    const tampered = await install(newProject());
    assert.equal(tampered.statusCode, 403, tampered.body);
    assert.match(tampered.json().message, /names another digest/);
  },
);
