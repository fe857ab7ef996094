/**
 * Keyless skill verification on install against a real OCI registry (Debian docker-registry on
 * loopback): a skill pushed unsigned is then signed keyless by the test (a leaf certificate from
 * a CA standing in for Fulcio, a Rekor SET from a log key standing in for Rekor,
 * `test/helpers/sigstore-fixture.ts`) and the user's Sigstore policy file names the trusted root
 * and the identity. A project install verifies it and records the certificate identity and OIDC
 * issuer in skep.lock.yaml; a policy naming another identity refuses it; a replaced (tampered)
 * artifact carrying the old signature is refused; a broken policy file is refused by name.
 *
 * Keyless signing on push runs against test doubles of Fulcio and Rekor (HTTP servers on
 * loopback speaking their v2 / v1 APIs, backed by the same test CA and log key; a real Fulcio
 * needs an OIDC provider and a real Rekor a transparency log, neither of which runs here): the
 * double checks the proof of possession over the token's subject, and the signed artifact then
 * installs under the identity policy. A token the double refuses pushes nothing.
 */
import { json } from '@sigstore/core';
import assert from 'node:assert/strict';
import { createPublicKey, verify } from 'node:crypto';
import { existsSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { OciSession } from '../../../src/skills/oci-client.js';
import { parseOciRef } from '../../../src/skills/oci-ref.js';
import {
  FULCIO_URL_ENV,
  REKOR_URL_ENV,
  SIGSTORE_POLICY_ENV,
  signatureStore,
} from '../../../src/skills/signing.js';
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

function jwt(claims: Record<string, unknown>): string {
  const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  return `${part({ alg: 'none' })}.${part(claims)}.x`;
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
}

test(
  'keyless push: Fulcio and Rekor test doubles certify and log the signature; the artifact installs; a refused token pushes nothing',
  { timeout: 120_000 },
  async (t) => {
    if (!requireService(t, 'docker-registry', hasRegistry(), 'apt-get install docker-registry')) return;
    const fx = createSigstoreFixture();
    t.after(() => fx.close());
    const GOOD = jwt({ iss: 'https://accounts.google.com', sub: '1234', email: ALICE });
    const seen = { fulcio: 0, rekor: 0 };
    // Fulcio (API v2) and Rekor (API v1) doubles on one loopback server.
    const server = createServer((req, res) => {
      void (async () => {
        const body = await readJson(req);
        if (req.url === '/api/v2/signingCert') {
          seen.fulcio += 1;
          const creds = body['credentials'] as { oidcIdentityToken: string };
          const pkr = body['publicKeyRequest'] as {
            publicKey: { content: string };
            proofOfPossession: string;
          };
          if (creds.oidcIdentityToken !== GOOD) {
            res
              .writeHead(401)
              .end('{"code":16,"message":"There was an error processing the identity token"}');
            return;
          }
          // Fulcio's check: the key signed the token's subject (the email claim for Google).
          const pop = verify(
            'sha256',
            Buffer.from(ALICE),
            createPublicKey(pkr.publicKey.content),
            Buffer.from(pkr.proofOfPossession, 'base64'),
          );
          if (!pop) {
            res.writeHead(400).end('{"message":"proof of possession"}');
            return;
          }
          const leaf = fx.certify(pkr.publicKey.content, ALICE, 'https://accounts.google.com');
          res.writeHead(201, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({ signedCertificateEmbeddedSct: { chain: { certificates: [leaf, fx.caPem] } } }),
          );
          return;
        }
        if (req.url === '/api/v1/log/entries') {
          seen.rekor += 1;
          const canonical = Buffer.from(json.canonicalize(body)).toString('base64');
          const entry = fx.logEntry(canonical);
          res.writeHead(201, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              ['24296fb24b8ad77a' + 'b'.repeat(48)]: {
                ...entry.Payload,
                verification: { signedEntryTimestamp: entry.SignedEntryTimestamp },
              },
            }),
          );
          return;
        }
        res.writeHead(404).end();
      })();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    t.after(() => new Promise<void>((r) => server.close(() => r())));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    process.env[FULCIO_URL_ENV] = base;
    process.env[REKOR_URL_ENV] = base;
    t.after(() => {
      delete process.env[FULCIO_URL_ENV];
      delete process.env[REKOR_URL_ENV];
      delete process.env[SIGSTORE_POLICY_ENV];
    });

    const registry = await startRegistry(t);
    const { app } = await testApp(t);
    const work = tempDir(t, 'skep-skill-keyless-push-src-');
    const ref = `${registry}/skills/keyless-pushed:1.0.0`;
    const build = await app.inject({
      method: 'POST',
      url: '/api/v1beta/skills/build',
      payload: { path: writeSkill(work, 'keyless-pushed'), tag: ref },
    });
    assert.equal(build.statusCode, 200, build.body);
    const push = (token: string) =>
      app.inject({
        method: 'POST',
        url: '/api/v1beta/skills/push',
        payload: { reference: ref, identity_token: token },
      });

    // A token the Fulcio double refuses: a 400 naming Fulcio's answer, and nothing pushed.
    const refused = await push(
      jwt({ iss: 'https://accounts.google.com', sub: '1', email: 'eve@example.com' }),
    );
    assert.equal(refused.statusCode, 400, refused.body);
    assert.match(
      refused.json().message,
      /^keyless signing: Fulcio at http:\/\/127\.0\.0\.1:\d+\/api\/v2\/signingCert answered HTTP 401/,
    );
    assert.ok(!refused.body.includes('eyJ'), 'the token is not echoed');
    assert.equal((await fetch(`http://${registry}/v2/skills/keyless-pushed/manifests/1.0.0`)).status, 404);
    assert.equal(seen.rekor, 0);

    const pushed = await push(GOOD);
    assert.equal(pushed.statusCode, 204, pushed.body);
    assert.deepEqual(seen, { fulcio: 2, rekor: 1 });
    assert.equal(
      (await app.inject({ method: 'DELETE', url: `/api/v1beta/skills/builds/${encodeURIComponent(ref)}` }))
        .statusCode,
      204,
    );

    // The signature verifies keyless under the user's policy, and the lock records who signed.
    const policy = join(tempDir(t, 'skep-skill-keyless-push-policy-'), 'sigstore-policy.json');
    writeFileSync(
      policy,
      JSON.stringify({
        trusted_root: fx.trustedRootPath,
        identities: [{ signer_identity: ALICE, cert_issuer: 'https://accounts.google.com' }],
      }),
    );
    process.env[SIGSTORE_POLICY_ENV] = policy;
    const project = realpathSync(tempDir(t, 'skep-skill-keyless-push-project-'));
    initGitRepo(project);
    const installed = await app.inject({
      method: 'POST',
      url: '/api/v1beta/skills',
      payload: { name: ref, scope: 'project', project_root: project, clients: ['claude-code'] },
    });
    assert.equal(installed.statusCode, 201, installed.body);
    const entry = (
      parseYaml(readFileSync(join(project, 'skep.lock.yaml'), 'utf8')) as { skills: LockEntry[] }
    ).skills.find((e) => e.name === 'keyless-pushed');
    assert.deepEqual(entry?.provenance, { signerIdentity: ALICE, certIssuer: 'https://accounts.google.com' });
  },
);
