/**
 * `skep run --image-verification <policy>` and `--image-verification-key <file>`, as real
 * `skep` processes on a temporary home. Without an engine: every wrong use is refused before
 * anything is created, naming the flag (an unknown policy, a key file that is missing, private,
 * or not P-256, a trusted root that is missing or not JSON, an identity and its regexp together,
 * `enabled` with nothing to verify against, a remote server — refused by the run
 * configuration's own check). With Podman and a local registry that needs a login (the
 * credentials in `REGISTRY_AUTH_FILE`, used by the pull and by the signature lookup alike): a
 * signed image runs under `enabled` and its run configuration carries the policy and the key;
 * an unsigned one is refused and removed; `warn` runs it and says why.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { signArtifact } from '../../../src/protocol/oci-signature.js';
import { OciSession } from '../../../src/skills/oci-client.js';
import { parseOciRef } from '../../../src/skills/oci-ref.js';
import { signatureStore } from '../../../src/skills/signing.js';
import { runCliAsync } from '../../helpers/cli.js';
import { tempHome } from '../../helpers/home.js';
import { requirePodman, startPodmanService, testImage } from '../../helpers/podman.js';
import { requireService } from '../../helpers/services.js';
import {
  REGISTRY_PASSWORD,
  REGISTRY_USER,
  startAuthRegistry,
  writeAuthFile,
} from '../runtime/auth-registry.js';
import { hasRegistry, tempDir } from '../skills/fixtures.js';
import { cleanupFirst } from './cleanup.js';

function keyPair() {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return {
    priv: privateKey,
    privPem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    pub: publicKey.export({ type: 'spki', format: 'pem' }) as string,
  };
}

test('skep run --image-verification: wrong uses are refused by name, nothing created', async (t) => {
  const home = tempHome(t, 'skep-iv-flag-');
  const env = { ...home.env, SKEP_LOG_LEVEL: 'silent' };
  const skep = (...args: string[]) => runCliAsync(args, env, 60_000);
  const dir = tempDir(t, 'skep-iv-keys-');
  const alice = keyPair();
  const pubFile = join(dir, 'cosign.pub');
  writeFileSync(pubFile, alice.pub);
  const privFile = join(dir, 'cosign.key');
  writeFileSync(privFile, alice.privPem);
  const rsaFile = join(dir, 'rsa.pub');
  writeFileSync(
    rsaFile,
    generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }),
  );
  const image = '127.0.0.1:9/acme/server:1';

  const badPolicy = await skep('run', image, '--image-verification', 'strict');
  assert.equal(badPolicy.status, 2, badPolicy.stderr);
  assert.match(
    badPolicy.stderr,
    /^error: invalid --image-verification 'strict': use warn, enabled \(or enforce\) or disabled$/m,
  );

  const missing = join(dir, 'nope.pub');
  const noFile = await skep('run', image, '--image-verification-key', missing);
  assert.equal(noFile.status, 1, noFile.stderr);
  assert.ok(
    noFile.stderr.startsWith(`error: --image-verification-key ${missing}: cannot read it: ENOENT`),
    noFile.stderr,
  );

  // A private key is refused, and its text is not echoed.
  const priv = await skep(
    'run',
    image,
    '--image-verification',
    'enabled',
    '--image-verification-key',
    privFile,
  );
  assert.equal(priv.status, 1, priv.stderr);
  assert.match(priv.stderr, /--image-verification-key .*cosign\.key is a private key: give its public key/);
  assert.ok(!priv.stderr.includes(alice.privPem.split('\n')[1] ?? '-'), 'no key material in the error');

  const rsa = await skep('run', image, '--image-verification-key', rsaFile);
  assert.equal(rsa.status, 1, rsa.stderr);
  assert.match(rsa.stderr, /rsa\.pub: an ECDSA P-256 key is needed .*, not rsa$/m);

  const keyless = await skep('run', image, '--image-verification', 'enabled');
  assert.equal(keyless.status, 2, keyless.stderr);
  assert.match(
    keyless.stderr,
    /--image-verification enabled needs something to verify against: a trusted public key \(--image-verification-key <file>\) or, for keyless signatures, a Sigstore trusted root \(--image-verification-trusted-root/,
  );

  // Keyless flags: the trusted root must be a readable JSON file; identity and its regexp exclude each other.
  const noRoot = await skep(
    'run',
    image,
    '--image-verification-trusted-root',
    join(home.dir, 'missing.json'),
  );
  assert.equal(noRoot.status, 1, noRoot.stderr);
  assert.match(noRoot.stderr, /--image-verification-trusted-root .*missing\.json: cannot read it/);
  const notJson = await skep('run', image, '--image-verification-trusted-root', pubFile);
  assert.equal(notJson.status, 1, notJson.stderr);
  assert.match(
    notJson.stderr,
    /--image-verification-trusted-root .*: not JSON \(a Sigstore trusted_root\.json is\)/,
  );
  const both = await skep(
    'run',
    image,
    '--image-verification-identity',
    'a@example.com',
    '--image-verification-identity-regexp',
    '.*',
  );
  assert.equal(both.status, 2, both.stderr);
  assert.match(
    both.stderr,
    /give --image-verification-identity or --image-verification-identity-regexp, not both/,
  );

  const contradiction = await skep(
    'run',
    image,
    '--image-verification',
    'disabled',
    '--image-verification-key',
    pubFile,
  );
  assert.equal(contradiction.status, 2, contradiction.stderr);
  assert.match(contradiction.stderr, /--image-verification disabled checks nothing/);

  // A package is not an image.
  const pkg = await skep('run', 'npx://@acme/server', '--image-verification', 'warn');
  assert.equal(pkg.status, 1, pkg.stderr);
  assert.match(pkg.stderr, /^error: --image-verification is not supported for npx:\/\/@acme\/server: /m);

  // A remote server: the run configuration's check refuses image_verification; the flag is named.
  const remote = await skep('run', 'http://127.0.0.1:9/mcp', '--image-verification', 'warn');
  assert.equal(remote.status, 1, remote.stderr);
  assert.match(
    remote.stderr,
    /^error: --image-verification is not supported for a remote server: it checks a container image's signature; remove it$/m,
  );

  const fromFile = await skep('run', '--from-config', pubFile, '--image-verification', 'warn');
  assert.equal(fromFile.status, 2, fromFile.stderr);
  assert.match(fromFile.stderr, /with --from-config, set image_verification in the file/);

  const listed = JSON.parse((await skep('list', '--all', '--json')).stdout) as { workloads: unknown[] };
  assert.deepEqual(listed.workloads, [], 'nothing was created');
});

test(
  'skep run --image-verification on a private registry: signed runs, unsigned refused, warn runs',
  { timeout: 600_000 },
  async (t) => {
    if (!requirePodman(t)) return;
    if (!requireService(t, 'docker-registry', hasRegistry(), 'apt-get install docker-registry')) return;
    const later = cleanupFirst(t);
    const home = tempHome(t, 'skep-iv-run-');
    const dir = tempDir(t, 'skep-iv-run-files-');
    const registry = await startAuthRegistry(t);
    const authFile = writeAuthFile(dir, registry);
    // Podman speaks plain HTTP to the loopback registry only when told so.
    const conf = join(dir, 'registries.conf');
    writeFileSync(conf, `[[registry]]\nlocation = "${registry}"\ninsecure = true\n`);
    // The engine pulls with the login from REGISTRY_AUTH_FILE; skep's runner reads the same file.
    const podmanEnv = { ...process.env, CONTAINERS_REGISTRIES_CONF: conf, REGISTRY_AUTH_FILE: authFile };
    const saved = {
      conf: process.env['CONTAINERS_REGISTRIES_CONF'],
      auth: process.env['REGISTRY_AUTH_FILE'],
    };
    process.env['CONTAINERS_REGISTRIES_CONF'] = conf;
    process.env['REGISTRY_AUTH_FILE'] = authFile;
    let engine;
    try {
      engine = await startPodmanService(t);
    } finally {
      for (const [key, value] of [
        ['CONTAINERS_REGISTRIES_CONF', saved.conf],
        ['REGISTRY_AUTH_FILE', saved.auth],
      ] as const)
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
    }
    later(() => engine.close());
    const env = {
      ...home.env,
      SKEP_LOG_LEVEL: 'silent',
      CONTAINERS_REGISTRIES_CONF: conf,
      REGISTRY_AUTH_FILE: authFile,
    };
    const skep = (...args: string[]) => runCliAsync(args, env, 300_000);
    later(() => skep('rm', 'ivc-signed', 'ivc-unsigned', 'ivc-warn'));
    mkdirSync(dirname(home.config.paths.configFile), { recursive: true });
    writeFileSync(home.config.paths.configFile, `runtime:\n  type: docker\n  docker_host: ${engine.host}\n`);

    const base = await testImage();
    const nonce = randomUUID();
    const push = (repo: string) => {
      const target = `${registry}/${repo}:1`;
      const file = join(dir, `Containerfile.${repo.replace('/', '-')}`);
      // Content of this run only: the engine cannot hold it from an earlier run, it must pull.
      writeFileSync(file, `FROM ${base}\nLABEL skep.test.repo=${repo} skep.test.run=${nonce}\n`);
      execFileSync('podman', ['build', '--pull=never', '-q', '-t', target, '-f', file, dir], {
        stdio: 'ignore',
        env: podmanEnv,
      });
      execFileSync('podman', ['push', '--quiet', '--tls-verify=false', target], {
        stdio: 'ignore',
        env: podmanEnv,
      });
      // The engine must fetch it from the registry, with the login.
      execFileSync('podman', ['rmi', target], { stdio: 'ignore' });
      return target;
    };
    later(() => {
      const ids = execFileSync('podman', ['images', '-q', '--filter', `reference=${registry}/test/*`], {
        encoding: 'utf8',
      })
        .split('\n')
        .filter((id) => id !== '');
      if (ids.length > 0) execFileSync('podman', ['rmi', '-f', ...new Set(ids)], { stdio: 'ignore' });
    });
    const signedRef = push('test/signed');
    const unsignedRef = push('test/unsigned');
    const alice = keyPair();
    const session = new OciSession(parseOciRef(signedRef), true, {
      privateHosts: ['127.0.0.1'],
      credentials: async () => ({ username: REGISTRY_USER, password: REGISTRY_PASSWORD }),
    });
    const signedDigest = (await session.getManifest('1')).digest;
    await signArtifact(signatureStore(session), `${registry}/test/signed`, signedDigest, alice.priv);
    const keyFile = join(dir, 'cosign.pub');
    writeFileSync(keyFile, alice.pub);
    const server = ['--', '/app/stdio-server.cjs'];

    const signed = await skep(
      'run',
      signedRef,
      '--name',
      'ivc-signed',
      '--image-verification',
      'enabled',
      '--image-verification-key',
      keyFile,
      ...server,
    );
    assert.equal(signed.status, 0, signed.stderr);
    const exported = JSON.parse((await skep('export', 'ivc-signed')).stdout) as {
      image_verification?: unknown;
    };
    assert.deepEqual(exported.image_verification, { policy: 'enforce', public_keys: [alice.pub] });
    const rows = () =>
      skep('list', '--all', '--json').then(
        (r) => (JSON.parse(r.stdout) as { workloads: { name: string; status_context?: string }[] }).workloads,
      );
    const running = (await rows()).find((w) => w.name === 'ivc-signed');
    assert.match(
      running?.status_context ?? '',
      new RegExp(`\\(${signedDigest}\\) verified: signed by sha256:`),
    );

    const unsigned = await skep(
      'run',
      unsignedRef,
      '--name',
      'ivc-unsigned',
      '--image-verification',
      'enabled',
      '--image-verification-key',
      keyFile,
      ...server,
    );
    assert.equal(unsigned.status, 1, unsigned.stderr);
    assert.match(
      unsigned.stderr,
      /^error: workload ivc-unsigned failed to start: .*is not signed .*enforce/m,
    );
    assert.deepEqual(
      (await rows()).map((w) => w.name),
      ['ivc-signed'],
      'the refused workload was removed',
    );

    // The key alone means warn: the unsigned image runs, and its status says why.
    const warned = await skep(
      'run',
      unsignedRef,
      '--name',
      'ivc-warn',
      '--image-verification-key',
      keyFile,
      ...server,
    );
    assert.equal(warned.status, 0, warned.stderr);
    assert.match((await rows()).find((w) => w.name === 'ivc-warn')?.status_context ?? '', /is not signed/);
  },
);
