/**
 * Skill signing and verification against a real OCI registry (Debian docker-registry on loopback),
 * with key pairs generated here: a push with a key stores a cosign simple-signing signature under
 * `sha256-<hex>.sig`; a project install verifies it against the trusted key and pins the signer
 * in skep.lock.yaml; a replaced (tampered) artifact, a copied signature, an untrusted signer and a
 * signature downgrade are refused before anything is written.
 */
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { existsSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { testApp } from '../../helpers/api.js';
import { requireService } from '../../helpers/services.js';
import { hasRegistry, initGitRepo, startRegistry, tempDir, writeSkill } from './fixtures.js';

const home = tempDir({ after: () => undefined } as never, 'skep-skills-sign-home-');
process.env['HOME'] = home;
process.env['SKEP_SKILLS_PRIVATE_HOSTS'] = '127.0.0.1';

function keyPair(dir: string, name: string): { priv: string; pub: string; fingerprint: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const priv = join(dir, `${name}.key`);
  const pub = join(dir, `${name}.pub`);
  writeFileSync(priv, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  writeFileSync(pub, publicKey.export({ type: 'spki', format: 'pem' }));
  const der = publicKey.export({ type: 'spki', format: 'der' });
  return { priv, pub, fingerprint: `sha256:${createHash('sha256').update(der).digest('hex')}` };
}

interface LockEntry {
  name: string;
  digest: string;
  unsigned?: boolean;
  provenance?: { signerIdentity: string; certIssuer: string };
}

test(
  'signed push, verified project install with the signer in the lock; tampered refused',
  { timeout: 120_000 },
  async (t) => {
    if (!requireService(t, 'docker-registry', hasRegistry(), 'apt-get install docker-registry')) return;
    const registry = await startRegistry(t);
    const { app } = await testApp(t);
    const work = tempDir(t, 'skep-skill-sign-src-');
    const keys = tempDir(t, 'skep-skill-keys-');
    const project = realpathSync(tempDir(t, 'skep-skill-sign-project-'));
    initGitRepo(project);
    const alice = keyPair(keys, 'alice');
    const mallory = keyPair(keys, 'mallory');

    const ref = `${registry}/skills/signed-skill:1.0.0`;
    const build = async (dir: string) =>
      app.inject({ method: 'POST', url: '/api/v1beta/skills/build', payload: { path: dir, tag: ref } });
    const push = (payload: Record<string, unknown>) =>
      app.inject({ method: 'POST', url: '/api/v1beta/skills/push', payload: { reference: ref, ...payload } });
    // A local build tagged with the reference wins over the registry (and carries no signature).
    const dropLocal = async () =>
      assert.equal(
        (await app.inject({ method: 'DELETE', url: `/api/v1beta/skills/builds/${encodeURIComponent(ref)}` }))
          .statusCode,
        204,
      );
    const install = (payload: Record<string, unknown>) =>
      app.inject({
        method: 'POST',
        url: '/api/v1beta/skills',
        payload: { name: ref, scope: 'project', project_root: project, clients: ['claude-code'], ...payload },
      });
    const lock = () =>
      (parseYaml(readFileSync(join(project, 'skep.lock.yaml'), 'utf8')) as { skills: LockEntry[] }).skills;

    assert.equal((await build(writeSkill(work, 'signed-skill'))).statusCode, 200);

    // A token without a subject cannot be used for keyless signing (nothing is sent anywhere);
    // a bad key pushes nothing.
    const keyless = await push({ identity_token: 'eyJ.e30.x' });
    assert.equal(keyless.statusCode, 400);
    assert.match(keyless.json().message, /^keyless signing: the identity token names no subject/);
    writeFileSync(join(keys, 'bad.key'), 'not a key');
    const badKey = await push({ key: join(keys, 'bad.key') });
    assert.equal(badKey.statusCode, 400);
    assert.match(badKey.json().message, /^key: not a usable private key PEM/);
    const absent = await fetch(`http://${registry}/v2/skills/signed-skill/manifests/1.0.0`);
    assert.equal(absent.status, 404, 'a bad key pushes nothing');
    assert.equal((await push({ key: alice.pub })).statusCode, 400, 'a public key cannot sign');
    const missingKey = await push({ key: join(keys, 'absent.key') });
    assert.equal(missingKey.statusCode, 400);
    assert.equal(missingKey.json().code, 'invalid_path', 'a key file that cannot be read is a path problem');
    assert.match(missingKey.json().message, /^key: cannot read ".*absent\.key": ENOENT/);

    const signed = await push({ key: alice.priv });
    assert.equal(signed.statusCode, 204, signed.body);
    const index = await fetch(`http://${registry}/v2/skills/signed-skill/manifests/1.0.0`, {
      headers: { accept: 'application/vnd.oci.image.index.v1+json' },
    });
    const digest = index.headers.get('docker-content-digest') ?? '';
    assert.match(digest, /^sha256:[0-9a-f]{64}$/);
    // cosign's layout: the signature manifest under sha256-<hex>.sig, one simple-signing layer.
    const sigTag = `${digest.replace(':', '-')}.sig`;
    const sigRes = await fetch(`http://${registry}/v2/skills/signed-skill/manifests/${sigTag}`, {
      headers: { accept: 'application/vnd.oci.image.manifest.v1+json' },
    });
    assert.equal(sigRes.status, 200);
    const sigManifest = (await sigRes.json()) as {
      layers: { mediaType: string; digest: string; annotations: Record<string, string> }[];
    };
    assert.equal(sigManifest.layers.length, 1);
    assert.equal(sigManifest.layers[0]!.mediaType, 'application/vnd.dev.cosign.simplesigning.v1+json');
    assert.ok(sigManifest.layers[0]!.annotations['dev.cosignproject.cosign/signature']);
    const payload = (await (
      await fetch(`http://${registry}/v2/skills/signed-skill/blobs/${sigManifest.layers[0]!.digest}`)
    ).json()) as {
      critical: { image: { 'docker-manifest-digest': string }; identity: { 'docker-reference': string } };
    };
    assert.equal(payload.critical.image['docker-manifest-digest'], digest);
    assert.equal(payload.critical.identity['docker-reference'], `${registry}/skills/signed-skill`);
    const local = await install({ public_keys: [alice.pub] });
    assert.equal(local.statusCode, 403);
    assert.match(local.json().message, /local builds carry no signature/);
    await dropLocal();

    // Signed, but the key is not trusted: refused, nothing written.
    const untrusted = await install({});
    assert.equal(untrusted.statusCode, 403, untrusted.body);
    assert.match(
      untrusted.json().message,
      /signature verification failed: no trusted public key is configured/,
    );
    const wrongKey = await install({ public_keys: [mallory.pub], allow_unsigned: true });
    assert.equal(wrongKey.statusCode, 403);
    assert.match(wrongKey.json().message, /no signature verifies with a trusted public key/);
    assert.ok(!existsSync(join(project, '.claude')), 'nothing written before the signature check');

    // Trusted (as PEM text here, as a path below): installs, and the lock pins digest and signer.
    const ok = await install({ public_keys: [readFileSync(alice.pub, 'utf8')] });
    assert.equal(ok.statusCode, 201, ok.body);
    const entry = lock().find((e) => e.name === 'signed-skill');
    assert.equal(entry?.digest, digest);
    assert.deepEqual(entry?.provenance, { signerIdentity: alice.fingerprint, certIssuer: 'skep:public-key' });
    assert.equal(entry?.unsigned, undefined);

    // The same tag re-pushed with other content, unsigned: the new digest has no signature.
    assert.equal(
      (await build(writeSkill(work, 'signed-skill', { description: 'replaced content' }))).statusCode,
      200,
    );
    assert.equal((await push({})).statusCode, 204);
    await dropLocal();
    const tampered = await install({ public_keys: [alice.pub] });
    assert.equal(tampered.statusCode, 403);
    assert.match(tampered.json().message, /is not signed/);
    // allow_unsigned does not downgrade an entry whose signer the lock pins.
    const downgrade = await install({ public_keys: [alice.pub], allow_unsigned: true });
    assert.equal(downgrade.statusCode, 403);
    assert.match(downgrade.json().message, /pins the signer sha256:/);

    // The old signature copied to the new digest's tag: it names the old digest, refused.
    const newDigest =
      (
        await fetch(`http://${registry}/v2/skills/signed-skill/manifests/1.0.0`, {
          method: 'HEAD',
          headers: { accept: 'application/vnd.oci.image.index.v1+json' },
        })
      ).headers.get('docker-content-digest') ?? '';
    assert.notEqual(newDigest, digest);
    const copy = await fetch(
      `http://${registry}/v2/skills/signed-skill/manifests/${newDigest.replace(':', '-')}.sig`,
      {
        method: 'PUT',
        headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' },
        body: JSON.stringify(sigManifest),
      },
    );
    assert.equal(copy.status, 201);
    const copied = await install({ public_keys: [alice.pub] });
    assert.equal(copied.statusCode, 403);
    assert.match(copied.json().message, /names another digest/);

    // Signed by another key: the pinned signer refuses it; the lock entry is unchanged.
    assert.equal(
      (await build(writeSkill(work, 'signed-skill', { description: 'replaced content' }))).statusCode,
      200,
    );
    assert.equal((await push({ key: mallory.priv })).statusCode, 204);
    await dropLocal();
    const otherSigner = await install({ public_keys: [alice.pub, mallory.pub] });
    assert.equal(otherSigner.statusCode, 403);
    assert.match(
      otherSigner.json().message,
      new RegExp(`signed by ${mallory.fingerprint}, but skep.lock.yaml pins the signer ${alice.fingerprint}`),
    );
    assert.equal(lock().find((e) => e.name === 'signed-skill')?.digest, digest);

    // User scope: unsigned stays allowed (as the reference), but a bad signature is refused when keys are trusted.
    const userScope = await app.inject({
      method: 'POST',
      url: '/api/v1beta/skills',
      payload: { name: ref, clients: ['claude-code'], public_keys: [alice.pub] },
    });
    assert.equal(userScope.statusCode, 403);
    assert.match(userScope.json().message, /no signature verifies with a trusted public key/);
  },
);

test(
  'upgrade of a signed lock entry: same signer upgrades, another is blocked unless allowed, unsigned fails',
  { timeout: 120_000 },
  async (t) => {
    if (!requireService(t, 'docker-registry', hasRegistry(), 'apt-get install docker-registry')) return;
    const registry = await startRegistry(t);
    const { app } = await testApp(t);
    const work = tempDir(t, 'skep-skill-up-src-');
    const keys = tempDir(t, 'skep-skill-up-keys-');
    const project = realpathSync(tempDir(t, 'skep-skill-up-project-'));
    initGitRepo(project);
    const alice = keyPair(keys, 'alice');
    const mallory = keyPair(keys, 'mallory');
    // The user's policy: both keys trusted (a folder of public keys).
    const trusted = tempDir(t, 'skep-skill-up-trusted-');
    for (const k of [alice, mallory])
      writeFileSync(join(trusted, `${k.fingerprint.slice(7, 15)}.pub`), readFileSync(k.pub));
    const saved = process.env['SKEP_SKILLS_TRUSTED_KEYS'];
    process.env['SKEP_SKILLS_TRUSTED_KEYS'] = trusted;
    t.after(() => {
      if (saved === undefined) delete process.env['SKEP_SKILLS_TRUSTED_KEYS'];
      else process.env['SKEP_SKILLS_TRUSTED_KEYS'] = saved;
    });

    const ref = `${registry}/skills/up-skill:latest`;
    let round = 0;
    const publish = async (key: string | undefined) => {
      round++;
      const dir = writeSkill(work, 'up-skill', { description: `round ${round}` });
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
      const pushed = await app.inject({
        method: 'POST',
        url: '/api/v1beta/skills/push',
        payload: { reference: ref, ...(key === undefined ? {} : { key }) },
      });
      assert.equal(pushed.statusCode, 204, pushed.body);
      assert.equal(
        (await app.inject({ method: 'DELETE', url: `/api/v1beta/skills/builds/${encodeURIComponent(ref)}` }))
          .statusCode,
        204,
      );
    };
    const upgrade = async (extra: Record<string, unknown> = {}) => {
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1beta/skills/upgrade',
        payload: { project_root: project, clients: ['claude-code'], ...extra },
      });
      assert.equal(res.statusCode, 200, res.body);
      return res.json<{
        outcomes: { status: string; new_digest: string; new_signer_identity?: string; reason?: string }[];
      }>().outcomes[0]!;
    };
    const entry = () =>
      (
        parseYaml(readFileSync(join(project, 'skep.lock.yaml'), 'utf8')) as { skills: LockEntry[] }
      ).skills.find((e) => e.name === 'up-skill')!;

    await publish(alice.priv);
    const installed = await app.inject({
      method: 'POST',
      url: '/api/v1beta/skills',
      payload: { name: ref, scope: 'project', project_root: project, clients: ['claude-code'] },
    });
    assert.equal(installed.statusCode, 201, installed.body);
    assert.equal(entry().provenance?.signerIdentity, alice.fingerprint);

    await publish(alice.priv);
    const same = await upgrade();
    assert.equal(same.status, 'upgraded');
    assert.equal(entry().digest, same.new_digest);
    assert.equal(entry().provenance?.signerIdentity, alice.fingerprint);

    await publish(mallory.priv);
    const before = entry().digest;
    const blocked = await upgrade();
    assert.equal(blocked.status, 'signer-change-blocked');
    assert.equal(blocked.new_signer_identity, mallory.fingerprint);
    assert.equal(entry().digest, before, 'a blocked upgrade changes nothing');
    const allowed = await upgrade({ allow_signer_change: true });
    assert.equal(allowed.status, 'upgraded');
    assert.equal(entry().provenance?.signerIdentity, mallory.fingerprint);

    await publish(undefined);
    const unsigned = await upgrade();
    assert.equal(unsigned.status, 'failed');
    assert.equal(unsigned.reason, 'signature-invalid');
    assert.equal(entry().provenance?.signerIdentity, mallory.fingerprint);
  },
);
