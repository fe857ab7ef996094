/**
 * What the image-verification tests share: a local OCI registry (Debian docker-registry) that
 * Podman pulls from over plain HTTP (a registries.conf for this test only), images pushed to it
 * under repositories of their own (each with its own content, so its own digest) and removed
 * from the engine so that a start must pull them, and the digest the registry gives a tag.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { testImage } from '../../helpers/podman.js';
import { startRegistry, tempDir } from '../skills/fixtures.js';

export interface SignedImagesRegistry {
  /** `127.0.0.1:<port>` */
  registry: string;
  /** The local test image the pushed images are built on. */
  image: string;
  /** Pushes a fresh image as `<registry>/<repo>:1` and returns that reference. */
  push(repo: string): string;
  /** The digest the registry gives `<repo>:<tag>`. */
  digestOf(repo: string, tag: string): Promise<string>;
}

/** Starts the registry; `namespace` is the repositories' first segment (their images go with the test). */
export async function signedImagesRegistry(t: TestContext, namespace: string): Promise<SignedImagesRegistry> {
  const registry = await startRegistry(t);
  // Podman pulls from the loopback registry over plain HTTP only when told so.
  const confDir = tempDir(t, 'skep-iv-conf-');
  const conf = join(confDir, 'registries.conf');
  writeFileSync(conf, `[[registry]]\nlocation = "${registry}"\ninsecure = true\n`);
  const savedConf = process.env['CONTAINERS_REGISTRIES_CONF'];
  process.env['CONTAINERS_REGISTRIES_CONF'] = conf;
  t.after(() => {
    if (savedConf === undefined) delete process.env['CONTAINERS_REGISTRIES_CONF'];
    else process.env['CONTAINERS_REGISTRIES_CONF'] = savedConf;
  });
  const image = await testImage();
  // The images this test pulled (by digest) and built go with it; the test image stays cached.
  t.after(() => {
    const ids = execFileSync('podman', ['images', '-q', '--filter', `reference=${registry}/${namespace}/*`], {
      encoding: 'utf8',
    })
      .split('\n')
      .filter((id) => id !== '');
    if (ids.length > 0) execFileSync('podman', ['rmi', '-f', ...new Set(ids)], { stdio: 'ignore' });
  });
  const push = (repo: string) => {
    const target = `${registry}/${repo}:1`;
    const file = join(confDir, `Containerfile.${repo.replace('/', '-')}`);
    writeFileSync(file, `FROM ${image}\nLABEL skep.test.repo=${repo}\n`);
    execFileSync('podman', ['build', '--pull=never', '-q', '-t', target, '-f', file, confDir], {
      stdio: 'ignore',
    });
    execFileSync('podman', ['push', '--quiet', '--tls-verify=false', target], { stdio: 'ignore' });
    // The engine must fetch it from the registry, as on a machine that never had it.
    execFileSync('podman', ['rmi', target], { stdio: 'ignore' });
    return target;
  };
  const digestOf = async (repo: string, tag: string) => {
    const res = await fetch(`http://${registry}/v2/${repo}/manifests/${tag}`, {
      method: 'HEAD',
      headers: {
        accept:
          'application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json',
      },
    });
    assert.equal(res.status, 200);
    return res.headers.get('docker-content-digest') ?? '';
  };
  return { registry, image, push, digestOf };
}
