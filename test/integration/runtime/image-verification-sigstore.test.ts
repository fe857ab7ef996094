/**
 * Keyless image verification before a container starts (run-config `image_verification` with
 * `trusted_root`), on real parts: a local OCI registry (Debian docker-registry), Podman's
 * Docker-compatible API pulling from it, and keyless cosign signatures (a leaf certificate from
 * a CA standing in for Fulcio, a Rekor SET from a log key standing in for Rekor) made by the test
 * with a trusted root it writes (`test/helpers/sigstore-fixture.ts`).
 *
 * Proves: a keylessly signed image (either layout: cosign's `.sig` tag with certificate and Rekor
 * annotations, or a v0.3 Sigstore bundle under the referrers tag scheme) runs under `enforce`, by the verified digest, with the
 * certificate identity and issuer in the start result; a policy naming another identity or
 * issuer refuses it under `enforce` and runs it with the reason under `warn`; a signature copied
 * beside another digest (tampered) and an unsigned image are refused under `enforce` before any
 * container exists; a trusted root without an identity policy is refused by name. And the whole
 * chain: a registry entry whose provenance names the keyless signer (`signer_identity`,
 * `cert_issuer`), created with a trusted root under `enforce`, runs and its status names the signer.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { type ApiContext, createContext } from '../../../src/control/app/index.js';
import type { SkepConfig } from '../../../src/config/index.js';
import { DockerRuntime } from '../../../src/dataplane/runtime/docker/docker-runtime.js';
import { LABEL_WORKLOAD } from '../../../src/dataplane/runtime/index.js';
import type { ImageVerificationPolicy, ServerHandle } from '../../../src/dataplane/runtime/index.js';
import { isSkepError } from '../../../src/shared/index.js';
import { OciSession } from '../../../src/skills/oci-client.js';
import { parseOciRef } from '../../../src/skills/oci-ref.js';
import { signatureStore } from '../../../src/skills/signing.js';
import { tempHome } from '../../helpers/home.js';
import { requirePodman, startPodmanService } from '../../helpers/podman.js';
import { requireService } from '../../helpers/services.js';
import { createSigstoreFixture } from '../../helpers/sigstore-fixture.js';
import { waitForStatus } from '../../helpers/wait.js';
import { hasRegistry, tempDir } from '../skills/fixtures.js';
import { signedImagesRegistry } from './signed-images-fixture.js';

const IDENTITY = 'https://github.com/acme/app/.github/workflows/release.yml@refs/tags/v1';
const ISSUER = 'https://token.actions.githubusercontent.com';

test(
  'Sigstore keyless image verification: signed runs; wrong identity/issuer, tampered or unsigned refused under enforce; warn runs',
  { timeout: 600_000 },
  async (t) => {
    if (!requirePodman(t)) return;
    if (!requireService(t, 'docker-registry', hasRegistry(), 'apt-get install docker-registry')) return;
    const fx = createSigstoreFixture();
    t.after(() => fx.close());
    const handles: ServerHandle[] = [];
    const names = [
      'ks-signed',
      'ks-unsigned',
      'ks-tampered',
      'ks-identity',
      'ks-issuer',
      'ks-warn',
      'ks-bundle',
    ];
    const made: { runtime?: DockerRuntime; ctx?: ApiContext } = {};
    t.after(async () => {
      const keepAlive = setInterval(() => undefined, 1000);
      try {
        const c = made.ctx;
        if (c !== undefined) {
          await c.workloads.settled();
          await Promise.all(c.workloads.rows.list().map((r) => c.workloads.deleteNow(r.name)));
          await c.close();
        }
        for (const h of handles) await h.stop();
        for (const name of names) await made.runtime?.removeWorkload(name).catch(() => undefined);
      } finally {
        clearInterval(keepAlive);
      }
    });
    const { registry, image, push, digestOf } = await signedImagesRegistry(t, 'keyless');
    const signedRef = push('keyless/signed');
    const unsignedRef = push('keyless/unsigned');
    const bundledRef = push('keyless/bundled');
    const signedDigest = await digestOf('keyless/signed', '1');
    const unsignedDigest = await digestOf('keyless/unsigned', '1');
    const session = (repo: string) =>
      new OciSession(parseOciRef(`${registry}/${repo}:1`), true, { privateHosts: ['127.0.0.1'] });
    const leaf = fx.leaf({
      identity: IDENTITY,
      issuer: ISSUER,
      repositoryUri: 'https://github.com/acme/app',
    });
    await fx.sign(
      signatureStore(session('keyless/signed')),
      `${registry}/keyless/signed`,
      signedDigest,
      leaf,
    );
    // The other layout: a Sigstore bundle under the referrers tag scheme (cosign --new-bundle-format).
    const bundledDigest = await digestOf('keyless/bundled', '1');
    await fx.signBundle(
      signatureStore(session('keyless/bundled')),
      `${registry}/keyless/bundled`,
      bundledDigest,
      leaf,
    );

    const home = tempHome(t);
    const engine = await startPodmanService(t);
    const runtime = (made.runtime = new DockerRuntime({
      host: engine.host,
      instance: 'kstest1',
      logMaxBytes: 1 << 20,
      logFiles: 1,
      allowPrivileged: false,
    }));
    const policyOf = (
      policy: 'warn' | 'enforce',
      over: Partial<ImageVerificationPolicy> = {},
    ): ImageVerificationPolicy => ({
      policy,
      trusted_root: fx.trustedRootPath,
      signer_identity: IDENTITY,
      cert_issuer: ISSUER,
      repository_uri: 'https://github.com/acme/app',
      ...over,
    });
    const start = (name: string, img: string, imageVerification: ImageVerificationPolicy) =>
      runtime.start({
        name,
        image: img,
        args: ['-e', 'setInterval(() => {}, 1e6)'],
        env: {},
        transport: 'stdio',
        logFile: join(home.dir, `${name}.log`),
        permissionProfile: { network: { outbound: { insecure_allow_all: true } } },
        imageVerification,
      });
    const refusal = (name: string, img: string, policy: ImageVerificationPolicy) =>
      start(name, img, policy).then(
        (h) => {
          handles.push(h);
          return assert.fail(`${name} started under enforce`);
        },
        (err: unknown) => {
          assert.ok(isSkepError(err) && err.code === 'image_verification_failed', String(err));
          return err.message;
        },
      );
    const containersOf = async (name: string) =>
      runtime.docker.listContainers({ all: true, filters: { label: [`${LABEL_WORKLOAD}=${name}`] } });

    // Keyless-signed, identity and issuer as the policy says: runs, by the verified digest.
    const signed = await start('ks-signed', signedRef, policyOf('enforce'));
    handles.push(signed);
    assert.equal(signed.imageVerification?.status, 'verified', signed.imageVerification?.message);
    assert.equal(signed.imageVerification?.digest, signedDigest);
    assert.equal(signed.imageVerification?.signer, IDENTITY);
    assert.equal(signed.imageVerification?.issuer, ISSUER);
    assert.match(signed.imageVerification?.message ?? '', /keyless signature by .* \(issuer https:\/\/token/);
    const inspected = (await runtime.docker.getContainer(signed.id).inspect()) as {
      Config: { Image: string };
    };
    assert.match(inspected.Config.Image, new RegExp(`/keyless/signed@${signedDigest}$`));

    // Signed with a Sigstore bundle stored as an OCI artifact beside the image: runs too.
    const bundled = await start('ks-bundle', bundledRef, policyOf('enforce'));
    handles.push(bundled);
    assert.equal(bundled.imageVerification?.status, 'verified', bundled.imageVerification?.message);
    assert.equal(bundled.imageVerification?.digest, bundledDigest);
    assert.equal(bundled.imageVerification?.signer, IDENTITY);

    // Another identity, another issuer: refused under enforce, before any container exists.
    const wrongIdentity = await refusal(
      'ks-identity',
      signedRef,
      policyOf('enforce', {
        signer_identity: 'https://github.com/evil/app/.github/workflows/x.yml@refs/heads/main',
      }),
    );
    assert.match(
      wrongIdentity,
      /certificate identity is https:\/\/github\.com\/acme\/app.*, not https:\/\/github\.com\/evil/,
    );
    assert.deepEqual(await containersOf('ks-identity'), []);
    const wrongIssuer = await refusal(
      'ks-issuer',
      signedRef,
      policyOf('enforce', { cert_issuer: 'https://accounts.google.com' }),
    );
    assert.match(
      wrongIssuer,
      /issuer is https:\/\/token\.actions\.githubusercontent\.com, not https:\/\/accounts\.google\.com/,
    );

    // Unsigned: refused under enforce.
    const unsigned = await refusal('ks-unsigned', unsignedRef, policyOf('enforce'));
    assert.match(unsigned, /is not signed .*enforce/);
    assert.deepEqual(await containersOf('ks-unsigned'), []);

    // Tampered: the signed image's keyless signature copied beside the unsigned image's digest.
    const sigTag = (d: string) => `${d.replace(':', '-')}.sig`;
    const sigManifest = await fetch(
      `http://${registry}/v2/keyless/signed/manifests/${sigTag(signedDigest)}`,
      {
        headers: { accept: 'application/vnd.oci.image.manifest.v1+json' },
      },
    ).then((r) => r.text());
    const copied = JSON.parse(sigManifest) as { config: { digest: string }; layers: { digest: string }[] };
    for (const d of [copied.config.digest, ...copied.layers.map((l) => l.digest)]) {
      const mount = await fetch(
        `http://${registry}/v2/keyless/unsigned/blobs/uploads/?mount=${d}&from=keyless/signed`,
        { method: 'POST' },
      );
      assert.equal(mount.status, 201, `mount ${d}`);
    }
    const put = await fetch(`http://${registry}/v2/keyless/unsigned/manifests/${sigTag(unsignedDigest)}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' },
      body: sigManifest,
    });
    assert.equal(put.status, 201);
    const tampered = await refusal('ks-tampered', unsignedRef, policyOf('enforce'));
    assert.match(tampered, /names another digest/);
    assert.deepEqual(await containersOf('ks-tampered'), []);

    // Under warn, a signature by another identity runs, and the result says why it is not verified.
    const warned = await start(
      'ks-warn',
      signedRef,
      policyOf('warn', { cert_issuer: 'https://accounts.google.com' }),
    );
    handles.push(warned);
    assert.equal(warned.imageVerification?.status, 'invalid');
    assert.equal(warned.imageVerification?.policy, 'warn');
    assert.match(
      warned.imageVerification?.message ?? '',
      /signature verification failed: .*not https:\/\/accounts\.google\.com/,
    );
    assert.equal((await containersOf('ks-warn')).length, 1);

    // A trusted root alone would let any certificate of its CA pass: refused by name.
    const bare = await start('ks-identity', signedRef, {
      policy: 'warn',
      trusted_root: fx.trustedRootPath,
    }).then(
      () => assert.fail('a trusted root without an identity policy was accepted'),
      (err: unknown) => err as Error,
    );
    assert.ok(isSkepError(bare) && bare.code === 'invalid_config', String(bare));
    assert.match(bare.message, /image_verification: cert_issuer is required with trusted_root/);

    // The whole chain: a registry entry whose provenance names the keyless signer → the
    // workload's image_verification (enforce, with the trusted root given at create) → the
    // runner → the status context names the certificate identity.
    const file = join(tempDir(t, 'skep-iv-entry-'), 'registry.json');
    const ext = {
      status: 'active',
      tier: 'Community',
      tools: ['echo'],
      args: ['/app/stdio-server.cjs'],
      provenance: {
        signer_identity: IDENTITY,
        cert_issuer: ISSUER,
        repository_uri: 'https://github.com/acme/app',
      },
    };
    writeFileSync(
      file,
      JSON.stringify({
        version: '1.0.0',
        meta: { last_updated: '2026-01-01T00:00:00Z' },
        data: {
          servers: [
            {
              name: 'io.example.keyless/keyless-server',
              description: 'a keyless-signed image',
              version: '1.0.0',
              packages: [{ registryType: 'oci', identifier: signedRef, transport: { type: 'stdio' } }],
              _meta: {
                'io.modelcontextprotocol.registry/publisher-provided': {
                  'io.github.stacklok': { [signedRef]: ext },
                },
              },
            },
          ],
        },
      }),
    );
    const config: SkepConfig = {
      ...home.config,
      runtime: { type: 'docker', docker_host: engine.host, node_image: image, allow_privileged: false },
    };
    const ctx = (made.ctx = createContext(config, { env: home.env }));
    await ctx.registry.configure('default', { local_path: file });
    await ctx.workloads.create(
      { name: 'ks-reg', registry: 'default', server: 'io.example.keyless/keyless-server' },
      { imageVerification: { policy: 'enforce', trusted_root: fx.trustedRootPath } },
    );
    await waitForStatus(ctx, 'ks-reg', 'running', 180_000);
    assert.match(
      ctx.workloads.status('ks-reg').status_context ?? '',
      /verified: keyless signature by https:\/\/github\.com\/acme\/app\/.* \(issuer https:\/\/token\.actions\.githubusercontent\.com\)/,
    );
  },
);
