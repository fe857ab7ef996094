/**
 * Image verification before a container starts (run-config `image_verification`), on real
 * parts: a local OCI registry (Debian docker-registry), Podman's Docker-compatible API pulling
 * from it, and cosign simple-signing signatures made with a key pair generated here.
 *
 * Proves: a signed image runs under `enforce`, by the digest that was verified, with the signer
 * in the start result; an unsigned image and one carrying a signature copied from another digest
 * (tampered) are refused under `enforce` before any container exists; a signature by an
 * untrusted key is refused; under `warn` the unsigned image runs and the result says why it is
 * not verified.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { type ApiContext, createContext } from '../../../src/control/app/index.js';
import type { SkepConfig } from '../../../src/config/index.js';
import { signArtifact } from '../../../src/protocol/oci-signature.js';
import { DockerRuntime } from '../../../src/dataplane/runtime/docker/docker-runtime.js';
import { LABEL_WORKLOAD } from '../../../src/dataplane/runtime/index.js';
import type { ServerHandle } from '../../../src/dataplane/runtime/index.js';
import { isSkepError } from '../../../src/shared/index.js';
import { OciSession } from '../../../src/skills/oci-client.js';
import { parseOciRef } from '../../../src/skills/oci-ref.js';
import { signatureStore } from '../../../src/skills/signing.js';
import { tempHome } from '../../helpers/home.js';
import { requirePodman, startPodmanService } from '../../helpers/podman.js';
import { requireService } from '../../helpers/services.js';
import { waitForStatus } from '../../helpers/wait.js';
import { hasRegistry, tempDir } from '../skills/fixtures.js';
import { signedImagesRegistry } from './signed-images-fixture.js';

function pem(): { priv: ReturnType<typeof generateKeyPairSync>['privateKey']; pub: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return { priv: privateKey, pub: publicKey.export({ type: 'spki', format: 'pem' }) as string };
}

test(
  'image verification: signed runs by digest; unsigned or tampered refused under enforce; warn runs',
  { timeout: 600_000 },
  async (t) => {
    if (!requirePodman(t)) return;
    if (!requireService(t, 'docker-registry', hasRegistry(), 'apt-get install docker-registry')) return;
    const handles: ServerHandle[] = [];
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
        for (const name of ['iv-signed', 'iv-unsigned', 'iv-warn', 'iv-tampered', 'iv-untrusted'])
          await made.runtime?.removeWorkload(name).catch(() => undefined);
      } finally {
        clearInterval(keepAlive);
      }
    });
    const { registry, image, push, digestOf } = await signedImagesRegistry(t, 'test');
    const signedRef = push('test/signed');
    const unsignedRef = push('test/unsigned');
    const untrustedRef = push('test/untrusted');
    const alice = pem();
    const mallory = pem();
    const sign = async (repo: string, digest: string, key: typeof alice.priv) => {
      const session = new OciSession(parseOciRef(`${registry}/${repo}:1`), true, {
        privateHosts: ['127.0.0.1'],
      });
      await signArtifact(signatureStore(session), `${registry}/${repo}`, digest, key);
    };
    const signedDigest = await digestOf('test/signed', '1');
    await sign('test/signed', signedDigest, alice.priv);
    await sign('test/untrusted', await digestOf('test/untrusted', '1'), mallory.priv);

    const home = tempHome(t);
    const engine = await startPodmanService(t);
    const runtime = (made.runtime = new DockerRuntime({
      host: engine.host,
      instance: 'ivtest1',
      logMaxBytes: 1 << 20,
      logFiles: 1,
      allowPrivileged: false,
    }));
    const start = (name: string, img: string, policy: 'warn' | 'enforce') =>
      runtime.start({
        name,
        image: img,
        args: ['-e', 'setInterval(() => {}, 1e6)'],
        env: {},
        transport: 'stdio',
        logFile: join(home.dir, `${name}.log`),
        permissionProfile: { network: { outbound: { insecure_allow_all: true } } },
        imageVerification: { policy, public_keys: [alice.pub] },
      });
    const containersOf = async (name: string) =>
      runtime.docker.listContainers({ all: true, filters: { label: [`${LABEL_WORKLOAD}=${name}`] } });

    // Signed by the trusted key: runs, by the verified digest.
    const signed = await start('iv-signed', signedRef, 'enforce');
    handles.push(signed);
    assert.equal(signed.imageVerification?.status, 'verified', signed.imageVerification?.message);
    assert.equal(signed.imageVerification?.digest, signedDigest);
    assert.match(signed.imageVerification?.signer ?? '', /^sha256:[0-9a-f]{64}$/);
    const inspected = (await runtime.docker.getContainer(signed.id).inspect()) as {
      Config: { Image: string };
    };
    // Podman names a digest it already holds (an earlier run's registry port) by its first name.
    assert.match(inspected.Config.Image, new RegExp(`/test/signed@${signedDigest}$`));

    // Unsigned under enforce: refused before anything is created.
    const refused = await start('iv-unsigned', unsignedRef, 'enforce').then(
      () => assert.fail('an unsigned image started under enforce'),
      (err: unknown) => err,
    );
    assert.ok(isSkepError(refused) && refused.code === 'image_verification_failed', String(refused));
    assert.match((refused as Error).message, /is not signed .*enforce/);
    assert.deepEqual(await containersOf('iv-unsigned'), []);

    // Signed by a key that is not trusted: refused.
    const untrusted = await start('iv-untrusted', untrustedRef, 'enforce').then(
      () => assert.fail('an image signed by an untrusted key started under enforce'),
      (err: unknown) => err as Error,
    );
    assert.match(untrusted.message, /no signature verifies with a trusted public key/);

    // Tampered: the signed image's signature copied beside the unsigned image's digest.
    const unsignedDigest = await digestOf('test/unsigned', '1');
    const sigManifest = await fetch(
      `http://${registry}/v2/test/signed/manifests/${signedDigest.replace(':', '-')}.sig`,
      { headers: { accept: 'application/vnd.oci.image.manifest.v1+json' } },
    ).then((r) => r.text());
    const copied = JSON.parse(sigManifest) as { config: { digest: string }; layers: { digest: string }[] };
    for (const d of [copied.config.digest, ...copied.layers.map((l) => l.digest)]) {
      const mount = await fetch(
        `http://${registry}/v2/test/unsigned/blobs/uploads/?mount=${d}&from=test/signed`,
        { method: 'POST' },
      );
      assert.equal(mount.status, 201, `mount ${d}`);
    }
    const put = await fetch(
      `http://${registry}/v2/test/unsigned/manifests/${unsignedDigest.replace(':', '-')}.sig`,
      {
        method: 'PUT',
        headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' },
        body: sigManifest,
      },
    );
    assert.equal(put.status, 201);
    assert.notEqual(unsignedDigest, signedDigest);
    const tampered = await start('iv-tampered', unsignedRef, 'enforce').then(
      () => assert.fail('a tampered image started under enforce'),
      (err: unknown) => err as Error,
    );
    assert.match(tampered.message, /names another digest/);
    assert.deepEqual(await containersOf('iv-tampered'), []);

    // Under warn, an image that does not verify runs, and the result says why.
    const warned = await start('iv-warn', untrustedRef, 'warn');
    handles.push(warned);
    assert.equal(warned.imageVerification?.status, 'invalid');
    assert.equal(warned.imageVerification?.policy, 'warn');
    assert.match(warned.imageVerification?.message ?? '', /signature verification failed/);
    assert.equal((await containersOf('iv-warn')).length, 1);

    // The whole chain: a registry entry whose provenance carries the key → the workload's
    // image_verification (warn) → the runner → the status context names the signer.
    const file = join(tempDir(t, 'skep-iv-entry-'), 'registry.json');
    const identifier = signedRef;
    const ext = {
      status: 'active',
      tier: 'Community',
      tools: ['echo'],
      args: ['/app/stdio-server.cjs'],
      provenance: { public_key: alice.pub },
    };
    writeFileSync(
      file,
      JSON.stringify({
        version: '1.0.0',
        meta: { last_updated: '2026-01-01T00:00:00Z' },
        data: {
          servers: [
            {
              name: 'io.example.signed/signed-server',
              description: 'a signed image',
              version: '1.0.0',
              packages: [{ registryType: 'oci', identifier, transport: { type: 'stdio' } }],
              _meta: {
                'io.modelcontextprotocol.registry/publisher-provided': {
                  'io.github.stacklok': { [identifier]: ext },
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
    await ctx.workloads.create({
      name: 'iv-reg',
      registry: 'default',
      server: 'io.example.signed/signed-server',
    });
    await waitForStatus(ctx, 'iv-reg', 'running', 180_000);
    const status = ctx.workloads.status('iv-reg');
    assert.match(
      status.status_context ?? '',
      new RegExp(`verified: signed by ${signed.imageVerification?.signer}`),
    );
  },
);
