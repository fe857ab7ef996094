/**
 * The image check against a registry that needs a login (a real docker-registry with htpasswd
 * authentication): the signature lookup uses the credentials the engine's pull would use, found
 * by containers-auth.json(5)'s search (`REGISTRY_AUTH_FILE`, then the user's files, down to
 * Docker's `config.json`). Refused credentials and missing ones are told apart, and the message
 * names the file, never the password.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { verifyImage } from '../../../src/dataplane/runtime/docker/image-verification.js';
import { sha256, signArtifact } from '../../../src/protocol/oci-signature.js';
import { isSkepError } from '../../../src/shared/index.js';
import { OciSession } from '../../../src/skills/oci-client.js';
import { parseOciRef } from '../../../src/skills/oci-ref.js';
import { signatureStore } from '../../../src/skills/signing.js';
import { requireService } from '../../helpers/services.js';
import { hasRegistry, tempDir } from '../skills/fixtures.js';
import { REGISTRY_PASSWORD, REGISTRY_USER, startAuthRegistry, writeAuthFile } from './auth-registry.js';

/** A one-layer image pushed with the login; its manifest digest. */
async function pushImage(session: OciSession): Promise<string> {
  const blob = async (data: Buffer) => {
    const digest = sha256(data);
    await session.putBlob(data, digest);
    return { digest, size: data.length };
  };
  const config = await blob(Buffer.from('{"architecture":"amd64","os":"linux"}'));
  const layer = await blob(Buffer.from('not really a layer'));
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
      layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...layer }],
    }),
  );
  await session.putManifest('1', manifest, 'application/vnd.oci.image.manifest.v1+json');
  return sha256(manifest);
}

test(
  'private registry: the image check logs in with the credentials the pull uses',
  { timeout: 120_000 },
  async (t) => {
    if (!requireService(t, 'docker-registry', hasRegistry(), 'apt-get install docker-registry')) return;
    const registry = await startAuthRegistry(t);
    const dir = tempDir(t, 'skep-iv-login-');
    const image = `${registry}/test/private:1`;

    // Without a login the registry answers nothing.
    const anonymous = await fetch(`http://${registry}/v2/test/private/manifests/1`);
    assert.equal(anonymous.status, 401);
    assert.match(anonymous.headers.get('www-authenticate') ?? '', /^Basic realm=/);

    const session = new OciSession(parseOciRef(image), true, {
      privateHosts: ['127.0.0.1'],
      credentials: async () => ({ username: REGISTRY_USER, password: REGISTRY_PASSWORD }),
    });
    const digest = await pushImage(session);
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    await signArtifact(signatureStore(session), `${registry}/test/private`, digest, privateKey);
    const policy = {
      policy: 'enforce' as const,
      public_keys: [publicKey.export({ type: 'spki', format: 'pem' }) as string],
    };
    const home = (name: string) => {
      const path = join(dir, name);
      mkdirSync(path);
      return path;
    };

    // Podman's override file (REGISTRY_AUTH_FILE, what `podman login --authfile` writes).
    const viaOverride = await verifyImage(image, policy, {
      env: { HOME: home('override'), REGISTRY_AUTH_FILE: writeAuthFile(dir, registry) },
    });
    assert.equal(viaOverride.result.status, 'verified', viaOverride.result.message);
    assert.equal(viaOverride.image, `${registry}/test/private@${digest}`);

    // The end of the search: Docker's config.json (`docker login`), here through $DOCKER_CONFIG.
    const dockerDir = home('docker');
    writeFileSync(
      join(dockerDir, 'config.json'),
      JSON.stringify({
        auths: {
          [`https://${registry}`]: {
            auth: Buffer.from(`${REGISTRY_USER}:${REGISTRY_PASSWORD}`).toString('base64'),
          },
        },
      }),
    );
    const viaDocker = await verifyImage(image, policy, {
      env: { HOME: home('nothing-here'), XDG_RUNTIME_DIR: home('runtime'), DOCKER_CONFIG: dockerDir },
    });
    assert.equal(viaDocker.result.status, 'verified', viaDocker.result.message);

    // A wrong password: refused, naming the file the credentials came from, not the password.
    const wrongFile = writeAuthFile(dir, registry, 'not-the-password');
    const wrong = await verifyImage(image, policy, {
      env: { HOME: home('wrong'), REGISTRY_AUTH_FILE: wrongFile },
    }).then(
      () => assert.fail('verified with a wrong password'),
      (err: unknown) => err,
    );
    assert.ok(isSkepError(wrong) && wrong.code === 'image_verification_failed', String(wrong));
    assert.match(wrong.message, /HTTP 401/);
    assert.ok(
      wrong.message.includes(`the registry refused the credentials from ${wrongFile}`),
      wrong.message,
    );
    assert.ok(!wrong.message.includes('not-the-password'));

    // No login anywhere: says where it looked and how to log in.
    const none = home('none');
    const missing = await verifyImage(image, policy, {
      env: { HOME: none, XDG_RUNTIME_DIR: none },
    }).then(
      () => assert.fail('verified without credentials'),
      (err: unknown) => err as Error,
    );
    assert.match(missing.message, /no credentials for this registry in .*; log in with podman login/);
    assert.ok(missing.message.includes(join(none, 'containers', 'auth.json')), missing.message);

    // Under warn the same refusal runs unverified, and says why.
    const warned = await verifyImage(
      image,
      { ...policy, policy: 'warn' },
      { env: { HOME: none, XDG_RUNTIME_DIR: none } },
    );
    assert.equal(warned.result.status, 'unverifiable');
    assert.equal(warned.image, image);
  },
);
