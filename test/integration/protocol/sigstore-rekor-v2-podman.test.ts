/**
 * Rekor v2 + RFC 3161 end to end, through the real image-verification path before a container
 * starts: a local OCI registry (Debian docker-registry), Podman's Docker-compatible API pulling
 * from it, and v0.3 Sigstore bundles stored beside the images under the referrers tag scheme,
 * made by the test (`test/helpers/sigstore-v2-fixture.ts`: a Rekor v2 entry with a signed
 * checkpoint, an RFC 3161 timestamp from a TSA of the trusted root the test writes).
 *
 * Proves: an image whose bundle has a Rekor v2 entry and a trusted timestamp runs under
 * `enforce`, by the verified digest, with the identity and issuer in the start result; the same
 * without the timestamp is refused before any container exists.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
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
import { createSigstoreV2Fixture } from '../../helpers/sigstore-v2-fixture.js';
import { signedImagesRegistry } from '../runtime/signed-images-fixture.js';
import { hasRegistry } from '../skills/fixtures.js';

const IDENTITY = 'https://github.com/acme/app/.github/workflows/release.yml@refs/tags/v2';
const ISSUER = 'https://token.actions.githubusercontent.com';

test(
  'Rekor v2 + RFC 3161 image verification: a bundle with a v2 entry and a trusted timestamp runs under enforce; without the timestamp refused',
  { timeout: 600_000 },
  async (t) => {
    if (!requirePodman(t)) return;
    if (!requireService(t, 'docker-registry', hasRegistry(), 'apt-get install docker-registry')) return;
    const fx = createSigstoreV2Fixture();
    t.after(() => fx.close());
    const names = ['kv2-signed', 'kv2-notsa'];
    const handles: ServerHandle[] = [];
    const made: { runtime?: DockerRuntime } = {};
    t.after(async () => {
      for (const h of handles) await h.stop();
      for (const name of names) await made.runtime?.removeWorkload(name).catch(() => undefined);
    });
    const { registry, push, digestOf } = await signedImagesRegistry(t, 'rekorv2');
    const session = (repo: string) =>
      new OciSession(parseOciRef(`${registry}/${repo}:1`), true, { privateHosts: ['127.0.0.1'] });
    const leaf = fx.base.leaf({ identity: IDENTITY, issuer: ISSUER });
    const signedRef = push('rekorv2/signed');
    const signedDigest = await digestOf('rekorv2/signed', '1');
    await fx.storeBundle(
      signatureStore(session('rekorv2/signed')),
      signedDigest,
      fx.bundle(leaf, signedDigest),
    );
    const noTsaRef = push('rekorv2/notsa');
    const noTsaDigest = await digestOf('rekorv2/notsa', '1');
    await fx.storeBundle(
      signatureStore(session('rekorv2/notsa')),
      noTsaDigest,
      fx.bundle(leaf, noTsaDigest, { tsa: 'none' }),
    );

    const home = tempHome(t);
    const engine = await startPodmanService(t);
    const runtime = (made.runtime = new DockerRuntime({
      host: engine.host,
      instance: 'kv2test',
      logMaxBytes: 1 << 20,
      logFiles: 1,
      allowPrivileged: false,
    }));
    const policy: ImageVerificationPolicy = {
      policy: 'enforce',
      trusted_root: fx.trustedRootPath,
      signer_identity: IDENTITY,
      cert_issuer: ISSUER,
    };
    const start = (name: string, image: string) =>
      runtime.start({
        name,
        image,
        args: ['-e', 'setInterval(() => {}, 1e6)'],
        env: {},
        transport: 'stdio',
        logFile: join(home.dir, `${name}.log`),
        permissionProfile: { network: { outbound: { insecure_allow_all: true } } },
        imageVerification: policy,
      });

    const signed = await start('kv2-signed', signedRef);
    handles.push(signed);
    assert.equal(signed.imageVerification?.status, 'verified', signed.imageVerification?.message);
    assert.equal(signed.imageVerification?.digest, signedDigest);
    assert.equal(signed.imageVerification?.signer, IDENTITY);
    assert.equal(signed.imageVerification?.issuer, ISSUER);

    const refused = await start('kv2-notsa', noTsaRef).then(
      (h) => {
        handles.push(h);
        return assert.fail('an image whose Rekor v2 entry has no timestamp started under enforce');
      },
      (err: unknown) => {
        assert.ok(isSkepError(err) && err.code === 'image_verification_failed', String(err));
        return err.message;
      },
    );
    assert.match(refused, /a Rekor v2 entry records no signing time/);
    assert.deepEqual(
      await runtime.docker.listContainers({ all: true, filters: { label: [`${LABEL_WORKLOAD}=kv2-notsa`] } }),
      [],
    );
  },
);
