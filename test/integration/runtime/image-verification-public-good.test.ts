/**
 * The built-in trusted root `sigstore-public-good` (Sigstore's public-good Fulcio and Rekor),
 * obtained through TUF (`@sigstore/tuf`), without the network: the public TUF repository is never
 * reached from a test. A loopback HTTP server stands in for a mirror of it
 * (`SKEP_SIGSTORE_TUF_URL`) and answers 404 to every request, so the TUF refresh fails as it
 * does offline (the seeded TUF root has expired and no newer one can be fetched), and the root
 * falls back to the newest copy at hand. The TUF cache goes under the test's temporary home.
 *
 * Proves: the named root loads offline from the `seeds.json` shipped in `@sigstore/tuf` and holds the
 * public-good Fulcio CA (subject O=sigstore.dev, CN=sigstore) and Rekor log (its key id and base
 * URL), with the reason TUF could not refresh it; a copy that TUF wrote to the cache earlier is
 * preferred to the shipped copy; a misspelt name and a bad mirror URL are refused by name; a skills
 * Sigstore policy file may name the root too; and, on real
 * parts (local registry, Podman), an image keylessly signed with the test's own CA is refused
 * under `enforce` when the policy names the public-good root (its chain does not lead there) and
 * runs under `warn` with the reason, which says which copy of the root was used.
 *
 * Not tested: fetching from the public TUF repository and verifying a signature made by the
 * public-good instance (both need the network).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { DockerRuntime } from '../../../src/dataplane/runtime/docker/docker-runtime.js';
import { LABEL_WORKLOAD } from '../../../src/dataplane/runtime/index.js';
import type { ImageVerificationPolicy, ServerHandle } from '../../../src/dataplane/runtime/index.js';
import {
  loadPublicGoodTrustedRoot,
  PUBLIC_GOOD_TRUSTED_ROOT,
  resolveTrustedRoot,
  TUF_URL_ENV,
} from '../../../src/protocol/sigstore-trusted-root.js';
import { isSkepError } from '../../../src/shared/index.js';
import { OciSession } from '../../../src/skills/oci-client.js';
import { parseOciRef } from '../../../src/skills/oci-ref.js';
import type { SkillsContext } from '../../../src/skills/context.js';
import { SIGSTORE_POLICY_ENV, signatureStore, skillTrust } from '../../../src/skills/signing.js';
import { tempHome } from '../../helpers/home.js';
import { requirePodman, startPodmanService } from '../../helpers/podman.js';
import { requireService } from '../../helpers/services.js';
import { createSigstoreFixture } from '../../helpers/sigstore-fixture.js';
import { hasRegistry, tempDir } from '../skills/fixtures.js';
import { signedImagesRegistry } from './signed-images-fixture.js';

const IDENTITY = 'https://github.com/acme/app/.github/workflows/release.yml@refs/tags/v1';
const ISSUER = 'https://token.actions.githubusercontent.com';
/** Rekor's public-good log (rekor.sigstore.dev): the SHA-256 of its public key, its log id. */
const REKOR_LOG_ID = 'c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d';

/** A TUF "mirror" on loopback that has nothing: every request is answered 404 and recorded. */
async function emptyMirror(t: TestContext): Promise<{ url: string; requests: string[] }> {
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    requests.push(req.url ?? '');
    res.statusCode = 404;
    res.end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

test('sigstore-public-good loads offline from the copy shipped in @sigstore/tuf: the public-good Fulcio CA and Rekor log', async (t) => {
  const home = tempHome(t);
  const mirror = await emptyMirror(t);
  const cacheDir = home.config.paths.cacheDir;
  const env = { ...home.env, [TUF_URL_ENV]: mirror.url };

  const root = await resolveTrustedRoot(PUBLIC_GOOD_TRUSTED_ROOT, { cacheDir, env });
  // TUF asked the mirror (never the public repository) and could not refresh.
  assert.ok(mirror.requests.length > 0, 'the TUF client asked the mirror');
  assert.match(
    root.source,
    /^sigstore-public-good \(the copy shipped with Skep in @sigstore\/tuf's seeds\)$/,
  );
  assert.match(
    root.fallback ?? '',
    /TUF repository http:\/\/127\.0\.0\.1:\d+ could not be refreshed \(.*404/,
  );
  // The TUF cache is under the home's cache folder, one folder per repository.
  const repoDir = join(cacheDir, 'sigstore-tuf', encodeURIComponent(new URL(mirror.url).host));
  assert.ok(existsSync(join(repoDir, 'root.json')), `TUF cache in ${repoDir}`);

  // Fulcio: a certificate authority named O=sigstore.dev, CN=sigstore at fulcio.sigstore.dev,
  // valid today (no end date), whose chain ends in a self-signed root of the same name.
  const now = new Date();
  const current = root.trust.certificateAuthorities.filter(
    (ca) => ca.validFor.start <= now && now <= ca.validFor.end,
  );
  assert.ok(current.length >= 1, 'a current Fulcio CA');
  const chain = current[0]!.certChain.map((c) => new X509Certificate(c.root.toDER()));
  const top = chain[chain.length - 1]!;
  assert.equal(top.subject, 'O=sigstore.dev\nCN=sigstore');
  assert.equal(top.issuer, top.subject);
  // Rekor: the public-good log by its key id, at rekor.sigstore.dev.
  const rekor = root.trust.tlogs.find((log) => log.logID.toString('hex') === REKOR_LOG_ID);
  assert.ok(rekor, `the Rekor log ${REKOR_LOG_ID}`);
  assert.equal(rekor.baseURL, 'https://rekor.sigstore.dev');
  assert.equal(rekor.publicKey.asymmetricKeyType, 'ec');
});

test('sigstore-public-good prefers the copy TUF wrote to its cache over the shipped copy', async (t) => {
  const home = tempHome(t);
  const mirror = await emptyMirror(t);
  const fx = createSigstoreFixture();
  t.after(() => fx.close());
  const cacheDir = home.config.paths.cacheDir;
  // What an earlier, successful refresh leaves: the verified target in the repository's cache.
  const targets = join(cacheDir, 'sigstore-tuf', encodeURIComponent(new URL(mirror.url).host), 'targets');
  mkdirSync(targets, { recursive: true });
  writeFileSync(join(targets, 'trusted_root.json'), fx.trustedRootJson);
  const root = await loadPublicGoodTrustedRoot({ cacheDir, env: { ...home.env, [TUF_URL_ENV]: mirror.url } });
  assert.match(root.source, /the copy fetched through TUF into .*trusted_root\.json \(\d{4}-/);
  assert.ok(
    root.trust.tlogs.every((log) => log.logID.toString('hex') !== REKOR_LOG_ID),
    'the cached copy, not the seed',
  );
});

test('trusted_root: a misspelt built-in name and a bad TUF mirror URL are refused by name', async (t) => {
  const home = tempHome(t);
  const cacheDir = home.config.paths.cacheDir;
  await assert.rejects(
    resolveTrustedRoot('sigstore-public', { cacheDir, env: home.env }),
    /cannot read ".*sigstore-public": ENOENT \(no such file, and not a built-in trusted root: the one built-in name is sigstore-public-good\)/,
  );
  // A path stays a path: no hint about names.
  await assert.rejects(
    resolveTrustedRoot('./missing/trusted_root.json', { cacheDir, env: home.env }),
    (err: Error) => /ENOENT$/.test(err.message),
  );
  await assert.rejects(
    resolveTrustedRoot(PUBLIC_GOOD_TRUSTED_ROOT, {
      cacheDir,
      env: { ...home.env, [TUF_URL_ENV]: 'http://tuf.example.com' },
    }),
    /trusted root sigstore-public-good: SKEP_SIGSTORE_TUF_URL: use https \(or http to loopback\)/,
  );
  assert.equal(existsSync(join(cacheDir, 'sigstore-tuf')), false, 'nothing fetched for a refused URL');
});

test('skills Sigstore policy: trusted_root sigstore-public-good is the public-good root; a bad mirror is refused by name', async (t) => {
  const home = tempHome(t);
  const mirror = await emptyMirror(t);
  const policy = join(tempDir(t, 'skep-pg-policy-'), 'sigstore-policy.json');
  writeFileSync(
    policy,
    JSON.stringify({
      trusted_root: PUBLIC_GOOD_TRUSTED_ROOT,
      identities: [{ signer_identity: IDENTITY, cert_issuer: ISSUER }],
    }),
  );
  // Only the environment is read to build the trust policy.
  const ctxOf = (env: NodeJS.ProcessEnv) => ({ env: () => env }) as unknown as SkillsContext;
  const env = { ...home.env, [SIGSTORE_POLICY_ENV]: policy, [TUF_URL_ENV]: mirror.url };
  const trust = await skillTrust(ctxOf(env));
  assert.ok(trust.keyless, 'a keyless check');
  assert.ok(
    trust.root?.tlogs.some((log) => log.logID.toString('hex') === REKOR_LOG_ID),
    'the public-good Rekor log is trusted',
  );
  assert.ok(existsSync(join(home.config.paths.cacheDir, 'sigstore-tuf')), 'TUF cache under the home');
  await assert.rejects(
    skillTrust(ctxOf({ ...env, [TUF_URL_ENV]: 'not a url' })),
    /Sigstore policy .*: trusted root sigstore-public-good: SKEP_SIGSTORE_TUF_URL: not a URL/,
  );
});

test(
  'sigstore-public-good: an image signed by another CA is refused under enforce and runs with the reason under warn',
  { timeout: 600_000 },
  async (t) => {
    if (!requirePodman(t)) return;
    if (!requireService(t, 'docker-registry', hasRegistry(), 'apt-get install docker-registry')) return;
    const fx = createSigstoreFixture();
    t.after(() => fx.close());
    const home = tempHome(t);
    const mirror = await emptyMirror(t);
    // The runtime checks images with the process environment (a runner's is inherited from
    // `skep serve`): the TUF cache under this test's home, the loopback mirror.
    const saved = { home: process.env['SKEP_HOME'], url: process.env[TUF_URL_ENV] };
    process.env['SKEP_HOME'] = home.dir;
    process.env[TUF_URL_ENV] = mirror.url;
    t.after(() => {
      for (const [name, value] of [
        ['SKEP_HOME', saved.home],
        [TUF_URL_ENV, saved.url],
      ] as const)
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
    });
    const handles: ServerHandle[] = [];
    const made: { runtime?: DockerRuntime } = {};
    t.after(async () => {
      for (const h of handles) await h.stop();
      for (const name of ['pg-enforce', 'pg-warn', 'pg-name', 'pg-own'])
        await made.runtime?.removeWorkload(name).catch(() => undefined);
    });
    const { registry, push, digestOf } = await signedImagesRegistry(t, 'publicgood');
    const signedRef = push('publicgood/signed');
    const digest = await digestOf('publicgood/signed', '1');
    const session = new OciSession(parseOciRef(`${registry}/publicgood/signed:1`), true, {
      privateHosts: ['127.0.0.1'],
    });
    const leaf = fx.leaf({ identity: IDENTITY, issuer: ISSUER });
    await fx.sign(signatureStore(session), `${registry}/publicgood/signed`, digest, leaf);

    const engine = await startPodmanService(t);
    const runtime = (made.runtime = new DockerRuntime({
      host: engine.host,
      instance: 'pgtest1',
      logMaxBytes: 1 << 20,
      logFiles: 1,
      allowPrivileged: false,
    }));
    const policyOf = (policy: 'warn' | 'enforce', trustedRoot: string): ImageVerificationPolicy => ({
      policy,
      trusted_root: trustedRoot,
      signer_identity: IDENTITY,
      cert_issuer: ISSUER,
    });
    const start = (name: string, imageVerification: ImageVerificationPolicy) =>
      runtime.start({
        name,
        image: signedRef,
        args: ['-e', 'setInterval(() => {}, 1e6)'],
        env: {},
        transport: 'stdio',
        logFile: join(home.dir, `${name}.log`),
        permissionProfile: { network: { outbound: { insecure_allow_all: true } } },
        imageVerification,
      });
    const containersOf = async (name: string) =>
      runtime.docker.listContainers({ all: true, filters: { label: [`${LABEL_WORKLOAD}=${name}`] } });

    // Under enforce: refused before any container exists; the reason is the chain, and says
    // which copy of the public-good root it was checked against.
    const refused = await start('pg-enforce', policyOf('enforce', PUBLIC_GOOD_TRUSTED_ROOT)).then(
      (h) => {
        handles.push(h);
        return assert.fail('an image signed by another CA started under enforce');
      },
      (err: unknown) => {
        assert.ok(isSkepError(err) && err.code === 'image_verification_failed', String(err));
        return err.message;
      },
    );
    assert.match(refused, /signature verification failed: keyless signature does not verify/);
    assert.match(refused, /the trusted root is the copy shipped with Skep/);
    assert.match(refused, /image_verification policy: enforce/);
    assert.deepEqual(await containersOf('pg-enforce'), []);

    // Under warn: runs, and the result says why it is not verified.
    const warned = await start('pg-warn', policyOf('warn', PUBLIC_GOOD_TRUSTED_ROOT));
    handles.push(warned);
    assert.equal(warned.imageVerification?.status, 'invalid', warned.imageVerification?.message);
    assert.equal(warned.imageVerification?.policy, 'warn');
    assert.match(warned.imageVerification?.message ?? '', /keyless signature does not verify/);
    assert.equal((await containersOf('pg-warn')).length, 1);

    // A misspelt name is refused by name, whatever the policy.
    const misspelt = await start('pg-name', policyOf('warn', 'sigstore-publicgood')).then(
      () => assert.fail('a misspelt trusted root was accepted'),
      (err: unknown) => err as Error,
    );
    assert.ok(isSkepError(misspelt) && misspelt.code === 'invalid_config', String(misspelt));
    assert.match(
      misspelt.message,
      /image_verification\.trusted_root: cannot read ".*sigstore-publicgood": ENOENT \(no such file, and not a built-in trusted root: the one built-in name is sigstore-public-good\)/,
    );
    // The same image against the test's own root verifies: the refusals were the root's doing.
    const own = await start('pg-own', policyOf('enforce', fx.trustedRootPath));
    handles.push(own);
    assert.equal(own.imageVerification?.status, 'verified', own.imageVerification?.message);
  },
);
